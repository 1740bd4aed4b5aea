import { defineConfig } from 'vitest/config';

// Where `pnpm dev` (vite's dev server) sends API calls: the gateway of `make dev`.
const GATEWAY_URL = 'http://127.0.0.1:8080';

export default defineConfig({
  // Preact's JSX runtime, without a plugin: the automatic runtime needs only the import source.
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    // Hashed names under assets/ are what the gateway serves with a year-long cache.
    assetsDir: 'assets',
    target: 'es2022',
    // One entry chunk: the polyfill only matters for lazily loaded chunks, which there are none.
    modulePreload: { polyfill: false },
  },
  server: {
    proxy: { '/v1': GATEWAY_URL, '/readyz': GATEWAY_URL },
  },
  test: {
    include: ['src/**/*.test.ts'],
  },
});

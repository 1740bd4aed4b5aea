import { defineConfig } from 'vitest/config';

// Every file boots its own embedded Postgres (WebAssembly initdb takes several seconds on a
// 2-core machine), so hooks and the restart test need more than vitest's defaults.
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});

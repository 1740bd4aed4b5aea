import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Plugin } from 'vite';
import { defineConfig } from 'vitest/config';

// Where `pnpm dev` (vite's dev server) sends API calls: the gateway of `make dev`.
const GATEWAY_URL = 'http://127.0.0.1:8080';
// The service worker's entry (its chunk is named after this key) and the file it becomes.
const SW_ENTRY = 'sw';
const SW_FILE = 'sw.js';

// Writes the build's hashed files into sw.js (for __SHELL_ASSETS__ and __SHELL_VERSION__ in
// src/sw.ts), so the worker caches exactly this build's shell at install and a new build
// changes sw.js's bytes, which is how the browser learns of a deploy. vite-plugin-pwa does this
// and more (Workbox), for some 30 KB of worker and a dependency tree; two names are all we need.
function precacheShell(): Plugin {
  return {
    name: 'jarvis-precache-shell',
    apply: 'build',
    generateBundle(_options, bundle) {
      const worker = bundle[SW_FILE];
      if (!worker || worker.type !== 'chunk') {
        this.error(`the build made no ${SW_FILE}`);
        return;
      }
      if (worker.imports.length > 0) {
        // A chunk shared with the app would make sw.js a module worker that imports it.
        this.error(`${SW_FILE} imports ${worker.imports.join(', ')}: keep src/sw*.ts apart`);
      }
      const assets = Object.keys(bundle)
        .filter((name) => name.startsWith('assets/') && !name.endsWith('.map'))
        .sort()
        .map((name) => `/${name}`);
      const version = createHash('sha256').update(assets.join('\n')).digest('hex').slice(0, 12);
      worker.code = worker.code
        .replaceAll('__SHELL_ASSETS__', JSON.stringify(assets))
        .replaceAll('__SHELL_VERSION__', JSON.stringify(version));
    },
  };
}

export default defineConfig({
  // Preact's JSX runtime, without a plugin: the automatic runtime needs only the import source.
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  plugins: [precacheShell()],
  build: {
    outDir: 'dist',
    // Hashed names under assets/ are what the gateway serves with a year-long cache.
    assetsDir: 'assets',
    target: 'es2022',
    // No preload polyfill: it only matters for what a lazily loaded chunk imports, and the one
    // such chunk (the Markdown renderer, src/markdown-render.ts) imports nothing.
    modulePreload: { polyfill: false },
    rolldownOptions: {
      input: {
        index: fileURLToPath(new URL('index.html', import.meta.url)),
        // Its own entry, written to the root (not assets/): a service worker's scope is the
        // folder of its script, and it must cover every path of the app.
        [SW_ENTRY]: fileURLToPath(new URL('src/sw.ts', import.meta.url)),
      },
      output: {
        entryFileNames: (chunk) => (chunk.name === SW_ENTRY ? SW_FILE : 'assets/[name]-[hash].js'),
      },
    },
  },
  server: {
    proxy: { '/v1': GATEWAY_URL, '/readyz': GATEWAY_URL },
  },
  test: {
    include: ['src/**/*.test.ts'],
  },
});

import { defineConfig } from 'tsup';

// Workspace packages are bundled in (they ship TypeScript source). Every npm package stays
// external, including those only workspace packages depend on (pino, prom-client, ...): bundled
// into ESM their CommonJS `require`s break. The image installs them with `pnpm deploy`.
// The document reader's worker is an entry of its own: a worker thread starts from a file, which
// must sit beside main.js as dist/extract-worker.js (src/documents/extract.ts looks for it there).
export default defineConfig({
  entry: { main: 'src/main.ts', 'extract-worker': 'src/documents/extract-worker.ts' },
  format: ['esm'],
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  clean: true,
  noExternal: [/^@jarvis\//],
  external: [/^(?!@jarvis\/)[^./]/],
});

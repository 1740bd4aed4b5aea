import { defineConfig } from 'tsup';

// Workspace packages are bundled in (they ship TypeScript source); npm dependencies stay
// external and are installed in the image by `pnpm deploy`.
export default defineConfig({
  entry: ['src/main.ts'],
  format: ['esm'],
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  clean: true,
  noExternal: [/^@jarvis\//],
});

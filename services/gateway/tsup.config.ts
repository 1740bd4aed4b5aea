import { defineConfig } from 'tsup';

// Workspace packages are bundled in (they ship TypeScript source). Every npm package stays
// external, including those only workspace packages depend on (pino, prom-client, ...): bundled
// into ESM their CommonJS `require`s break. The image installs them with `pnpm deploy`.
export default defineConfig({
  entry: ['src/main.ts', 'src/create-key.ts', 'src/backup-cli.ts'],
  format: ['esm'],
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  clean: true,
  noExternal: [/^@jarvis\//],
  external: [/^(?!@jarvis\/)[^./]/],
});

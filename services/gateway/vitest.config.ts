import { configDefaults, defineConfig } from 'vitest/config';

// The embedded Postgres takes a few seconds to boot in beforeAll; tests themselves are quick.
// web/ is a package of its own (the web UI), with its own tests.
export default defineConfig({
  test: {
    testTimeout: 15_000,
    hookTimeout: 60_000,
    exclude: [...configDefaults.exclude, 'web/**'],
  },
});

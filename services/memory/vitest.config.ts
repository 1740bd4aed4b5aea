import { defineConfig } from 'vitest/config';

// The embedded Postgres takes a few seconds to boot in beforeAll; tests themselves are quick.
export default defineConfig({
  test: {
    testTimeout: 15_000,
    hookTimeout: 60_000,
  },
});

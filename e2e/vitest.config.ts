import { defineConfig } from 'vitest/config';

// Each file starts the whole stack as separate processes: one file at a time keeps a 2-core
// machine from timing out.
export default defineConfig({
  test: {
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});

import { defineConfig } from 'vitest/config';

// The timeout case waits out a 1 s model timeout twice (the SDK retries once) plus its backoff.
export default defineConfig({
  test: {
    testTimeout: 15_000,
    hookTimeout: 30_000,
  },
});

import { defineConfig } from 'vitest/config';

// The work-queue tests wait out real JetStream ack waits and back-offs (a few seconds each);
// vitest's 5 s default leaves too little room on a loaded 2-core CI machine.
export default defineConfig({
  test: {
    testTimeout: 15_000,
    hookTimeout: 15_000,
  },
});

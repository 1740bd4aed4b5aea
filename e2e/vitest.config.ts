import { defineConfig } from 'vitest/config';

// Each file starts the whole stack as separate processes: one file at a time keeps a 2-core
// machine from timing out.
export default defineConfig({
  test: {
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // What a page or a service worker does in a few hundred ms on a quiet machine took over the
    // default second under load (a push notification shown after 1.1 s failed a CI run): a
    // poll that succeeds returns at once, so only a failure waits the longer time.
    expect: { poll: { timeout: 10_000 } },
    // The services run from their bundles (dist/main.js, as in their images) where those are
    // newer than their sources, and start on a third less CPU than under tsx; turbo builds them
    // before this package's tests (turbo.json), and an edit not built yet runs from source.
    // JARVIS_STACK_RUN_FROM=source runs them from source regardless.
    env: { JARVIS_STACK_RUN_FROM: process.env.JARVIS_STACK_RUN_FROM ?? 'build' },
  },
});

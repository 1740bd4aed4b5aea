import type { Metrics } from '@jarvis/telemetry';
import { exponentialBuckets, Histogram } from 'prom-client';

// The gateway's own steps around a chat call: budget admission and the provider cooldown check
// (side by side, before the provider call), and usage recording (after the reply, batched).
type Stage = 'budget_admission' | 'cooldown_check' | 'usage_recording';

export type CallMetrics = {
  // A chat request's time in the gateway less its waits on providers: what the gateway adds to
  // a model call.
  recordOverhead(seconds: number): void;
  // Times one step from its start until the call's code resumes after it, so a wait for a busy
  // event loop counts, as it does for the caller.
  timeStage<T>(stage: Stage, step: () => Promise<T>): Promise<T>;
};

// 100 µs to 2.3 s, each bucket a quarter wider than the last: the gateway's steps take a
// fraction of a millisecond, and a percentile read from coarser buckets (the default ones start
// at 5 ms) could not tell them apart, while a saturated gateway queues calls for a second.
const BUCKETS = exponentialBuckets(0.000_1, 1.25, 46);

export function createCallMetrics(metrics: Metrics): CallMetrics {
  const overhead = new Histogram({
    name: 'model_gateway_call_overhead_seconds',
    help: 'Time model-gateway spent on a model-gateway.chat request, less its waits on providers (their calls and the pauses between retries)',
    buckets: BUCKETS,
    registers: [metrics.registry],
  });
  const stages = new Histogram({
    name: 'model_gateway_stage_seconds',
    help: "Duration of model-gateway's own steps of a chat request: budget admission, cooldown check, usage recording",
    labelNames: ['stage'],
    buckets: BUCKETS,
    registers: [metrics.registry],
  });
  return {
    recordOverhead(seconds) {
      overhead.observe(seconds);
    },
    async timeStage(stage, step) {
      const started = performance.now();
      try {
        return await step();
      } finally {
        stages.observe({ stage }, (performance.now() - started) / 1_000);
      }
    },
  };
}

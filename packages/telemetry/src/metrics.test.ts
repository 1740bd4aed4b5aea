import { describe, expect, it } from 'vitest';
import { createMetrics } from './metrics';

describe('createMetrics', () => {
  it("exposes prom-client's process and runtime metrics, labelled with the service", async () => {
    const { registry } = createMetrics('metrics-test');
    const text = await registry.metrics();
    for (const name of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'process_start_time_seconds',
      'nodejs_heap_size_used_bytes',
      'nodejs_version_info',
      'nodejs_gc_duration_seconds',
    ]) {
      expect(text).toContain(name);
    }
    expect(text).toMatch(/^process_cpu_seconds_total\{service="metrics-test"\} \d/m);
  });

  // Its histogram's timer is what an idle service spent most of its CPU on.
  it("leaves out the event loop's lag", async () => {
    const { registry } = createMetrics('metrics-test');
    expect(await registry.metrics()).not.toContain('nodejs_eventloop_lag');
  });
});

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
  it("leaves out prom-client's event loop histogram", async () => {
    const { registry } = createMetrics('metrics-test');
    const text = await registry.metrics();
    expect(text).not.toContain('nodejs_eventloop_lag_p99_seconds');
    expect(text).not.toContain('nodejs_eventloop_lag_mean_seconds');
  });

  it("measures the event loop's lag when scraped: a loop blocked meanwhile shows", async () => {
    const { registry } = createMetrics('metrics-test');
    const scraped = registry.metrics();
    const blockedUntil = Date.now() + 120;
    while (Date.now() < blockedUntil) {
      // Keeps the loop from running the callback the scrape queued.
    }
    const text = await scraped;
    const lag = Number(
      /^nodejs_eventloop_lag_seconds\{service="metrics-test"\} (\S+)$/m.exec(text)?.[1],
    );
    expect(lag).toBeGreaterThanOrEqual(0.1);
    expect(lag).toBeLessThan(10);
  });

  it('speaks OpenMetrics, the format that carries exemplars', async () => {
    const { registry } = createMetrics('metrics-test');
    expect(registry.contentType).toContain('application/openmetrics-text');
    expect(await registry.metrics()).toMatch(/# EOF\n$/);
  });
});

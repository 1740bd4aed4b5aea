/// <reference path="./prom-client-metrics.d.ts" />
import { Gauge, type OpenMetricsContentType, Registry } from 'prom-client';
import collectGc from 'prom-client/lib/metrics/gc.js';
import collectHeapSizeAndUsed from 'prom-client/lib/metrics/heapSizeAndUsed.js';
import collectHeapSpacesSizeAndUsed from 'prom-client/lib/metrics/heapSpacesSizeAndUsed.js';
import collectOsMemoryHeap from 'prom-client/lib/metrics/osMemoryHeap.js';
import collectProcessCpuTotal from 'prom-client/lib/metrics/processCpuTotal.js';
import collectProcessHandles from 'prom-client/lib/metrics/processHandles.js';
import collectProcessMaxFileDescriptors from 'prom-client/lib/metrics/processMaxFileDescriptors.js';
import collectProcessOpenFileDescriptors from 'prom-client/lib/metrics/processOpenFileDescriptors.js';
import collectProcessRequests from 'prom-client/lib/metrics/processRequests.js';
import collectProcessResources from 'prom-client/lib/metrics/processResources.js';
import collectProcessStartTime from 'prom-client/lib/metrics/processStartTime.js';
import collectVersion from 'prom-client/lib/metrics/version.js';

export type Metrics = { registry: Registry<OpenMetricsContentType> };

// The metric types, for services and packages to declare theirs on a Metrics registry without
// each depending on prom-client.
export { Counter, Gauge, Histogram } from 'prom-client';

// prom-client's default metrics (collectDefaultMetrics) less the event loop's lag. Its lag
// histogram (perf_hooks.monitorEventLoopDelay) samples on a timer that wakes the process every
// 10 ms whatever it is doing: an idle service spent more CPU on it than on all its own work, and
// a coarser timer stays costly (each wake-up of a sleeping process is dear) while catching fewer
// stalls. collectDefaultMetrics cannot leave it out, so the other collectors are called here one
// by one; those prom-client adds in a later version have to be added here. The loop's load still
// shows in process_cpu_seconds_total, the process having one thread of JavaScript, and in
// nodejs_eventloop_lag_seconds, which is measured only when scraped (below).
const COLLECTORS = [
  collectProcessCpuTotal,
  collectProcessStartTime,
  collectOsMemoryHeap,
  collectProcessOpenFileDescriptors,
  collectProcessMaxFileDescriptors,
  collectProcessResources,
  collectProcessHandles,
  collectProcessRequests,
  collectHeapSizeAndUsed,
  collectHeapSpacesSizeAndUsed,
  collectVersion,
  collectGc,
];

// OpenMetrics rather than Prometheus' older text format: only it carries exemplars (a histogram
// bucket's trace_id, which Grafana links to the trace), and Prometheus scrapes either.
export function createMetrics(service: string): Metrics {
  const registry = new Registry<OpenMetricsContentType>();
  registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  registry.setDefaultLabels({ service });
  // No prefix and no labels of their own: the registry's default label names the service.
  for (const collect of COLLECTORS) collect(registry, {});
  registerEventLoopLag(registry);
  return { registry };
}

// The event loop's lag, measured at each scrape and only then: how long a callback queued now
// (setImmediate) waits for its turn. No timer samples it in between, so an idle service does not
// wake up for it (see above); a stall between two scrapes shows only if it is still going on.
function registerEventLoopLag(registry: Registry<OpenMetricsContentType>): void {
  new Gauge({
    name: 'nodejs_eventloop_lag_seconds',
    help: 'Delay of a callback queued at scrape time before the event loop ran it.',
    registers: [registry],
    async collect() {
      const queuedAt = process.hrtime.bigint();
      await new Promise<void>((resolve) => setImmediate(resolve));
      this.set(Number(process.hrtime.bigint() - queuedAt) / 1e9);
    },
  });
}

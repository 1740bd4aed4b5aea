import type { ManagedProcess } from '@jarvis/testkit';
import { scrape } from '../model-gateway/prometheus';
import { readCpuSeconds } from '../proc';

// A service process' CPU time, two ways. /proc counts in ticks of 10 ms, too coarse for the
// tens of milliseconds an idle scheduler spends in two minutes; its /metrics'
// process_cpu_seconds_total comes from process.cpuUsage(), in microseconds, but reading it costs
// the process a scrape, which `cpuBetween` takes out again.

export type CpuReading = { metrics: number; proc: number };

async function scrapeCpuSeconds(metricsUrl: string): Promise<number> {
  const sample = (await scrape(metricsUrl)).find(
    ({ name }) => name === 'process_cpu_seconds_total',
  );
  if (!sample) throw new Error(`no process_cpu_seconds_total at ${metricsUrl}`);
  return sample.value;
}

export async function readProcessCpu(
  managed: ManagedProcess,
  metricsUrl: string,
): Promise<CpuReading> {
  const metrics = await scrapeCpuSeconds(metricsUrl);
  const proc = (await readCpuSeconds({ service: managed.child.pid }, [])).service ?? Number.NaN;
  return { metrics, proc };
}

// CPU seconds between two readings. A third scrape right after the second tells what one
// scrape costs the process: about what the scrapes inside the window (the end of the first's,
// the start of the second's; the whole second for /proc, read after it) added.
export async function cpuBetween(
  managed: ManagedProcess,
  metricsUrl: string,
  from: CpuReading,
): Promise<{ metrics: number; proc: number; scrape: number }> {
  const to = await readProcessCpu(managed, metricsUrl);
  const scrape = (await scrapeCpuSeconds(metricsUrl)) - to.metrics;
  return {
    metrics: to.metrics - from.metrics - scrape,
    proc: to.proc - from.proc - scrape,
    scrape,
  };
}

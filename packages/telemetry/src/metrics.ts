import { collectDefaultMetrics, Registry } from 'prom-client';

export type Metrics = { registry: Registry };

export function createMetrics(service: string): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return { registry };
}

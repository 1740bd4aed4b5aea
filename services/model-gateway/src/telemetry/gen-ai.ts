import type { Metrics } from '@jarvis/telemetry';
import { Histogram } from 'prom-client';

type GenAiOperation = 'chat' | 'embeddings';

export type GenAiMetrics = {
  record(
    labels: { operation: GenAiOperation; provider: string; model: string; error?: string },
    seconds: number,
    usage?: { inputTokens: number; outputTokens: number },
  ): void;
};

// gen_ai.client.token.usage and gen_ai.client.operation.duration, in Prometheus' spelling
// (dots become underscores, the unit is a suffix), with the spec's bucket boundaries.
export function createGenAiMetrics(metrics: Metrics): GenAiMetrics {
  const tokenUsage = new Histogram({
    name: 'gen_ai_client_token_usage',
    help: 'Tokens used per model call (gen_ai.client.token.usage)',
    labelNames: [
      'gen_ai_operation_name',
      'gen_ai_provider_name',
      'gen_ai_request_model',
      'gen_ai_token_type',
    ],
    buckets: [1, 4, 16, 64, 256, 1_024, 4_096, 16_384, 65_536, 262_144, 1_048_576, 4_194_304],
    registers: [metrics.registry],
  });
  const duration = new Histogram({
    name: 'gen_ai_client_operation_duration_seconds',
    help: 'Duration of model calls (gen_ai.client.operation.duration)',
    labelNames: [
      'gen_ai_operation_name',
      'gen_ai_provider_name',
      'gen_ai_request_model',
      'error_type',
    ],
    buckets: [
      0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
    ],
    registers: [metrics.registry],
  });
  return {
    record(labels, seconds, usage) {
      const base = {
        gen_ai_operation_name: labels.operation,
        gen_ai_provider_name: labels.provider,
        gen_ai_request_model: labels.model,
      };
      duration.observe({ ...base, error_type: labels.error ?? '' }, seconds);
      if (!usage) return;
      tokenUsage.observe({ ...base, gen_ai_token_type: 'input' }, usage.inputTokens);
      tokenUsage.observe({ ...base, gen_ai_token_type: 'output' }, usage.outputTokens);
    },
  };
}

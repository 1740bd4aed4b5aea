import { createHash } from 'node:crypto';
import { BusError } from '@jarvis/bus';
import type { ModelEmbedRequest, ModelEmbedResponse } from '@jarvis/contracts';
import { GEN_AI, SpanKind, withSpan } from '@jarvis/telemetry';
import type { Redis } from 'ioredis';
import { costOf, type ModelTarget } from '../config/model-config';
import type { Provider } from '../providers/provider';
import { ProviderError } from '../providers/provider-error';
import { createRedactor } from '../redaction/redactor';
import type { RouterDeps } from './chat-router';
import { withRetries } from './retry';

export type EmbedDeps = Omit<RouterDeps, 'routes'> & {
  // The embed route: real models only, so it may be empty.
  route: ModelTarget[];
  redis: Redis;
  namespace: string;
  cacheTtlSeconds: number;
};

type Request = ModelEmbedRequest & { texts: string[] };

// Texts per provider call: large enough to amortise the round trip, small enough for Ollama.
const BATCH = 64;
// Characters of a text a model is given, from its context window (about 3 characters a token).
const CHARS_PER_TOKEN = 3;

// Vectors for a batch of texts from the first embed model that answers. All vectors of one
// reply come from one model, which the reply names, since vectors of two models do not compare.
export async function routeEmbed(deps: EmbedDeps, request: Request): Promise<ModelEmbedResponse> {
  // Before admission: a caller without a model learns it without a count against its user.
  if (deps.route.length === 0) {
    throw new BusError(
      'unavailable',
      'no embed model has credentials here (see MODEL_ROUTE_EMBED)',
    );
  }
  await deps.meter.admit(request.userId, 'embed');
  const route = request.model
    ? deps.route.filter((target) => target.ref === request.model)
    : deps.route;
  if (route.length === 0) {
    const known = deps.route.map((target) => target.ref).join(', ');
    throw new BusError('bad_request', `${request.model} is not an embed model here (${known})`);
  }
  const cooling = await deps.cooldown.open([...new Set(route.map((target) => target.provider))]);
  const deadline = Date.now() + deps.settings.deadlineMs;
  const signal = new AbortController().signal;
  const failures: string[] = [];
  for (const target of route) {
    const provider = deps.providers.get(target.provider);
    if (!provider?.embed) continue;
    if (cooling.has(target.provider)) {
      failures.push(`${target.ref}: cooling down`);
      continue;
    }
    try {
      const result = await embedWith(deps, provider, target, request.texts, { deadline, signal });
      deps.cooldown.recordSuccess(target.provider);
      // Not awaited: the answer need not wait for the accounting (see UsageMeter.record).
      void deps.meter.record({
        id: crypto.randomUUID(),
        ...(request.userId ? { userId: request.userId } : {}),
        provider: target.provider,
        model: target.model,
        purpose: 'embed',
        inputTokens: result.inputTokens,
        outputTokens: 0,
        costUsd: costOf(target.info, result.inputTokens, 0),
        at: new Date().toISOString(),
      });
      return {
        provider: target.provider,
        model: target.ref,
        dimensions: result.vectors[0]?.length ?? 0,
        ...result,
      };
    } catch (error) {
      if (!(error instanceof ProviderError)) throw error;
      failures.push(`${target.ref}: ${error.kind}`);
      if (error.kind === 'auth') await deps.cooldown.trip(target.provider);
      else if (error.countsAgainstProvider) await deps.cooldown.recordFailure(target.provider);
      deps.logger.warn(
        { provider: target.provider, model: target.model, kind: error.kind },
        'embedding failed',
      );
    }
  }
  throw new BusError('unavailable', `no embed model could answer (${failures.join('; ')})`);
}

async function embedWith(
  deps: EmbedDeps,
  provider: Provider,
  target: ModelTarget,
  texts: string[],
  scope: { deadline: number; signal: AbortSignal },
): Promise<{ vectors: number[][]; inputTokens: number; cached: number }> {
  const embed = provider.embed;
  if (!embed) throw new ProviderError('not_found', `${provider.name} has no embed models`);
  const keys = texts.map((text) => cacheKey(deps.namespace, target.ref, text));
  const hits = await deps.redis.mgetBuffer(...keys);
  const vectors: (number[] | undefined)[] = hits.map((hit) => (hit ? fromBuffer(hit) : undefined));
  const missing = vectors.flatMap((vector, index) => (vector ? [] : [index]));
  let inputTokens = 0;
  const limit = target.info.contextWindow * CHARS_PER_TOKEN;
  // Hosted providers get redacted text; the vector of a placeholder is as good for search.
  const prepare = (text: string) => {
    const cut = text.slice(0, limit);
    return provider.hosted && deps.settings.redaction ? createRedactor().redact(cut) : cut;
  };
  for (let start = 0; start < missing.length; start += BATCH) {
    const indexes = missing.slice(start, start + BATCH);
    const batch = indexes.map((index) => prepare(texts[index] ?? ''));
    const started = performance.now();
    const result = await withSpan(
      `embeddings ${target.model}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          [GEN_AI.operation]: 'embeddings',
          [GEN_AI.provider]: target.provider,
          [GEN_AI.requestModel]: target.model,
        },
      },
      async (span) => {
        const answer = await withRetries(
          deps.settings,
          { ...scope, canRetry: () => true },
          (timeoutMs) =>
            embed({ model: target.model, texts: batch, timeoutMs, signal: scope.signal }),
        );
        span.setAttributes({
          [GEN_AI.responseModel]: target.model,
          [GEN_AI.inputTokens]: answer.inputTokens,
        });
        return answer;
      },
    );
    deps.metrics.record(
      { operation: 'embeddings', provider: target.provider, model: target.model },
      (performance.now() - started) / 1_000,
      { inputTokens: result.inputTokens, outputTokens: 0 },
    );
    if (result.vectors.length !== batch.length) {
      throw new ProviderError(
        'server',
        `${target.ref} returned ${result.vectors.length} vectors for ${batch.length} texts`,
      );
    }
    inputTokens += result.inputTokens;
    for (const [offset, index] of indexes.entries()) vectors[index] = result.vectors[offset];
  }
  if (missing.length > 0 && deps.cacheTtlSeconds > 0) {
    const pipeline = deps.redis.pipeline();
    for (const index of missing) {
      const vector = vectors[index];
      const key = keys[index];
      if (vector && key) pipeline.set(key, toBuffer(vector), 'EX', deps.cacheTtlSeconds);
    }
    await pipeline.exec();
  }
  return {
    vectors: vectors.map((vector) => vector ?? []),
    inputTokens,
    cached: texts.length - missing.length,
  };
}

function cacheKey(namespace: string, ref: string, text: string): string {
  const hash = createHash('sha256').update(text).digest('base64url');
  return `${namespace}:model-gateway:embedding:${ref}:${hash}`;
}

// Float32, as the vector indexes store them: half the size of JSON numbers.
function toBuffer(vector: number[]): Buffer {
  return Buffer.from(new Float32Array(vector).buffer);
}

function fromBuffer(buffer: Buffer): number[] {
  // Copied first: a Buffer may sit at an offset of a shared pool that Float32Array cannot view.
  return Array.from(new Float32Array(new Uint8Array(buffer).buffer));
}

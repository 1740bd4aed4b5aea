import type { Bus } from '@jarvis/bus';
import { type ModelRouteChanged, modelRouteChanged } from '@jarvis/contracts';
import type { Logger, Metrics } from '@jarvis/telemetry';
import type { Redis } from 'ioredis';
import { loadModelConfig, type ModelConfig } from '../config/model-config';
import type { Env } from '../env';
import { createProviders } from '../providers/registry';
import { createCallMetrics } from '../telemetry/call-metrics';
import { createGenAiMetrics } from '../telemetry/gen-ai';
import type { UsageMeter } from '../usage/usage-meter';
import type { RouterDeps } from './chat-router';
import { createCooldown } from './cooldown';
import type { EmbedDeps } from './embed-router';

export type Routing = { chat: RouterDeps; embed: EmbedDeps; config: ModelConfig };

// Everything a chat or embed request needs, from the environment; main.ts and the tests build
// the gateway the same way.
export function createRouting(
  env: Env,
  // The model call metrics go on `metrics`' registry, which takes them once (prom-client
  // refuses a name it has).
  deps: { bus: Bus; redis: Redis; meter: UsageMeter; metrics: Metrics; logger: Logger },
): Routing {
  const providers = createProviders(env);
  const config = loadModelConfig(env, (provider) => providers.has(provider));
  const cooldown = createCooldown(
    deps.redis,
    deps.bus.namespace,
    {
      failures: env.MODEL_COOLDOWN_FAILURES,
      windowMs: env.MODEL_COOLDOWN_WINDOW_MS,
      cooldownMs: env.MODEL_COOLDOWN_MS,
    },
    deps.logger,
    (provider, until) =>
      publishRouteChanged(deps.bus, {
        reason: 'cooldown',
        provider,
        coolingDownUntil: until.toISOString(),
      }),
  );
  const chat: RouterDeps = {
    providers,
    routes: config.routes,
    cooldown,
    meter: deps.meter,
    metrics: createGenAiMetrics(deps.metrics),
    callMetrics: createCallMetrics(deps.metrics),
    logger: deps.logger,
    settings: {
      timeoutMs: env.MODEL_TIMEOUT_MS,
      deadlineMs: env.MODEL_DEADLINE_MS,
      retries: env.MODEL_RETRIES,
      retryBaseMs: env.MODEL_RETRY_BASE_MS,
      retryMaxWaitMs: env.MODEL_RETRY_MAX_WAIT_MS,
      redaction: env.MODEL_REDACTION === 'on',
      recordContent: env.MODEL_TELEMETRY_CONTENT === 'on',
    },
  };
  const embed: EmbedDeps = {
    ...chat,
    route: config.routes.embed,
    redis: deps.redis,
    namespace: deps.bus.namespace,
    cacheTtlSeconds: env.EMBED_CACHE_TTL_SECONDS,
  };
  return { chat, embed, config };
}

// Tells the callers that keep a route (the orchestrator) to read it again. Lost when NATS is
// down, which they allow for (see the event's contract); the call that opened a cooldown goes on
// either way.
export function publishRouteChanged(bus: Bus, change: ModelRouteChanged): void {
  try {
    bus.publish(modelRouteChanged.subject, modelRouteChanged.payload, change);
  } catch (error) {
    bus.logger.warn({ err: error, change }, 'could not announce a route change');
  }
}

import { Bus } from '@jarvis/bus';
import { createPool, migrate } from '@jarvis/db';
import { loadEnv } from '@jarvis/model-gateway/src/env';
import { registerHandlers } from '@jarvis/model-gateway/src/handlers';
import type { Provider } from '@jarvis/model-gateway/src/providers/provider';
import { createRedis } from '@jarvis/model-gateway/src/redis-client';
import { createRouting } from '@jarvis/model-gateway/src/routing/create-routing';
import { createGenAiMetrics } from '@jarvis/model-gateway/src/telemetry/gen-ai';
import { usageLimitsFrom } from '@jarvis/model-gateway/src/usage/usage-env';
import { createUsageMeter, type UsageMeter } from '@jarvis/model-gateway/src/usage/usage-meter';
import { startUsageRollup } from '@jarvis/model-gateway/src/usage/usage-rollup';
import { createLogger, createMetrics, startTelemetry } from '@jarvis/telemetry';
import {
  cpuReport,
  findMarker,
  GatewayCommand,
  type ProviderTiming,
  reportReady,
  type StageTimings,
  serveCommands,
} from './ipc';

// The one bench that builds a deployable from its modules rather than running its main.ts (see
// bench/README.md): the gateway's own overhead is the round trip less the provider's time, and
// only stopwatches inside the gateway can take that per request; the real process has none.
//
// The gateway for overhead.ts, in a process of its own, built as main.ts builds it: the
// same env parsing, telemetry (a real tracer provider, no exporter), Redis and NATS clients,
// usage meter with the default budgets, the usage rollup into Postgres (it runs on the same
// event loop as the calls, so its cost is theirs), routing and handlers. Left out: the usage
// queries (no one asks) and the health/metrics HTTP server.
// One addition: stopwatches. Each provider call is timed with its request's marker, so the bench
// can subtract the provider's own time from the round trip of the same request; budget
// admission, the cooldown check and usage recording are timed too, to show where the rest goes.

const SERVICE = 'model-gateway';

const env = loadEnv();
const telemetry = startTelemetry({
  serviceName: SERVICE,
  otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
});
const logger = createLogger(SERVICE, env.LOG_LEVEL);
const pool = createPool({ url: env.DATABASE_URL, applicationName: SERVICE });
await migrate(pool, {
  schema: 'model_gateway',
  directory: new URL('../../../services/model-gateway/migrations', import.meta.url),
});
const redis = createRedis(env.REDIS_URL);
await redis.connect();
const bus = await Bus.connect({
  url: env.NATS_URL,
  namespace: env.NATS_NAMESPACE,
  name: SERVICE,
  logger,
});
const rollup = await startUsageRollup({ bus, pool, logger });
const stages: StageTimings = { admit: [], cooldown: [], record: [] };
const usageMeter = createUsageMeter({ redis, bus, limits: usageLimitsFrom(env), logger });
const meter: UsageMeter = {
  ...usageMeter,
  admit: timed(usageMeter.admit, stages.admit),
  record: timed(usageMeter.record, stages.record),
};
const routing = createRouting(env, {
  bus,
  redis,
  meter,
  metrics: createGenAiMetrics(createMetrics(SERVICE)),
  logger,
});
const cooldown = routing.chat.cooldown;
routing.chat.cooldown = { ...cooldown, open: timed(cooldown.open, stages.cooldown) };
const timings: ProviderTiming[] = [];
timeChatCalls(routing.chat.providers, 'openai', timings);
const subscriptions = registerHandlers(bus, routing);
await bus.nc.flush();

serveCommands(
  GatewayCommand,
  (command) => {
    if (command.type === 'cpu') return cpuReport();
    return {
      type: 'timings',
      timings: timings.splice(0),
      stages: {
        admit: stages.admit.splice(0),
        cooldown: stages.cooldown.splice(0),
        record: stages.record.splice(0),
      },
    };
  },
  async () => {
    for (const subscription of subscriptions) subscription.unsubscribe();
    await rollup.stop();
    await meter.stop();
    await bus.close();
    await pool.end();
    redis.disconnect();
    await telemetry.stop();
  },
);
reportReady({ type: 'ready' });

function timed<A extends unknown[], R>(
  step: (...args: A) => Promise<R>,
  into: number[],
): (...args: A) => Promise<R> {
  return async (...args) => {
    const started = performance.now();
    try {
      return await step(...args);
    } finally {
      into.push(performance.now() - started);
    }
  };
}

// Wraps the provider's chat call (the HTTP request to the fake and the parsing of its answer)
// with a stopwatch; the cost of the wrapper itself is a regex and an array push.
function timeChatCalls(
  providers: Map<string, Provider>,
  name: string,
  into: ProviderTiming[],
): void {
  const provider = providers.get(name);
  const chat = provider?.chat;
  if (!provider || !chat) throw new Error(`no ${name} chat provider: is OPENAI_BASE_URL set?`);
  providers.set(name, {
    ...provider,
    async chat(call) {
      const last = call.messages.findLast((message) => message.role === 'user');
      const marker = last ? findMarker(last.content) : undefined;
      const started = performance.now();
      let firstDeltaMs: number | null = null;
      const onDelta = call.onDelta;
      const watched = onDelta
        ? {
            ...call,
            onDelta(text: string) {
              firstDeltaMs ??= performance.now() - started;
              onDelta(text);
            },
          }
        : call;
      const result = await chat(watched);
      const providerMs = performance.now() - started;
      if (marker) into.push({ marker, providerMs, firstDeltaMs });
      return result;
    },
  });
}

import { bootService } from '@jarvis/service-kit';
import { loadEnv } from './env';
import { registerHandlers } from './handlers';
import { createRedis } from './redis-client';
import { registerRouteHandlers } from './route-handlers';
import { createRouting } from './routing/create-routing';
import { usageLimitsFrom } from './usage/usage-env';
import { registerUsageHandlers } from './usage/usage-handlers';
import { createUsageMeter } from './usage/usage-meter';
import { startUsageRollup } from './usage/usage-rollup';

const env = loadEnv();

await bootService(
  {
    name: 'model-gateway',
    env,
    port: env.HTTP_PORT,
    database: {
      env,
      schema: 'model_gateway',
      migrations: new URL('../migrations', import.meta.url),
    },
    redis: { url: env.REDIS_URL, create: createRedis },
  },
  async ({ bus, pool, redis, logger, metrics }) => {
    const limits = usageLimitsFrom(env);
    // The rollup creates the usage stream, which the meter publishes to.
    const rollup = await startUsageRollup({ bus, pool, logger });
    const meter = createUsageMeter({ redis, bus, limits, logger });
    const routing = createRouting(env, {
      bus,
      redis,
      meter,
      metrics,
      logger,
    });
    for (const purpose of ['chat', 'utility', 'embed'] as const) {
      const route = purpose === 'embed' ? routing.embed.route : routing.chat.routes[purpose];
      logger.info({ purpose, models: route.map((target) => target.ref) }, 'model route');
    }
    if (routing.config.unpriced.length > 0) {
      logger.warn(
        { models: routing.config.unpriced },
        'no price in the model config: counted as free',
      );
    }
    registerHandlers(bus, routing);
    registerRouteHandlers(bus, routing);
    registerUsageHandlers(bus, { pool, redis, limits });

    // The rollup and the meter flush what they hold over the bus, the pool and Redis.
    return {
      stop: async () => {
        await rollup.stop();
        await meter.stop();
      },
    };
  },
);

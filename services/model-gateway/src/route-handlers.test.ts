import type { Bus } from '@jarvis/bus';
import { connectTestBus, sendRaw } from '@jarvis/bus/testing';
import { type ModelRouteChanged, modelRoute, modelRouteChanged } from '@jarvis/contracts';
import { createLogger, createMetrics } from '@jarvis/telemetry';
import { connectTestRedis, uniqueNamespace, waitFor } from '@jarvis/testkit';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadEnv } from './env';
import { registerRouteHandlers } from './route-handlers';
import { createRouting, type Routing } from './routing/create-routing';
import { usageLimitsFrom } from './usage/usage-env';
import { createUsageMeter } from './usage/usage-meter';

const logger = createLogger('model-gateway-test', 'silent');

type Gateway = { client: Bus; routing: Routing; close(): Promise<void> };

let redis: Redis;
const gateways: Gateway[] = [];

beforeAll(() => {
  redis = connectTestRedis();
});

afterEach(async () => {
  await Promise.all(gateways.splice(0).map((gateway) => gateway.close()));
});

afterAll(() => {
  redis?.disconnect();
});

// The gateway's routing as main.ts builds it, in a namespace of its own; no model is called.
// Replicas of one gateway share a namespace (and Redis).
async function startGateway(
  source: Record<string, string>,
  namespace = uniqueNamespace('model-route'),
): Promise<Gateway> {
  const server = await connectTestBus(namespace);
  const client = await connectTestBus(namespace);
  const env = loadEnv(source);
  const meter = createUsageMeter({ redis, bus: server, limits: usageLimitsFrom(env), logger });
  const routing = createRouting(env, {
    bus: server,
    redis,
    meter,
    metrics: createMetrics('model-route-test'),
    logger,
  });
  const subscriptions = registerRouteHandlers(server, routing);
  await server.nc.flush();
  const gateway = {
    client,
    routing,
    async close() {
      for (const subscription of subscriptions) subscription.unsubscribe();
      await meter.stop();
      for await (const keys of redis.scanStream({ match: `${namespace}:*`, count: 500 })) {
        if (keys.length > 0) await redis.del(...keys);
      }
      await client.close();
      await server.close();
    },
  };
  gateways.push(gateway);
  return gateway;
}

const CHAT_ROUTE = 'anthropic/claude-sonnet-4-5,openai/gpt-4.1-mini,ollama/llama3.2:3b';

describe('model-gateway.route', () => {
  it('answers the chat models in the order calls try them, with window and tokenizer', async () => {
    const { client } = await startGateway({
      ANTHROPIC_API_KEY: 'k',
      OPENAI_API_KEY: 'k',
      MODEL_ROUTE_CHAT: CHAT_ROUTE,
    });

    const route = await client.request(modelRoute, { purpose: 'chat' });

    expect(route).toEqual({
      purpose: 'chat',
      models: [
        {
          provider: 'anthropic',
          model: 'claude-sonnet-4-5',
          contextWindow: 200_000,
          tokenizer: 'claude',
        },
        {
          provider: 'openai',
          model: 'gpt-4.1-mini',
          contextWindow: 1_047_576,
          tokenizer: 'o200k_base',
        },
        // Ollama reads no more than the window it runs with (OLLAMA_NUM_CTX).
        { provider: 'ollama', model: 'llama3.2:3b', contextWindow: 16_384, tokenizer: 'llama3' },
      ],
    });
  });

  it('leaves out models without credentials, as calls do', async () => {
    const { client } = await startGateway({ MODEL_ROUTE_CHAT: CHAT_ROUTE });

    const route = await client.request(modelRoute, { purpose: 'chat' });

    expect(route.models.map((model) => model.provider)).toEqual(['ollama']);
  });

  it('marks the models whose provider cools down, which calls skip', async () => {
    const { client, routing } = await startGateway({
      ANTHROPIC_API_KEY: 'k',
      OPENAI_API_KEY: 'k',
      MODEL_ROUTE_CHAT: CHAT_ROUTE,
    });
    await routing.chat.cooldown.trip('anthropic');

    const route = await client.request(modelRoute, { purpose: 'chat' });

    expect(route.models[0]).toMatchObject({
      provider: 'anthropic',
      coolingDownUntil: expect.any(String),
    });
    expect(Date.parse(route.models[0]?.coolingDownUntil ?? '')).toBeGreaterThan(Date.now());
    expect(route.models[1]).not.toHaveProperty('coolingDownUntil');
  });

  it('announces a cooldown from the replica whose failure opened it; every replica then answers it', async () => {
    const namespace = uniqueNamespace('model-route');
    const env = { ANTHROPIC_API_KEY: 'k', OPENAI_API_KEY: 'k', MODEL_ROUTE_CHAT: CHAT_ROUTE };
    const first = await startGateway(env, namespace);
    const second = await startGateway(env, namespace);
    // Each replica has read the cooldowns (none) a moment ago, as a busy one has.
    for (let ask = 0; ask < 6; ask += 1)
      await first.client.request(modelRoute, { purpose: 'chat' });
    await first.routing.chat.cooldown.open(['anthropic']);
    await second.routing.chat.cooldown.open(['anthropic']);
    const changes: ModelRouteChanged[] = [];
    first.client.subscribe(modelRouteChanged.subject, modelRouteChanged.payload, (change) =>
      changes.push(change),
    );
    await first.client.nc.flush();

    // Three failures open it; the first replica saw none of them.
    for (let failure = 0; failure < 3; failure += 1) {
      await second.routing.chat.cooldown.recordFailure('anthropic');
    }

    const [change] = await waitFor(() => (changes.length > 0 ? changes : undefined));
    expect(change).toMatchObject({ reason: 'cooldown', provider: 'anthropic' });
    expect(Date.parse(change?.coolingDownUntil ?? '')).toBeGreaterThan(Date.now());
    // Whichever replica answers next, at once: not from what it read before the change.
    for (let ask = 0; ask < 6; ask += 1) {
      const route = await first.client.request(modelRoute, { purpose: 'chat' });
      expect(route.models[0]?.coolingDownUntil).toBe(change?.coolingDownUntil);
    }
    expect(changes).toHaveLength(1);
  });

  it('announces its configuration once it answers the route', async () => {
    const namespace = uniqueNamespace('model-route');
    const listener = await connectTestBus(namespace);
    const changes: ModelRouteChanged[] = [];
    listener.subscribe(modelRouteChanged.subject, modelRouteChanged.payload, (change) =>
      changes.push(change),
    );
    await listener.nc.flush();
    try {
      await startGateway({}, namespace);

      expect(await waitFor(() => changes[0])).toEqual({ reason: 'configuration' });
    } finally {
      await listener.close();
    }
  });

  it('lists only real embed models, none when none has credentials', async () => {
    const configured = await startGateway({});
    const none = await startGateway({ MODEL_ROUTE_EMBED: 'openai/text-embedding-3-small' });

    const route = await configured.client.request(modelRoute, { purpose: 'embed' });
    const empty = await none.client.request(modelRoute, { purpose: 'embed' });

    expect(route.models).toEqual([
      expect.objectContaining({ provider: 'ollama', model: 'nomic-embed-text' }),
    ]);
    expect(empty.models).toEqual([]);
  });

  it('refuses an unknown purpose at the edge', async () => {
    const { client } = await startGateway({});

    const reply = await sendRaw(client, modelRoute.subject, { purpose: 'vision' });

    expect(reply).toMatchObject({ ok: false, error: { code: 'bad_request' } });
  });
});

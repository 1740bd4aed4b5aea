import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Bus } from '@jarvis/bus';
import { catchBusError, connectTestBus, sendRaw } from '@jarvis/bus/testing';
import {
  ModelChatChunk as ChunkSchema,
  type ModelChatChunk,
  modelChat,
  modelChatCancel,
  modelEmbed,
} from '@jarvis/contracts';
import { createLogger, createMetrics, type Metrics } from '@jarvis/telemetry';
import {
  type FakeLlm,
  makeTempDir,
  REDIS_URL,
  startFakeLlm,
  uniqueNamespace,
  waitFor,
} from '@jarvis/testkit';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadEnv } from './env';
import { registerHandlers } from './handlers';
import { createRouting } from './routing/create-routing';
import { usageLimitsFrom } from './usage/usage-env';
import { createUsageMeter } from './usage/usage-meter';
import { ensureUsageStream } from './usage/usage-rollup';

const logger = createLogger('model-gateway-test', 'silent');
const USER = '5d0c8a62-8f59-4f51-9d58-6f7b1c3c2a11';

type Gateway = { client: Bus; metrics: Metrics; close(): Promise<void> };

let fake: FakeLlm;
let redis: Redis;
const gateways: Gateway[] = [];

beforeAll(async () => {
  fake = await startFakeLlm();
  redis = new Redis(REDIS_URL);
});

beforeEach(() => {
  fake.reset();
});

afterEach(async () => {
  await Promise.all(gateways.splice(0).map((gateway) => gateway.close()));
});

afterAll(async () => {
  await fake?.close();
  redis?.disconnect();
});

// The gateway as main.ts builds it, in a namespace of its own (NATS subjects and Redis keys),
// with the real SDKs calling the fake LLM server.
async function startGateway(source: Record<string, string>): Promise<Gateway> {
  const namespace = uniqueNamespace('model-gateway');
  const server = await connectTestBus(namespace);
  const client = await connectTestBus(namespace);
  const env = loadEnv({ MODEL_RETRY_BASE_MS: '10', ...source });
  await ensureUsageStream(server);
  const meter = createUsageMeter({ redis, bus: server, limits: usageLimitsFrom(env), logger });
  const metrics = createMetrics('model-gateway-test');
  const routing = createRouting(env, {
    bus: server,
    redis,
    meter,
    metrics,
    logger,
  });
  const subscriptions = registerHandlers(server, routing);
  await server.nc.flush();
  const gateway = {
    client,
    metrics,
    async close() {
      for (const subscription of subscriptions) subscription.unsubscribe();
      await meter.stop();
      await client.close();
      await server.close();
    },
  };
  gateways.push(gateway);
  return gateway;
}

const openai = () => ({
  OPENAI_API_KEY: 'test-openai-key',
  OPENAI_BASE_URL: fake.openaiBaseUrl,
  MODEL_ROUTE_CHAT: 'openai/fake-gpt',
});
const anthropic = () => ({
  ANTHROPIC_API_KEY: 'test-anthropic-key',
  ANTHROPIC_BASE_URL: fake.url,
  MODEL_ROUTE_CHAT: 'anthropic/fake-claude',
});
const ollama = () => ({ OLLAMA_BASE_URL: fake.url, MODEL_ROUTE_CHAT: 'ollama/fake-llama' });

const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'Weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

describe.each([
  ['openai', openai, '/v1/chat/completions'],
  ['anthropic', anthropic, '/v1/messages'],
  ['ollama', ollama, '/api/chat'],
] as const)('model-gateway.chat through %s', (provider, settings, path) => {
  it('answers with normalised content, usage and cost', async () => {
    const { client } = await startGateway(settings());
    fake.script({ content: 'Paris.', usage: { inputTokens: 21, outputTokens: 2 } });

    const reply = await client.request(modelChat, {
      system: 'You are terse.',
      messages: [{ role: 'user', content: 'Capital of France?' }],
      maxTokens: 50,
      temperature: 0.2,
    });

    expect(reply).toMatchObject({
      content: 'Paris.',
      toolCalls: [],
      provider,
      finishReason: 'stop',
      usage: { inputTokens: 21, outputTokens: 2 },
      costUsd: 0,
      attempts: [{ provider }],
    });
    expect(fake.chatRequests()).toHaveLength(1);
    expect(fake.chatRequests()[0]?.path).toBe(path);
    if (provider === 'ollama') {
      // Run with the window routing assumes, not Ollama's small default that drops the prompt's start.
      expect(fake.chatRequests()[0]?.body).toMatchObject({ options: { num_ctx: 16_384 } });
    }
    expect(JSON.stringify(fake.chatRequests()[0]?.body)).toContain('You are terse.');
  });

  it('passes tools and returns the tool calls, then takes their results', async () => {
    const { client } = await startGateway(settings());
    fake.script(
      { toolCalls: [{ id: 'call_a', name: 'get_weather', arguments: { city: 'Oslo' } }] },
      { content: 'Sunny in Oslo.' },
    );

    const first = await client.request(modelChat, {
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      tools: [WEATHER_TOOL],
      toolChoice: 'auto',
    });

    expect(first.finishReason).toBe('tool_calls');
    expect(first.toolCalls).toEqual([
      { id: expect.any(String), name: 'get_weather', arguments: { city: 'Oslo' } },
    ]);
    const call = first.toolCalls[0];
    if (!call) throw new Error('no tool call');
    const second = await client.request(modelChat, {
      messages: [
        { role: 'user', content: 'Weather in Oslo?' },
        { role: 'assistant', content: '', toolCalls: [call] },
        { role: 'tool', toolCallId: call.id, content: '{"sky":"clear"}' },
      ],
      tools: [WEATHER_TOOL],
    });
    expect(second.content).toBe('Sunny in Oslo.');
    const sent = JSON.stringify(fake.chatRequests()[1]?.body);
    expect(sent).toContain('get_weather');
    expect(sent).toContain('{\\"sky\\":\\"clear\\"}');
  });

  it('streams text pieces and tool calls to the caller before the reply', async () => {
    const { client } = await startGateway(settings());
    fake.script({
      content: 'It is sunny today',
      toolCalls: [{ id: 'call_b', name: 'get_weather', arguments: { city: 'Rome' } }],
    });
    const chunks: ModelChatChunk[] = [];

    const reply = await client.requestStreaming(
      modelChat,
      { messages: [{ role: 'user', content: 'Weather?' }], tools: [WEATHER_TOOL] },
      ChunkSchema,
      (chunk) => chunks.push(chunk),
    );

    const deltas = chunks.flatMap((chunk) => (chunk.type === 'delta' ? [chunk.text] : []));
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('It is sunny today');
    expect(reply.content).toBe('It is sunny today');
    expect(chunks.at(-1)).toMatchObject({
      type: 'tool_call',
      toolCall: { name: 'get_weather', arguments: { city: 'Rome' } },
    });
    expect(reply.toolCalls).toHaveLength(1);
    expect(reply.usage.outputTokens).toBeGreaterThan(0);
  });
});

describe('telemetry', () => {
  it('counts tokens and times calls in the GenAI metrics, per provider and model', async () => {
    const { client, metrics } = await startGateway(openai());
    fake.script({ content: 'ok', usage: { inputTokens: 30, outputTokens: 7 } });

    await client.request(modelChat, { messages: [{ role: 'user', content: 'hi' }] });

    const text = await metrics.registry.metrics();
    const labels =
      'service="model-gateway-test",gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="fake-gpt"';
    expect(text).toContain(`gen_ai_client_token_usage_sum{${labels},gen_ai_token_type="input"} 30`);
    expect(text).toContain(`gen_ai_client_token_usage_sum{${labels},gen_ai_token_type="output"} 7`);
    expect(text).toContain(
      `gen_ai_client_operation_duration_seconds_count{${labels},error_type=""} 1`,
    );
  });

  it("times the gateway's own part of a call, leaving out the provider's calls and the pause between them", async () => {
    const { client, metrics } = await startGateway({ ...openai(), MODEL_RETRIES: '1' });
    // 0.6 s of waiting on the provider: a refused call, the pause it asks for, the answer.
    fake.script(
      { status: 429, retryAfterSeconds: 0.3, delayMs: 100 },
      { content: 'ok', delayMs: 200 },
    );

    await client.request(modelChat, {
      userId: USER,
      messages: [{ role: 'user', content: 'hi' }],
    });

    const overhead = await histogramOf(metrics, 'model_gateway_call_overhead_seconds');
    expect(overhead.count).toBe(1);
    expect(overhead.sum).toBeGreaterThan(0);
    // Far below any one of the provider's waits, which the gateway's own steps are too.
    expect(overhead.sum).toBeLessThan(0.1);
    const stages = async () => ({
      admission: await histogramOf(metrics, 'model_gateway_stage_seconds', 'budget_admission'),
      cooldown: await histogramOf(metrics, 'model_gateway_stage_seconds', 'cooldown_check'),
      recording: await histogramOf(metrics, 'model_gateway_stage_seconds', 'usage_recording'),
    });
    // The usage is recorded after the reply, with the others of its batch.
    const { admission, cooldown, recording } = await waitFor(
      async () => {
        const timed = await stages();
        return timed.recording.count > 0 ? timed : undefined;
      },
      { what: 'the usage recording to be timed' },
    );
    expect([admission.count, cooldown.count, recording.count]).toEqual([1, 1, 1]);
    for (const stage of [admission, cooldown, recording]) expect(stage.sum).toBeGreaterThan(0);
  });
});

// Count and sum of a histogram's series (of one stage, for the stage histogram).
async function histogramOf(
  metrics: Metrics,
  name: string,
  stage?: string,
): Promise<{ count: number; sum: number }> {
  const metric = metrics.registry.getSingleMetric(name);
  if (!metric) throw new Error(`${name} is not registered`);
  const { values } = await metric.get();
  const total = (suffix: string) =>
    values
      .filter((value) => 'metricName' in value && value.metricName === `${name}_${suffix}`)
      .filter((value) => stage === undefined || value.labels.stage === stage)
      .reduce((total, value) => total + value.value, 0);
  return { count: total('count'), sum: total('sum') };
}

describe('retries, fallbacks and cooldown', () => {
  const twoModels = () => ({
    OPENAI_API_KEY: 'k',
    OPENAI_BASE_URL: fake.openaiBaseUrl,
    OLLAMA_BASE_URL: fake.url,
    MODEL_ROUTE_CHAT: 'openai/first,ollama/second',
  });

  it('retries a 500 on the same model, then answers', async () => {
    const { client } = await startGateway({ ...twoModels(), MODEL_RETRIES: '1' });
    fake.script({ status: 500 }, { content: 'second try' });

    const reply = await client.request(modelChat, { messages: [{ role: 'user', content: 'hi' }] });

    expect(reply).toMatchObject({ content: 'second try', provider: 'openai', model: 'first' });
    expect(fake.chatRequests().map((request) => request.format)).toEqual(['openai', 'openai']);
  });

  it.each([
    ['a 500', { status: 500 }],
    ['a 429', { status: 429, retryAfterSeconds: 60 }],
    ['a timeout', { delayMs: 3_000 }],
  ])('falls back to the next model after %s', async (_label, failure) => {
    const { client } = await startGateway({
      ...twoModels(),
      MODEL_RETRIES: '0',
      MODEL_TIMEOUT_MS: '300',
    });
    fake.script(failure, { content: 'from ollama' });

    const reply = await client.request(modelChat, { messages: [{ role: 'user', content: 'hi' }] });

    expect(reply).toMatchObject({ content: 'from ollama', provider: 'ollama', model: 'second' });
    expect(reply.attempts).toEqual([
      { provider: 'openai', model: 'first', error: expect.any(String) },
      { provider: 'ollama', model: 'second' },
    ]);
  });

  it('says which models failed when none answers', async () => {
    const { client } = await startGateway({ ...twoModels(), MODEL_RETRIES: '0' });
    fake.script({ status: 503 }, { status: 500 });

    const error = await catchBusError(
      client.request(modelChat, { messages: [{ role: 'user', content: 'hi' }] }),
    );

    expect(error.code).toBe('unavailable');
    expect(error.message).toMatch(/no chat model could answer.*openai\/first.*ollama\/second/);
  });

  it('opens a cooldown after repeated failures and closes it when it ends', async () => {
    const { client } = await startGateway({
      ...twoModels(),
      MODEL_RETRIES: '0',
      MODEL_COOLDOWN_FAILURES: '2',
      MODEL_COOLDOWN_MS: '400',
    });
    const ask = () => client.request(modelChat, { messages: [{ role: 'user', content: 'hi' }] });
    fake.script({ status: 500 }, { content: 'a' }, { status: 500 }, { content: 'b' });
    await ask();
    await ask();
    fake.reset();

    const whileOpen = await ask();

    expect(whileOpen.provider).toBe('ollama');
    expect(whileOpen.attempts[0]?.error).toMatch(/cooling down until/);
    expect(fake.chatRequests().map((request) => request.format)).toEqual(['ollama']);

    await new Promise((resolve) => setTimeout(resolve, 500));
    const afterwards = await ask();
    expect(afterwards.provider).toBe('openai');
  });

  it('trips the cooldown at once when a key is refused', async () => {
    const { client } = await startGateway({ ...twoModels(), MODEL_COOLDOWN_MS: '10000' });
    fake.script({ status: 401 }, { content: 'a' });
    await client.request(modelChat, { messages: [{ role: 'user', content: 'hi' }] });
    fake.reset();

    const reply = await client.request(modelChat, { messages: [{ role: 'user', content: 'hi' }] });

    expect(reply.provider).toBe('ollama');
    expect(fake.chatRequests()).toHaveLength(1);
  });

  it('sends a prompt too long for a model to a larger one, or refuses it', async () => {
    const dir = await makeTempDir('model-config');
    const configFile = join(dir.path, 'models.json');
    await writeFile(
      configFile,
      JSON.stringify({
        routes: { chat: ['openai/small', 'ollama/large'], utility: [], embed: [] },
        models: {
          'openai/small': { contextWindow: 2_000, inputUsdPerMTok: 1, outputUsdPerMTok: 2 },
          'ollama/large': { contextWindow: 20_000, inputUsdPerMTok: 0, outputUsdPerMTok: 0 },
        },
      }),
    );
    const { client } = await startGateway({
      OPENAI_API_KEY: 'k',
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OLLAMA_BASE_URL: fake.url,
      OLLAMA_NUM_CTX: '32768',
      MODEL_CONFIG_FILE: configFile,
    });

    const fits = await client.request(modelChat, {
      messages: [{ role: 'user', content: 'word '.repeat(4_000) }],
    });
    const tooLong = await catchBusError(
      client.request(modelChat, { messages: [{ role: 'user', content: 'word '.repeat(40_000) }] }),
    );

    expect(fits.provider).toBe('ollama');
    expect(fits.attempts[0]?.error).toMatch(/does not fit its 2000/);
    expect(tooLong.code).toBe('payload_too_large');
    expect(tooLong.message).toMatch(/does not fit any chat model; the largest takes 20000/);
    await dir.remove();
  });

  it('prices a call from the config file', async () => {
    const { client } = await startGateway({
      ...openai(),
      MODEL_ROUTE_CHAT: 'openai/gpt-4o-mini',
    });
    fake.script({ content: 'ok', usage: { inputTokens: 1_000_000, outputTokens: 1_000_000 } });

    const reply = await client.request(modelChat, { messages: [{ role: 'user', content: 'hi' }] });

    expect(reply.costUsd).toBeCloseTo(0.75);
  });

  it('fails with a clear error when no chat model is configured', async () => {
    const { client } = await startGateway({ MODEL_ROUTE_CHAT: 'anthropic/claude-x' });

    const error = await catchBusError(
      client.request(modelChat, { messages: [{ role: 'user', content: 'hi' }] }),
    );

    expect(error).toMatchObject({ code: 'unavailable' });
    expect(error.message).toMatch(/no chat model is configured: set ANTHROPIC_API_KEY/);
  });
});

describe('cancellation', () => {
  it('stops a running call when its requestId is cancelled', async () => {
    const { client } = await startGateway(openai());
    const hold = fake.hold();
    const requestId = '0a3c1f7e-1b2d-4c5e-8f90-123456789abc';
    const pending = catchBusError(
      client.request(
        modelChat,
        { requestId, messages: [{ role: 'user', content: 'long job' }] },
        { timeoutMs: 10_000 },
      ),
    );
    await hold.reached;

    client.publish(modelChatCancel.subject, modelChatCancel.payload, { requestId });

    const error = await pending;
    expect(error.code).toBe('cancelled');
    hold.release();
  });
});

describe('structured output', () => {
  const schema = {
    type: 'object',
    properties: { city: { type: 'string' }, population: { type: 'integer' } },
    required: ['city', 'population'],
  };

  it('asks once more when the first answer does not match the schema', async () => {
    const { client } = await startGateway(openai());
    fake.script(
      { content: 'Sure! The city is Oslo.' },
      { content: '{"city":"Oslo","population":709000}' },
    );

    const reply = await client.request(modelChat, {
      messages: [{ role: 'user', content: 'Largest city in Norway?' }],
      responseFormat: { type: 'json_schema', name: 'city', schema },
    });

    expect(reply.parsed).toEqual({ city: 'Oslo', population: 709_000 });
    expect(fake.chatRequests()).toHaveLength(2);
    expect(fake.chatRequests()[0]?.body).toMatchObject({
      response_format: { type: 'json_schema', json_schema: { name: 'city', schema } },
    });
    expect(JSON.stringify(fake.chatRequests()[1]?.body)).toContain('not valid JSON');
  });

  it('fails with a typed error when the second answer is still wrong', async () => {
    const { client } = await startGateway(anthropic());
    fake.script({ content: '{"city":"Oslo"}' }, { content: '{"city":"Oslo"}' });

    const error = await catchBusError(
      client.request(modelChat, {
        messages: [{ role: 'user', content: 'Largest city in Norway?' }],
        responseFormat: { type: 'json_schema', schema },
      }),
    );

    expect(error.code).toBe('unavailable');
    expect(error.message).toMatch(/must have required property 'population'/);
    expect(fake.chatRequests()[0]?.body).toMatchObject({
      output_config: { format: { type: 'json_schema', schema } },
    });
  });
});

describe('redaction', () => {
  it('sends placeholders to a hosted provider and restores them in the reply', async () => {
    const { client } = await startGateway(anthropic());
    fake.onChat((request) => {
      const sent = JSON.stringify(request.body);
      const email = /\[EMAIL_\d+\]/.exec(sent)?.[0] ?? 'none';
      const secret = /\[SECRET_\d+\]/.exec(sent)?.[0] ?? 'none';
      return {
        content: `I will write to ${email}.`,
        toolCalls: [{ id: 't1', name: 'send', arguments: { to: email, key: secret } }],
      };
    });

    const reply = await client.request(modelChat, {
      messages: [
        {
          role: 'user',
          content: 'Mail ada@example.com; my key is sk-proj-abcdefghijklmnopqrstuvwxyz123456',
        },
      ],
      tools: [{ name: 'send', parameters: { type: 'object' } }],
    });

    const sent = JSON.stringify(fake.chatRequests()[0]?.body);
    expect(sent).not.toContain('ada@example.com');
    expect(sent).not.toContain('sk-proj-abcdefghijklmnopqrstuvwxyz123456');
    expect(reply.content).toBe('I will write to ada@example.com.');
    expect(reply.toolCalls[0]?.arguments).toEqual({
      to: 'ada@example.com',
      key: expect.stringMatching(/^\[SECRET_\d+\]$/),
    });
  });

  it('leaves local models the text as it is', async () => {
    const { client } = await startGateway(ollama());

    await client.request(modelChat, {
      messages: [{ role: 'user', content: 'Mail ada@example.com' }],
    });

    expect(JSON.stringify(fake.chatRequests()[0]?.body)).toContain('ada@example.com');
  });

  it('can be turned off', async () => {
    const { client } = await startGateway({ ...anthropic(), MODEL_REDACTION: 'off' });

    await client.request(modelChat, {
      messages: [{ role: 'user', content: 'Mail ada@example.com' }],
    });

    expect(JSON.stringify(fake.chatRequests()[0]?.body)).toContain('ada@example.com');
  });
});

describe('budgets', () => {
  it('refuses calls over the per-minute rate before any provider sees them', async () => {
    const { client } = await startGateway({ ...openai(), USER_REQUESTS_PER_MINUTE: '2' });
    const ask = () =>
      client.request(modelChat, { userId: USER, messages: [{ role: 'user', content: 'hi' }] });
    await ask();
    await ask();

    const error = await catchBusError(ask());

    expect(error.code).toBe('budget_exceeded');
    expect(fake.chatRequests()).toHaveLength(2);
  });

  it('refuses calls once the daily token budget is spent', async () => {
    const { client } = await startGateway({ ...openai(), USER_DAILY_TOKEN_LIMIT: '100' });
    fake.script({ content: 'ok', usage: { inputTokens: 90, outputTokens: 20 } });
    await client.request(modelChat, { userId: USER, messages: [{ role: 'user', content: 'hi' }] });

    const error = await catchBusError(
      client.request(modelChat, { userId: USER, messages: [{ role: 'user', content: 'hi' }] }),
    );

    expect(error.code).toBe('budget_exceeded');
    expect(error.message).toMatch(/token/i);
  });
});

describe('model-gateway.embed', () => {
  it('answers a typed unavailable error, never stand-in vectors, when no embed model answers', async () => {
    const { client } = await startGateway({
      OLLAMA_BASE_URL: 'http://127.0.0.1:9',
      MODEL_ROUTE_EMBED: 'ollama/nomic-embed-text',
      MODEL_RETRIES: '0',
    });

    const error = await catchBusError(client.request(modelEmbed, { texts: ['painting a cat'] }));

    expect(error.code).toBe('unavailable');
    expect(error.message).toContain('ollama/nomic-embed-text');
  });

  it('answers a typed unavailable error when no embed model has credentials', async () => {
    const { client } = await startGateway({ MODEL_ROUTE_EMBED: 'openai/text-embedding-3-small' });

    const error = await catchBusError(client.request(modelEmbed, { texts: ['x'] }));

    expect(error.code).toBe('unavailable');
    expect(error.message).toContain('MODEL_ROUTE_EMBED');
  });

  it.each([
    [
      'openai',
      () => ({
        OPENAI_API_KEY: 'k',
        OPENAI_BASE_URL: fake.openaiBaseUrl,
        MODEL_ROUTE_EMBED: 'openai/fake-embed',
      }),
    ],
    ['ollama', () => ({ OLLAMA_BASE_URL: fake.url, MODEL_ROUTE_EMBED: 'ollama/fake-embed' })],
  ])('embeds through %s and caches each text in Redis', async (provider, settings) => {
    const { client } = await startGateway(settings());

    const first = await client.request(modelEmbed, { texts: ['alpha', 'beta'] });
    const second = await client.request(modelEmbed, { texts: ['beta', 'gamma'] });

    expect(first).toMatchObject({
      provider,
      model: `${provider}/fake-embed`,
      dimensions: 16,
      cached: 0,
    });
    expect(second.cached).toBe(1);
    expect(second.vectors[0]).toEqual(first.vectors[1]);
    const embedded = fake.requests.filter((request) => request.kind === 'embeddings');
    expect(embedded).toHaveLength(2);
    expect(JSON.stringify(embedded[1]?.body)).not.toContain('beta');
  });

  it('answers with the model asked for, or says it is unknown', async () => {
    const { client } = await startGateway({
      OLLAMA_BASE_URL: fake.url,
      MODEL_ROUTE_EMBED: 'ollama/other-embed,ollama/fake-embed',
    });

    const reply = await client.request(modelEmbed, { texts: ['x'], model: 'ollama/fake-embed' });
    const error = await catchBusError(
      client.request(modelEmbed, { texts: ['x'], model: 'local/hash-v1-384' }),
    );

    expect(reply).toMatchObject({ model: 'ollama/fake-embed', dimensions: 16 });
    expect(error.code).toBe('bad_request');
  });
});

describe('bad requests', () => {
  it.each([
    ['no messages', { messages: [] }],
    ['an unknown role', { messages: [{ role: 'wizard', content: 'hi' }] }],
    [
      'a bad tool name',
      {
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ name: 'no spaces allowed', parameters: {} }],
      },
    ],
    ['a temperature of 5', { messages: [{ role: 'user', content: 'hi' }], temperature: 5 }],
    [
      'a stream target that is not an inbox',
      { messages: [{ role: 'user', content: 'hi' }], streamTo: 'memory.facts.list' },
    ],
  ])('refuses %s with a typed validation error', async (_label, body) => {
    const { client } = await startGateway(openai());

    const reply = await sendRaw(client, modelChat.subject, body);

    expect(reply).toMatchObject({ ok: false, error: { code: 'bad_request' } });
    expect(fake.chatRequests()).toHaveLength(0);
  });

  it('refuses a response schema that is not JSON Schema', async () => {
    const { client } = await startGateway(openai());

    const error = await catchBusError(
      client.request(modelChat, {
        messages: [{ role: 'user', content: 'hi' }],
        responseFormat: { type: 'json_schema', schema: { type: 'not-a-type' } },
      }),
    );

    expect(error.code).toBe('bad_request');
  });
});

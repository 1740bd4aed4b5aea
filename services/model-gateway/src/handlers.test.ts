import type { Bus } from '@jarvis/bus';
import { catchBusError, connectTestBus } from '@jarvis/bus/testing';
import { type ChatMessage, modelChat } from '@jarvis/contracts';
import { createLogger } from '@jarvis/telemetry';
import { type FakeLlm, freePort, startFakeLlm, uniqueNamespace } from '@jarvis/testkit';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadEnv } from './env';
import { registerHandlers } from './handlers';
import { selectChatProvider } from './providers/select-provider';

const logger = createLogger('model-gateway-test', 'silent');

type Gateway = { client: Bus; close(): Promise<void> };

let fake: FakeLlm;
const gateways: Gateway[] = [];

beforeAll(async () => {
  fake = await startFakeLlm();
});

beforeEach(() => {
  fake.reset();
});

afterEach(async () => {
  await Promise.all(gateways.splice(0).map((gateway) => gateway.close()));
});

afterAll(async () => {
  await fake?.close();
});

// The handlers of one provider, in a namespace of their own: two gateways on one subject would
// share its queue group and answer each other's requests.
async function startGateway(source: Record<string, string>): Promise<Gateway> {
  const namespace = uniqueNamespace('model-gateway');
  const server = await connectTestBus(namespace);
  const client = await connectTestBus(namespace);
  const subscriptions = registerHandlers(server, selectChatProvider(loadEnv(source)), logger);
  await server.nc.flush();
  const gateway = {
    client,
    async close() {
      for (const subscription of subscriptions) subscription.unsubscribe();
      await client.close();
      await server.close();
    },
  };
  gateways.push(gateway);
  return gateway;
}

// Each test adds OPENAI_BASE_URL: the fake, or a port nobody listens on.
const OPENAI_ENV = {
  OPENAI_API_KEY: 'test-openai-key',
  OPENAI_CHAT_MODEL: 'fake-gpt',
};

describe('model-gateway.chat', () => {
  it('answers through an OpenAI-compatible server', async () => {
    const { client } = await startGateway({ ...OPENAI_ENV, OPENAI_BASE_URL: fake.openaiBaseUrl });
    fake.script({ content: 'Paris.', usage: { inputTokens: 21, outputTokens: 2 } });
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Capital of France?' },
    ];

    const reply = await client.request(modelChat, { messages, maxTokens: 50, temperature: 0.2 });

    expect(reply).toEqual({
      content: 'Paris.',
      provider: 'openai',
      model: 'fake-gpt',
      finishReason: 'stop',
      usage: { inputTokens: 21, outputTokens: 2 },
    });
    const requests = fake.chatRequests();
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({
      format: 'openai',
      path: '/v1/chat/completions',
      headers: { authorization: 'Bearer test-openai-key' },
      body: { model: 'fake-gpt', messages, max_tokens: 50, temperature: 0.2 },
    });
  });

  it('answers through Anthropic with the system prompt beside the messages', async () => {
    const { client } = await startGateway({
      ANTHROPIC_API_KEY: 'test-anthropic-key',
      ANTHROPIC_BASE_URL: fake.url,
      ANTHROPIC_CHAT_MODEL: 'fake-claude',
    });

    const reply = await client.request(modelChat, {
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'system', content: 'Answer in English.' },
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello' },
        { role: 'user', content: 'how are you?' },
      ],
    });

    expect(reply).toMatchObject({
      content: 'fake reply to: how are you?',
      provider: 'anthropic',
      model: 'fake-claude',
      finishReason: 'end_turn',
    });
    expect(reply.usage.inputTokens).toBeGreaterThan(0);
    expect(reply.usage.outputTokens).toBeGreaterThan(0);
    const requests = fake.chatRequests();
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ format: 'anthropic', path: '/v1/messages' });
    // The SDK decides which header carries the key; what matters is that the key is sent.
    expect(Object.values(requests[0]?.headers ?? {})).toContainEqual(
      expect.stringContaining('test-anthropic-key'),
    );
    expect(requests[0]?.body).toEqual(
      expect.objectContaining({
        model: 'fake-claude',
        max_tokens: 4_096,
        system: 'Be brief.\n\nAnswer in English.',
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'hello' },
          { role: 'user', content: 'how are you?' },
        ],
      }),
    );
  });

  it("answers through Ollama's OpenAI-compatible /v1 endpoint when no cloud key is set", async () => {
    // The trailing slash must not end up as '//v1'.
    const { client } = await startGateway({
      OLLAMA_BASE_URL: `${fake.url}/`,
      OLLAMA_CHAT_MODEL: 'fake-llama',
    });

    const reply = await client.request(modelChat, {
      messages: [{ role: 'user', content: 'hello ollama' }],
    });

    expect(reply).toMatchObject({
      content: 'fake reply to: hello ollama',
      provider: 'ollama',
      model: 'fake-llama',
      finishReason: 'stop',
    });
    expect(fake.chatRequests()).toHaveLength(1);
    expect(fake.chatRequests()[0]).toMatchObject({
      path: '/v1/chat/completions',
      body: { model: 'fake-llama', messages: [{ role: 'user', content: 'hello ollama' }] },
    });
  });

  it('answers unavailable naming provider, model and status, never the prompt', async () => {
    const { client } = await startGateway({ ...OPENAI_ENV, OPENAI_BASE_URL: fake.openaiBaseUrl });
    fake.onChat(() => ({ status: 500, errorMessage: 'upstream exploded' }));
    const prompt = 'my bank password is hunter2';

    const error = await catchBusError(
      client.request(modelChat, { messages: [{ role: 'user', content: prompt }] }),
    );

    expect(error.code).toBe('unavailable');
    expect(error.message).toContain('openai');
    expect(error.message).toContain('fake-gpt');
    expect(error.message).toContain('HTTP 500');
    expect(error.message).not.toContain('hunter2');
    expect(fake.chatRequests().length).toBeGreaterThanOrEqual(1);
  });

  it('answers unavailable with the Anthropic status too', async () => {
    const { client } = await startGateway({
      ANTHROPIC_API_KEY: 'test-anthropic-key',
      ANTHROPIC_BASE_URL: fake.url,
      ANTHROPIC_CHAT_MODEL: 'fake-claude',
    });
    fake.onChat(() => ({ status: 400, errorMessage: 'prompt is too long' }));

    const error = await catchBusError(
      client.request(modelChat, { messages: [{ role: 'user', content: 'secret words' }] }),
    );

    expect(error.code).toBe('unavailable');
    expect(error.message).toBe('anthropic model fake-claude failed (HTTP 400)');
  });

  it('answers unavailable with "no connection" when the provider cannot be reached', async () => {
    const closedPort = await freePort();
    const { client } = await startGateway({
      ...OPENAI_ENV,
      OPENAI_BASE_URL: `http://127.0.0.1:${closedPort}/v1`,
    });

    const error = await catchBusError(
      client.request(modelChat, { messages: [{ role: 'user', content: 'anyone?' }] }),
    );

    expect(error.code).toBe('unavailable');
    expect(error.message).toBe('openai model fake-gpt failed (no connection)');
  });

  it('answers timeout when the provider is slower than MODEL_TIMEOUT_MS', async () => {
    const { client } = await startGateway({
      ...OPENAI_ENV,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      MODEL_TIMEOUT_MS: '1000',
    });
    fake.onChat(() => ({ delayMs: 3_000 }));

    const error = await catchBusError(
      client.request(
        modelChat,
        { messages: [{ role: 'user', content: 'take your time' }] },
        { timeoutMs: 10_000 },
      ),
    );

    expect(error.code).toBe('timeout');
    expect(error.message).toBe('openai model fake-gpt did not answer in time');
  });

  it('answers bad_request to an empty message list before any provider call', async () => {
    const { client } = await startGateway({ ...OPENAI_ENV, OPENAI_BASE_URL: fake.openaiBaseUrl });

    const reply = await client.nc.request(
      client.subject(modelChat.subject),
      new TextEncoder().encode(JSON.stringify({ messages: [] })),
      { timeout: 5_000 },
    );

    expect(JSON.parse(new TextDecoder().decode(reply.data))).toEqual({
      ok: false,
      error: { code: 'bad_request', message: expect.stringContaining('messages') },
    });
    expect(fake.chatRequests()).toHaveLength(0);
  });
});

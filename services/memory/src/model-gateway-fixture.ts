import { type FakeLlm, NATS_URL, REDIS_URL, Stack, startFakeLlm } from '@jarvis/testkit';

export type ModelGatewayFixture = {
  // What the model answers: script(), onChat(), hold(); and what it was sent: chatRequests().
  fake: FakeLlm;
  stop(): Promise<void>;
};

// The model as memory meets it in production: the real model-gateway, as its own process, on
// the test's database (its own schema), NATS namespace and the machine's Redis, routing both
// purposes to the test kit's fake LLM behind its OpenAI-compatible provider.
export async function startModelGatewayFixture(
  namespace: string,
  databaseUrl: string,
): Promise<ModelGatewayFixture> {
  const fake = await startFakeLlm();
  const stack = new Stack({
    services: ['model-gateway'],
    databaseUrl,
    env: {
      NATS_URL,
      REDIS_URL,
      NATS_NAMESPACE: namespace,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'test-key',
      MODEL_ROUTE_CHAT: 'openai/fake-chat',
      MODEL_ROUTE_UTILITY: 'openai/fake-chat',
      MODEL_ROUTE_EMBED: '',
      // A failure the test scripts is answered at once, and does not open a cooldown that
      // would refuse the next test's calls.
      MODEL_RETRIES: '0',
      MODEL_COOLDOWN_FAILURES: '100',
      LOG_LEVEL: 'warn',
    },
  });
  try {
    await stack.start();
  } catch (error) {
    await fake.close();
    throw error;
  }
  return {
    fake,
    async stop() {
      await stack.stop();
      await fake.close();
    },
  };
}

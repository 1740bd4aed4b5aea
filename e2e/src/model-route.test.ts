import { ChatResponse, RunsGetResponse } from '@jarvis/contracts';
import { isTurnRequest, type StackFixture, startStackFixture } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The orchestrator keeps the chat route between turns; a cooldown that opens in model-gateway
// reaches it as an event, so the very next turn is sized for the model that will answer, not
// for one that is skipped until the route's time limit (half a minute) passes.
describe('the chat route across a cooldown', () => {
  let fixture: StackFixture;
  let key: string;

  beforeAll(async () => {
    fixture = await startStackFixture({
      ANTHROPIC_API_KEY: 'test-key',
      MODEL_ROUTE_CHAT: 'anthropic/fake-claude,openai/fake-chat',
      // One failure opens the cooldown, and the call falls back at once.
      MODEL_COOLDOWN_FAILURES: '1',
      MODEL_RETRIES: '0',
    });
    key = (await fixture.createUser('rafa')).apiKey;
  });

  afterAll(async () => {
    await fixture?.close();
  });

  const contextModelOf = async (runId: string) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}/v1/runs/${runId}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(response.status).toBe(200);
    return RunsGetResponse.parse(await response.json()).run.context.model;
  };

  const chat = async (message: string) => {
    const response = await fixture.chat(key, { message });
    expect(response.status).toBe(200);
    return ChatResponse.parse(await response.json());
  };

  it('sizes the next turn for the fallback as soon as the first model cools down', async () => {
    let isClaudeDown = false;
    // Only turns go to Claude: background work (summaries, fact extraction) has its own route.
    fixture.fake.onChat((request) => {
      if (request.format === 'anthropic') {
        return isClaudeDown
          ? { status: 500, errorMessage: 'down' }
          : { content: 'answered by anthropic' };
      }
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      return { content: 'answered by openai' };
    });

    const first = await chat('Hello there.');
    expect(first.reply.content).toBe('answered by anthropic');
    expect(await contextModelOf(first.runId)).toBe('anthropic/fake-claude');

    isClaudeDown = true;
    // Sized for Claude, as the route said a moment ago; its failure opens the cooldown.
    const failedOver = await chat('Are you still there?');
    expect(failedOver.reply.content).toBe('answered by openai');
    expect(await contextModelOf(failedOver.runId)).toBe('anthropic/fake-claude');

    const next = await chat('And now?');
    expect(next.reply.content).toBe('answered by openai');
    expect(await contextModelOf(next.runId)).toBe('openai/fake-chat');
  });
});

import { ChatResponse, MemorySearchResponse } from '@jarvis/contracts';
import {
  type FakeLlmRequest,
  isTurnRequest,
  type StackFixture,
  sentMessages,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

function isSummaryRequest(request: FakeLlmRequest): boolean {
  return sentMessages(request).some((message) =>
    message.content.includes('Conversation to condense'),
  );
}

describe('a conversation longer than the prompt budget', () => {
  let fixture: StackFixture;

  beforeAll(async () => {
    // Tiny thresholds, so a handful of turns is "long".
    fixture = await startStackFixture({
      SUMMARY_TRIGGER_TOKENS: '600',
      SUMMARY_KEEP_TOKENS: '200',
      CONTEXT_TOKEN_BUDGET: '900',
    });
    fixture.fake.onChat((request) =>
      isSummaryRequest(request)
        ? { content: 'SUMMARY: the user described the garden plan in detail.' }
        : { content: 'Noted.' },
    );
  });

  afterAll(async () => {
    await fixture?.close();
  });

  it('summarises old turns, keeps the prompt within budget, and loses no message', async () => {
    const { apiKey } = await fixture.createUser('erin');
    const filler = 'The garden plan has raised beds, a compost corner and a rain barrel. '.repeat(
      6,
    );
    let conversationId = '';
    for (let turn = 0; turn < 8; turn++) {
      const response = await fixture.chat(apiKey, { message: `Turn ${turn}: ${filler}` });
      expect(response.status).toBe(200);
      conversationId = ChatResponse.parse(await response.json()).conversationId;
    }

    const client = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await client.connect();
    try {
      // Compaction runs in the background: wait for its summary.
      const summaries = await waitFor(
        async () => {
          const { rows } = await client.query<{ content: string; from_seq: string }>(
            'SELECT content, from_seq FROM memory.summaries WHERE conversation_id = $1',
            [conversationId],
          );
          return rows.length > 0 ? rows : undefined;
        },
        { timeoutMs: 30_000, what: 'a summary' },
      );
      expect(summaries[0]?.content).toBe('SUMMARY: the user described the garden plan in detail.');
      const summaryRequest = fixture.fake.chatRequests().find(isSummaryRequest);
      expect(JSON.stringify(summaryRequest?.body)).toContain('Turn 0:');

      // Messages are never deleted: all 16 are still there.
      const { rows } = await client.query<{ count: string }>(
        'SELECT count(*) FROM memory.messages WHERE conversation_id = $1',
        [conversationId],
      );
      expect(Number(rows[0]?.count)).toBe(16);
    } finally {
      await client.end();
    }

    const last = await fixture.chat(apiKey, { message: 'what was the garden plan again?' });
    expect(last.status).toBe(200);
    const prompt = sentMessages(fixture.fake.chatRequests().filter(isTurnRequest).at(-1));
    expect(prompt[0]?.content).toContain('SUMMARY: the user described the garden plan in detail.');
    // Within budget: the summarised turns reach the prompt as their summary only, and the new
    // message is last.
    const promptChars = prompt.reduce((sum, message) => sum + message.content.length, 0);
    expect(promptChars / 4).toBeLessThan(900);
    expect(prompt.slice(1).some((message) => message.content.startsWith('Turn 0:'))).toBe(false);
    expect(prompt.at(-1)).toEqual({ role: 'user', content: 'what was the garden plan again?' });

    // The oldest turn left the prompt but is still found by search.
    const search = await fetch(`${fixture.stack.gatewayUrl}/v1/memory/search`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'Turn 0 garden plan', kinds: ['message'] }),
    });
    const { results } = MemorySearchResponse.parse(await search.json());
    expect(results.some((result) => result.text.startsWith('Turn 0:'))).toBe(true);
  });
});

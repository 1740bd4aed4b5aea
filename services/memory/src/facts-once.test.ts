import { randomUUID } from 'node:crypto';
import { ensureWorkQueue, publishWork, type Worker, type WorkQueueOptions } from '@jarvis/bus';
import {
  EXTRACTION_STREAM,
  extractionRequested,
  memoryAppend,
  memoryExtractionsList,
  memoryExtractionsUndo,
  memoryFactsList,
  memoryFactsRemember,
} from '@jarvis/contracts';
import { waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerExtractionHandlers } from './extractions-handlers';
import { registerFactHandlers } from './facts-handlers';
import { startExtractionWorker } from './handlers';
import { type MemoryFixture, startMemoryFixture } from './memory-fixture';
import { type ModelGatewayFixture, startModelGatewayFixture } from './model-gateway-fixture';

// One fact told through every path that stores facts (the "remember" command in a message, the
// model's remember tool, extraction after the turn) is one row: the memory service with the
// real model gateway and the fake LLM standing in for the utility model.
let memory: MemoryFixture;
let gateway: ModelGatewayFixture;
let worker: Worker;

const EXTRACTION: WorkQueueOptions = {
  stream: EXTRACTION_STREAM,
  consumer: 'memory-extraction',
  ackWaitMs: 30_000,
  maxDeliver: 2,
  maxInFlight: 1,
};

beforeAll(async () => {
  memory = await startMemoryFixture('memory-facts-once', [
    registerFactHandlers,
    registerExtractionHandlers,
  ]);
  gateway = await startModelGatewayFixture(memory.clientBus.namespace, memory.db.url);
  await ensureWorkQueue(memory.clientBus, extractionRequested, EXTRACTION);
  worker = await startExtractionWorker(
    memory.clientBus,
    memory.db.pool,
    { modelTimeoutMs: 20_000 },
    EXTRACTION,
  );
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await gateway?.stop();
  await memory?.stop();
});

async function append(
  userId: string,
  role: 'user' | 'assistant',
  content: string,
  conversationId?: string,
) {
  return (await memory.clientBus.request(memoryAppend, { userId, conversationId, role, content }))
    .message;
}

async function listFacts(userId: string) {
  return (await memory.clientBus.request(memoryFactsList, { userId })).facts;
}

describe('one fact, stored once', () => {
  it(
    'is one row after the command, the remember tool and extraction all store it',
    { timeout: 60_000 },
    async () => {
      const userId = randomUUID();
      // The command path: stored while the message is appended.
      const asked = await append(userId, 'user', 'REMEMBER: I am allergic to peanuts');
      const [commanded] = await listFacts(userId);
      expect(commanded).toMatchObject({ content: 'I am allergic to peanuts', importance: 7 });
      // The model also calls remember, in its own words.
      const told = await memory.clientBus.request(memoryFactsRemember, {
        userId,
        content: 'The user is allergic to peanuts.',
        importance: 5,
        sourceMessageIds: [asked.id],
      });
      expect(told).toMatchObject({ isDuplicate: true, fact: { id: commanded?.id, importance: 7 } });
      await append(userId, 'assistant', 'Noted: no peanuts.', asked.conversationId);

      // A later turn that extraction reads the same fact from again, beside a new one.
      gateway.fake.onChat(() => ({
        content: JSON.stringify({
          operations: [
            { op: 'add', content: 'User is allergic to peanuts', category: 'fact', importance: 8 },
            { op: 'add', content: 'The user carries an EpiPen.', category: 'fact', importance: 6 },
          ],
        }),
      }));
      const said = await append(
        userId,
        'user',
        'Peanut butter nearly put me in hospital last year, so I carry an EpiPen now.',
        asked.conversationId,
      );
      const reply = await append(userId, 'assistant', 'Good to know.', asked.conversationId);
      await publishWork(
        memory.clientBus,
        extractionRequested,
        {
          userId,
          conversationId: asked.conversationId,
          runId: randomUUID(),
          turnId: randomUUID(),
          userMessageId: said.id,
          replyMessageId: reply.id,
          recalledIds: [],
        },
        randomUUID(),
      );
      const facts = await waitFor(
        async () => {
          const all = await listFacts(userId);
          return all.some((fact) => fact.content.includes('EpiPen')) ? all : undefined;
        },
        { what: 'the extracted EpiPen fact', timeoutMs: 30_000 },
      );

      const peanuts = facts.filter((fact) => fact.content.toLowerCase().includes('peanut'));
      expect(peanuts).toHaveLength(1);
      // Told three times: the highest importance, every message it was learnt from.
      expect(peanuts[0]).toMatchObject({ id: commanded?.id, importance: 8 });
      expect(peanuts[0]?.sourceMessageIds).toEqual(expect.arrayContaining([asked.id, said.id]));
      expect(
        await memory.countRows('SELECT count(*) FROM memory.facts WHERE user_id = $1', [userId]),
      ).toBe(2);
    },
  );

  it('is one row when the same fact is told many times at once', async () => {
    const userId = randomUUID();
    const texts = [
      'My sister Ana lives in Porto',
      'my sister ana lives in porto.',
      'The user: my sister Ana lives in Porto!',
      'MY SISTER ANA LIVES IN PORTO',
    ];

    const answers = await Promise.all(
      [...texts, ...texts].map((content) =>
        memory.clientBus.request(memoryFactsRemember, { userId, content }),
      ),
    );

    expect(answers.filter((answer) => !answer.isDuplicate)).toHaveLength(1);
    expect(new Set(answers.map((answer) => answer.fact.id)).size).toBe(1);
    expect(await listFacts(userId)).toHaveLength(1);
  });

  it('keeps facts apart that differ by a negation, a number, or that are a rule', async () => {
    const userId = randomUUID();
    const remember = (content: string, category: 'fact' | 'rule' = 'fact') =>
      memory.clientBus.request(memoryFactsRemember, { userId, content, category });

    await remember('I like to fly with Lufthansa');
    expect((await remember("I don't like to fly with Lufthansa")).isDuplicate).toBe(false);
    await remember('The gate code is 4711');
    expect((await remember('The gate code is 4712')).isDuplicate).toBe(false);
    expect((await remember('I like to fly with Lufthansa', 'rule')).isDuplicate).toBe(false);
    expect((await remember('i like to fly with lufthansa', 'rule')).isDuplicate).toBe(true);
    expect(await listFacts(userId)).toHaveLength(5);
  });

  it("records what the remember tool stored as the turn's, a repeat as noop, undoable", async () => {
    const userId = randomUUID();
    const turnId = randomUUID();
    const remember = (content: string) =>
      memory.clientBus.request(memoryFactsRemember, { userId, content, turnId });

    const first = await remember('The user parks on level 3 at work.');
    await remember('The user parks on level 3 at work');
    // Without a turn (the API, the UI) nothing is recorded.
    await memory.clientBus.request(memoryFactsRemember, { userId, content: 'Likes sencha.' });

    const { extractions } = await memory.clientBus.request(memoryExtractionsList, { userId });
    expect(extractions.map((extraction) => [extraction.turnId, extraction.changes])).toEqual([
      [turnId, [{ op: 'noop', factId: first.fact.id, text: first.fact.content }]],
      [turnId, [{ op: 'add', factId: first.fact.id, text: first.fact.content }]],
    ]);
    const added = extractions.find((extraction) => extraction.changes[0]?.op === 'add');
    await memory.clientBus.request(memoryExtractionsUndo, { userId, id: added?.id ?? '' });
    expect((await listFacts(userId)).map((fact) => fact.content)).toEqual(['Likes sencha.']);
  });
});

import { randomUUID } from 'node:crypto';
import { ensureWorkQueue, publishWork, type Worker, type WorkQueueOptions } from '@jarvis/bus';
import {
  EXTRACTION_STREAM,
  extractionRequested,
  memoryAppend,
  memoryExtractionsList,
  memoryExtractionsUndo,
  memoryFactsGet,
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

  it('gives a known fact the later end a repeat brings, as a new version', async () => {
    const userId = randomUUID();
    const turnId = randomUUID();
    const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
    const remember = (validTo?: string) =>
      memory.clientBus.request(memoryFactsRemember, {
        userId,
        content: 'The gate code is 4711',
        validTo,
        turnId,
      });

    const first = await remember(inDays(2));
    const earlier = await remember(inDays(1));
    expect(earlier).toMatchObject({
      isDuplicate: true,
      fact: { id: first.fact.id, validTo: first.fact.validTo },
    });
    const laterEnd = inDays(5);
    const later = await remember(laterEnd);
    expect(later).toMatchObject({ isDuplicate: true, fact: { validTo: laterEnd } });
    expect(later.fact.id).not.toBe(first.fact.id);
    // Told without an end: nothing said about when it stops, so the end stands.
    const endless = await remember();
    expect(endless).toMatchObject({ isDuplicate: true, fact: { id: later.fact.id } });

    expect(await listFacts(userId)).toMatchObject([{ id: later.fact.id, validTo: laterEnd }]);
    const { history } = await memory.clientBus.request(memoryFactsGet, {
      userId,
      id: later.fact.id,
    });
    expect(history).toMatchObject([{ id: first.fact.id, supersededBy: later.fact.id }]);
    const { extractions } = await memory.clientBus.request(memoryExtractionsList, { userId });
    expect(extractions.map((extraction) => extraction.changes[0]?.op)).toEqual([
      'noop',
      'update',
      'noop',
      'add',
    ]);
    expect(extractions[1]?.changes[0]?.factId).toBe(later.fact.id);

    // Undone, the known fact is back with the end it had.
    await memory.clientBus.request(memoryExtractionsUndo, {
      userId,
      id: extractions[1]?.id ?? '',
    });
    expect(await listFacts(userId)).toMatchObject([
      { content: first.fact.content, validTo: first.fact.validTo },
    ]);
  });

  it(
    'records a repeat extraction reads with an end as an update, undone to the endless fact',
    { timeout: 60_000 },
    async () => {
      const userId = randomUUID();
      const known = await memory.clientBus.request(memoryFactsRemember, {
        userId,
        content: 'The user is in Lisbon for work',
      });
      const end = new Date(Date.now() + 3 * 86_400_000).toISOString();
      gateway.fake.onChat(() => ({
        content: JSON.stringify({
          operations: [
            {
              op: 'add',
              content: 'the user is in Lisbon for work.',
              category: 'fact',
              importance: 5,
              validTo: end,
            },
          ],
        }),
      }));
      const said = await append(userId, 'user', "I'm in Lisbon for work until Friday.");
      const reply = await append(userId, 'assistant', 'Enjoy Lisbon.', said.conversationId);
      await publishWork(
        memory.clientBus,
        extractionRequested,
        {
          userId,
          conversationId: said.conversationId,
          runId: randomUUID(),
          turnId: randomUUID(),
          userMessageId: said.id,
          replyMessageId: reply.id,
          recalledIds: [],
        },
        randomUUID(),
      );
      const [ended] = await waitFor(
        async () => {
          const facts = await listFacts(userId);
          return facts[0]?.validTo ? facts : undefined;
        },
        { what: 'the known fact with its end', timeoutMs: 30_000 },
      );
      expect(ended).toMatchObject({ content: known.fact.content, validTo: end });
      expect(ended?.id).not.toBe(known.fact.id);

      const { extractions } = await memory.clientBus.request(memoryExtractionsList, { userId });
      expect(extractions.map((extraction) => extraction.changes)).toEqual([
        [{ op: 'update', factId: ended?.id, text: known.fact.content }],
      ]);
      await memory.clientBus.request(memoryExtractionsUndo, {
        userId,
        id: extractions[0]?.id ?? '',
      });
      expect(await listFacts(userId)).toMatchObject([
        { content: known.fact.content, validTo: null },
      ]);
    },
  );

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

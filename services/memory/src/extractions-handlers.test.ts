import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { catchBusError } from '@jarvis/bus/testing';
import {
  type ExtractionRequested,
  memoryAppend,
  memoryExtractionsList,
  memoryExtractionsUndo,
  memoryFactsGet,
  memoryFactsList,
  memoryFactsRemember,
} from '@jarvis/contracts';
import { type FakeLlmRequest, sentMessages, type TestDatabase } from '@jarvis/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { registerExtractionHandlers } from './extractions-handlers';
import { registerFactHandlers } from './facts-handlers';
import { type MemoryFixture, startMemoryFixture } from './memory-fixture';
import { type ModelGatewayFixture, startModelGatewayFixture } from './model-gateway-fixture';
import { extractFacts, readTurn } from './services/extract-facts';
import { parseValidUntil } from './services/query-dates';

let memory: MemoryFixture;
let gateway: ModelGatewayFixture;
let db: TestDatabase;
let clientBus: Bus;

const SETTINGS = { modelTimeoutMs: 10_000 };
// Phrases of the two prompts: fact extraction, and condensing what "remember this" pointed to.
const EXTRACTION_PHRASE = 'long-term memory of a personal assistant';
const CONDENSE_PHRASE = 'asked a personal assistant to remember a message';

beforeAll(async () => {
  memory = await startMemoryFixture('extractions', [
    registerFactHandlers,
    registerExtractionHandlers,
  ]);
  ({ db, clientBus } = memory);
  gateway = await startModelGatewayFixture(clientBus.namespace, db.url);
}, 120_000);

afterEach(() => {
  gateway.fake.reset();
});

afterAll(async () => {
  await gateway?.stop();
  await memory?.stop();
});

function isAsking(phrase: string) {
  return (request: FakeLlmRequest) => sentMessages(request)[0]?.content.includes(phrase) ?? false;
}

// The model answers extraction with these operations and condensing with this fact.
function answerWith(operations: unknown[], condensed?: string) {
  gateway.fake.onChat((request) => {
    if (isAsking(CONDENSE_PHRASE)(request)) {
      return { content: condensed ? JSON.stringify({ fact: condensed }) : 'Sorry, no.' };
    }
    return { content: JSON.stringify({ operations }) };
  });
}

async function append(
  userId: string,
  conversationId: string | undefined,
  role: 'user' | 'assistant',
  content: string,
) {
  return (
    await clientBus.request(memoryAppend, {
      userId,
      role,
      content,
      ...(conversationId ? { conversationId } : {}),
    })
  ).message;
}

// One turn of a conversation and its extraction, as the worker runs it.
async function extractTurn(
  userId: string,
  conversationId: string | undefined,
  said: string,
  extra: Partial<ExtractionRequested> = {},
) {
  const request = await append(userId, conversationId, 'user', said);
  const reply = await append(userId, request.conversationId, 'assistant', 'Noted.');
  const job: ExtractionRequested = {
    userId,
    conversationId: request.conversationId,
    runId: randomUUID(),
    turnId: randomUUID(),
    userMessageId: request.id,
    replyMessageId: reply.id,
    recalledIds: [],
    ...extra,
  };
  const turn = await readTurn(db.pool, job);
  const outcomes = await extractFacts(clientBus, db.pool, SETTINGS, job, turn);
  return { job, outcomes, conversationId: request.conversationId, userMessageId: request.id };
}

async function openFacts(userId: string) {
  const { facts } = await clientBus.request(memoryFactsList, { userId });
  return facts.map((fact) => fact.content).sort();
}

function list(userId: string, extra: { limit?: number; before?: string } = {}) {
  return clientBus.request(memoryExtractionsList, { userId, ...extra });
}

function undo(userId: string, id: string) {
  return clientBus.request(memoryExtractionsUndo, { userId, id });
}

describe('memory.extractions.list', () => {
  it("lists each turn's changes with the facts' words, newest first, a page at a time", async () => {
    const userId = randomUUID();
    answerWith([
      { op: 'add', content: 'The user works as a nurse.', category: 'fact', importance: 6 },
      { op: 'noop' },
    ]);
    const first = await extractTurn(userId, undefined, 'I work as a nurse at the city hospital');
    const command = await append(
      userId,
      first.conversationId,
      'user',
      'remember that Ana is my sister',
    );

    const page = await list(userId, { limit: 1 });
    expect(page.extractions).toEqual([
      {
        id: command.id,
        turnId: null,
        createdAt: expect.any(String),
        undoneAt: null,
        changes: [{ op: 'add', factId: expect.any(String), text: 'Ana is my sister' }],
      },
    ]);
    const next = await list(userId, { limit: 1, before: page.nextBefore });
    expect(next.nextBefore).toBeUndefined();
    expect(next.extractions).toEqual([
      {
        id: first.job.runId,
        turnId: first.job.turnId,
        createdAt: expect.any(String),
        undoneAt: null,
        changes: [
          { op: 'add', factId: expect.any(String), text: 'The user works as a nurse.' },
          { op: 'noop', factId: null, text: '' },
        ],
      },
    ]);
    expect((await list(randomUUID())).extractions).toEqual([]);
  });

  it('leaves out turns that changed nothing', async () => {
    const userId = randomUUID();
    answerWith([]);
    await extractTurn(userId, undefined, 'What a lovely sunny day it is in Porto today');
    expect((await list(userId)).extractions).toEqual([]);
  });
});

describe('memory.extractions.undo', () => {
  it('closes what a wrong extraction added: the fact leaves the list and stays in history', async () => {
    const userId = randomUUID();
    answerWith([
      { op: 'add', content: 'The user is allergic to cats.', category: 'fact', importance: 7 },
    ]);
    const { job } = await extractTurn(userId, undefined, 'My neighbour is allergic to cats');
    expect(await openFacts(userId)).toEqual(['The user is allergic to cats.']);
    const [change] = (await list(userId)).extractions[0]?.changes ?? [];

    const { extraction } = await undo(userId, job.runId);

    expect(extraction.undoneAt).not.toBeNull();
    expect(await openFacts(userId)).toEqual([]);
    const { fact } = await clientBus.request(memoryFactsGet, { userId, id: change?.factId ?? '' });
    expect(fact.validTo).not.toBeNull();
    expect((await list(userId)).extractions[0]?.undoneAt).toBe(extraction.undoneAt);
  });

  it('brings back the old words of an update, and re-opens what an invalidate closed', async () => {
    const userId = randomUUID();
    const { fact: porto } = await clientBus.request(memoryFactsRemember, {
      userId,
      content: 'The user lives in Porto.',
    });
    const { fact: tea } = await clientBus.request(memoryFactsRemember, {
      userId,
      content: 'The user drinks green tea every morning.',
    });
    answerWith([
      { op: 'update', factId: porto.id, content: 'The user lives in Lisbon.' },
      { op: 'invalidate', factId: tea.id, reason: 'stopped' },
    ]);
    const { job } = await extractTurn(
      userId,
      undefined,
      'I live in Porto and drink green tea every morning, but my friend moved to Lisbon',
    );
    expect(await openFacts(userId)).toEqual(['The user lives in Lisbon.']);
    expect((await list(userId)).extractions[0]?.changes).toEqual([
      { op: 'update', factId: expect.any(String), text: 'The user lives in Lisbon.' },
      { op: 'invalidate', factId: tea.id, text: 'The user drinks green tea every morning.' },
    ]);

    await undo(userId, job.runId);

    expect(await openFacts(userId)).toEqual([
      'The user drinks green tea every morning.',
      'The user lives in Porto.',
    ]);
  });

  it('undoes a "remember" command, once: a second undo is a conflict', async () => {
    const userId = randomUUID();
    const command = await append(userId, undefined, 'user', 'remember that my locker code is 4512');
    expect(await openFacts(userId)).toEqual(['my locker code is 4512']);

    await undo(userId, command.id);
    expect(await openFacts(userId)).toEqual([]);

    expect((await catchBusError(undo(userId, command.id))).code).toBe('conflict');
    expect((await catchBusError(undo(randomUUID(), command.id))).code).toBe('not_found');
  });
});

describe('"remember this" after a long message', () => {
  const LONG =
    `Here is the plan for the garden. ${'We dig the beds in March, sow the beans in April, and water them twice a week. '.repeat(10)}`.trim();

  async function rememberAfterLong(userId: string) {
    const first = await append(userId, undefined, 'user', LONG);
    await append(userId, first.conversationId, 'assistant', 'A fine plan.');
    return first.conversationId;
  }

  it("is condensed by the utility model during the turn's extraction, as an update", async () => {
    const userId = randomUUID();
    const conversationId = await rememberAfterLong(userId);
    answerWith(
      [],
      'The garden plan: dig the beds in March, sow beans in April, water twice a week.',
    );

    const { job, outcomes, userMessageId } = await extractTurn(
      userId,
      conversationId,
      'remember this',
    );

    expect(outcomes).toEqual(['update']);
    expect(await openFacts(userId)).toEqual([
      'The garden plan: dig the beds in March, sow beans in April, water twice a week.',
    ]);
    const { extractions } = await list(userId);
    expect(extractions.map((extraction) => [extraction.id, extraction.turnId])).toEqual([
      [job.runId, job.turnId],
      [userMessageId, job.turnId],
    ]);
    const condensing = gateway.fake.chatRequests().filter(isAsking(CONDENSE_PHRASE));
    expect(sentMessages(condensing[0]).at(-1)?.content).toBe(LONG);
  });

  it('keeps the clipped message when the model gives no usable answer', async () => {
    const userId = randomUUID();
    const conversationId = await rememberAfterLong(userId);
    answerWith([]);

    const { outcomes } = await extractTurn(userId, conversationId, 'save this');

    expect(outcomes).toEqual(['skipped']);
    expect(await openFacts(userId)).toEqual([LONG]);
  });
});

describe('facts that hold for a while', () => {
  it("end when their words say, on the user's calendar, or when the model says", async () => {
    const userId = randomUUID();
    answerWith([
      {
        op: 'add',
        content: 'The user is in Berlin until Friday.',
        category: 'fact',
        importance: 6,
      },
      {
        op: 'add',
        content: 'The user has guests staying over.',
        category: 'fact',
        importance: 5,
        validTo: '2099-01-01T00:00:00+01:00',
      },
      { op: 'add', content: 'The user lives in Porto.', category: 'profile', importance: 8 },
    ]);
    const before = new Date();

    await extractTurn(userId, undefined, 'I am in Berlin until Friday and have guests at home', {
      timeZone: 'Europe/Oslo',
    });

    const { facts } = await clientBus.request(memoryFactsList, { userId });
    const validTo = Object.fromEntries(facts.map((fact) => [fact.content, fact.validTo]));
    expect(validTo).toEqual({
      'The user is in Berlin until Friday.': parseValidUntil(
        'until Friday',
        before,
        'Europe/Oslo',
      )?.toISOString(),
      'The user has guests staying over.': '2098-12-31T23:00:00.000Z',
      'The user lives in Porto.': null,
    });
    const prompt = sentMessages(gateway.fake.chatRequests().find(isAsking(EXTRACTION_PHRASE)));
    expect(prompt.at(-1)?.content).toMatch(/^Current time: .*\(Europe\/Oslo, /);
  });
});

import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { catchBusError, sendRaw } from '@jarvis/bus/testing';
import {
  FACT_CONTENT_MAX_CHARS,
  type MemoryFactsListRequest,
  type MemoryFactsRememberRequest,
  memoryAppend,
  memoryFactsForget,
  memoryFactsGet,
  memoryFactsList,
  memoryFactsRemember,
  memoryFactsUpdate,
  memoryImport,
  memoryRecall,
  memorySearch,
  RECALL_RELEVANT_LIMIT,
} from '@jarvis/contracts';
import { type TestDatabase, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerFactHandlers } from './facts-handlers';
import { type MemoryFixture, startMemoryFixture } from './memory-fixture';

let memory: MemoryFixture;
let db: TestDatabase;
let clientBus: Bus;

beforeAll(async () => {
  memory = await startMemoryFixture('memory-facts', [registerFactHandlers]);
  ({ db, clientBus } = memory);
});

afterAll(async () => {
  await memory?.stop();
});

async function remember(
  userId: string,
  content: string,
  extra: Partial<MemoryFactsRememberRequest> = {},
) {
  return (await clientBus.request(memoryFactsRemember, { userId, content, ...extra })).fact;
}

function get(userId: string, id: string) {
  return clientBus.request(memoryFactsGet, { userId, id });
}

async function list(userId: string, extra: Partial<MemoryFactsListRequest> = {}) {
  return (await clientBus.request(memoryFactsList, { userId, ...extra })).facts;
}

async function searchFacts(userId: string, query: string) {
  return (await clientBus.request(memorySearch, { userId, query, kinds: ['fact'] })).results;
}

async function embeddingCount(factId: string): Promise<number> {
  const { rows } = await db.pool.query<{ count: number }>(
    `SELECT count(*)::int AS count FROM memory.embeddings
     WHERE item_kind = 'fact' AND item_id = $1`,
    [factId],
  );
  return rows[0]?.count ?? 0;
}

async function lastAccessedAt(factId: string): Promise<Date | null> {
  const { rows } = await db.pool.query<{ last_accessed_at: Date | null }>(
    'SELECT last_accessed_at FROM memory.facts WHERE id = $1',
    [factId],
  );
  return rows[0]?.last_accessed_at ?? null;
}

// A search marks the facts it returned after it has answered: the mark, once it is there.
function accessedAt(factId: string): Promise<Date> {
  return waitFor(async () => (await lastAccessedAt(factId)) ?? undefined, {
    what: `fact ${factId} marked as accessed`,
  });
}

const NOT_FOUND = { code: 'not_found', message: 'fact not found' };
const NO_LONGER_VALID = { code: 'conflict', message: 'fact is no longer valid' };

describe('memory.facts.remember and memory.facts.get', () => {
  it('stores a fact at once with defaults, indexed for search', async () => {
    const userId = randomUUID();

    const fact = await remember(userId, '  Prefers green tea over coffee  ');
    const got = await get(userId, fact.id);

    expect(fact).toEqual({
      id: expect.any(String),
      category: 'fact',
      content: 'Prefers green tea over coffee',
      tags: [],
      importance: 5,
      sourceMessageIds: [],
      validFrom: expect.any(String),
      validTo: null,
      supersededBy: null,
      createdAt: expect.any(String),
      updatedAt: fact.createdAt,
    });
    expect(got).toEqual({ fact, history: [], isHistoryTruncated: false });
    expect(await embeddingCount(fact.id)).toBe(1);
    const { rows } = await db.pool.query(
      'SELECT items FROM memory.item_counts WHERE user_id = $1',
      [userId],
    );
    expect(rows).toEqual([{ items: '1' }]);
  });

  it('keeps category, deduplicated tags, importance and provenance from its own messages', async () => {
    const userId = randomUUID();
    const { message } = await clientBus.request(memoryAppend, {
      userId,
      role: 'user',
      content: 'I moved to Lisbon last month.',
    });

    const fact = await remember(userId, 'Lives in Lisbon', {
      category: 'profile',
      tags: ['home', 'home', 'city'],
      importance: 9,
      sourceMessageIds: [message.id, message.id],
    });

    expect(fact).toMatchObject({
      category: 'profile',
      tags: ['home', 'city'],
      importance: 9,
      sourceMessageIds: [message.id],
    });
  });

  it("refuses provenance naming an unknown or another user's message", async () => {
    const userId = randomUUID();
    const { message } = await clientBus.request(memoryAppend, {
      userId: randomUUID(),
      role: 'user',
      content: 'not yours',
    });

    for (const sourceMessageIds of [[message.id], [randomUUID()]]) {
      const error = await catchBusError(remember(userId, 'x', { sourceMessageIds }));
      expect(error).toMatchObject({
        code: 'bad_request',
        message: 'sourceMessageIds: message not found',
      });
    }
    expect(await list(userId, { includeInvalid: true })).toEqual([]);
  });

  it('refuses an end already past, and keeps one ahead', async () => {
    const userId = randomUUID();

    for (const validTo of [new Date(Date.now() - 60_000).toISOString(), '2000-01-01T00:00:00Z']) {
      const error = await catchBusError(remember(userId, 'On holiday', { validTo }));
      expect(error).toMatchObject({
        code: 'bad_request',
        message: expect.stringContaining('validTo'),
      });
    }
    expect(await list(userId, { includeInvalid: true })).toEqual([]);
    const ahead = new Date(Date.now() + 86_400_000).toISOString();
    const fact = await remember(userId, 'On holiday until tomorrow', { validTo: ahead });
    expect(Date.parse(fact.validTo ?? '')).toBe(Date.parse(ahead));
  });
});

describe('memory.facts.update', () => {
  it('creates a successor; the old version is closed, points to it and is kept', async () => {
    const userId = randomUUID();
    const { message } = await clientBus.request(memoryAppend, {
      userId,
      role: 'user',
      content: 'I work at Acme.',
    });
    const old = await remember(userId, 'Works at Acme', {
      category: 'profile',
      tags: ['work'],
      importance: 7,
      sourceMessageIds: [message.id],
    });

    const { fact } = await clientBus.request(memoryFactsUpdate, {
      userId,
      id: old.id,
      content: 'Works at Globex',
    });
    const closed = (await get(userId, old.id)).fact;

    expect(fact).toMatchObject({
      content: 'Works at Globex',
      category: 'profile',
      tags: ['work'],
      importance: 7,
      sourceMessageIds: [message.id],
      validTo: null,
      supersededBy: null,
    });
    expect(fact.id).not.toBe(old.id);
    expect(closed).toEqual({
      ...old,
      validTo: fact.validFrom,
      supersededBy: fact.id,
      updatedAt: expect.any(String),
    });
    expect(await get(userId, fact.id)).toEqual({
      fact,
      history: [closed],
      isHistoryTruncated: false,
    });
    expect(await embeddingCount(old.id)).toBe(0);
    expect(await embeddingCount(fact.id)).toBe(1);
  });

  it('shows the whole chain, newest first, from the current version', async () => {
    const userId = randomUUID();
    const first = await remember(userId, 'Has one cat');
    const second = (
      await clientBus.request(memoryFactsUpdate, { userId, id: first.id, content: 'Has two cats' })
    ).fact;
    const third = (
      await clientBus.request(memoryFactsUpdate, { userId, id: second.id, importance: 8 })
    ).fact;

    const { fact, history } = await get(userId, third.id);
    const fromMiddle = await get(userId, second.id);

    expect(fact).toMatchObject({ content: 'Has two cats', importance: 8 });
    expect(history.map((version) => version.id)).toEqual([second.id, first.id]);
    expect(history.map((version) => version.supersededBy)).toEqual([third.id, second.id]);
    expect(fromMiddle.history.map((version) => version.id)).toEqual([first.id]);
  });

  it('answers conflict for a superseded or forgotten fact, and changes nothing', async () => {
    const userId = randomUUID();
    const superseded = await remember(userId, 'Drives a red car');
    await clientBus.request(memoryFactsUpdate, {
      userId,
      id: superseded.id,
      content: 'Drives a bike',
    });
    const forgotten = await remember(userId, 'Likes jazz');
    await clientBus.request(memoryFactsForget, { userId, id: forgotten.id });

    for (const id of [superseded.id, forgotten.id]) {
      const update = clientBus.request(memoryFactsUpdate, { userId, id, content: 'changed' });
      await expect(update).rejects.toMatchObject(NO_LONGER_VALID);
      const forget = clientBus.request(memoryFactsForget, { userId, id });
      await expect(forget).rejects.toMatchObject(NO_LONGER_VALID);
    }
    expect(await list(userId, { includeInvalid: true })).toHaveLength(3);
  });

  it('lets only one of two concurrent updates of one version succeed', async () => {
    const userId = randomUUID();
    const fact = await remember(userId, 'Favourite colour is blue');

    const outcomes = await Promise.allSettled(
      ['green', 'red'].map((colour) =>
        clientBus.request(memoryFactsUpdate, {
          userId,
          id: fact.id,
          content: `Favourite colour is ${colour}`,
        }),
      ),
    );

    expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(await list(userId)).toHaveLength(1);
  });
});

describe('memory.facts.forget', () => {
  it('closes the fact: gone from listings and search, still readable with validTo', async () => {
    const userId = randomUUID();
    const fact = await remember(userId, 'Allergic to peanuts', { tags: ['health'] });

    const { fact: forgotten } = await clientBus.request(memoryFactsForget, {
      userId,
      id: fact.id,
    });

    expect(forgotten).toEqual({
      ...fact,
      validTo: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(await list(userId)).toEqual([]);
    expect(await list(userId, { includeInvalid: true })).toEqual([forgotten]);
    expect(await get(userId, fact.id)).toEqual({
      fact: forgotten,
      history: [],
      isHistoryTruncated: false,
    });
    expect(await embeddingCount(fact.id)).toBe(0);
    expect(await searchFacts(userId, 'peanuts')).toEqual([]);
  });
});

describe('memory.facts.list', () => {
  const userId = randomUUID();
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    ids.tea = (
      await remember(userId, 'Prefers tea', { category: 'preference', tags: ['drinks'] })
    ).id;
    ids.move = (await remember(userId, 'Decided to move to Porto', { category: 'decision' })).id;
    ids.wine = (
      await remember(userId, 'Prefers red wine', {
        category: 'preference',
        tags: ['drinks', 'evening'],
      })
    ).id;
    ids.old = (
      await remember(userId, 'Prefers coffee', { category: 'preference', tags: ['drinks'] })
    ).id;
    await clientBus.request(memoryFactsForget, { userId, id: ids.old });
  });

  it('lists valid facts newest first, and invalid ones only on request', async () => {
    expect((await list(userId)).map((fact) => fact.id)).toEqual([ids.wine, ids.move, ids.tea]);
    expect((await list(userId, { includeInvalid: true })).map((fact) => fact.id)).toEqual([
      ids.old,
      ids.wine,
      ids.move,
      ids.tea,
    ]);
  });

  it('filters by category and by tag', async () => {
    const preferences = await list(userId, { category: 'preference' });
    const evening = await list(userId, { tag: 'evening' });
    const drinks = await list(userId, { tag: 'drinks', includeInvalid: true });

    expect(preferences.map((fact) => fact.id)).toEqual([ids.wine, ids.tea]);
    expect(evening.map((fact) => fact.id)).toEqual([ids.wine]);
    expect(drinks.map((fact) => fact.id)).toEqual([ids.old, ids.wine, ids.tea]);
    expect(await list(userId, { category: 'reminder' })).toEqual([]);
  });

  it('pages with limit and the before cursor', async () => {
    const first = await list(userId, { limit: 2 });
    const last = first.at(-1);
    const second = await list(userId, { limit: 2, ...(last ? { before: last.createdAt } : {}) });

    expect(first.map((fact) => fact.id)).toEqual([ids.wine, ids.move]);
    expect(second.map((fact) => fact.id)).toEqual([ids.tea]);
  });

  it('never ends a page inside a millisecond the next page would skip', async () => {
    const owner = randomUUID();
    const createdAt: Record<string, string> = {
      oldest: '2026-01-01T00:00:00Z',
      // Three facts in one millisecond, as a batch stored in one transaction can be.
      'tie one': '2026-01-01T00:00:01.123300Z',
      'tie two': '2026-01-01T00:00:01.123200Z',
      'tie three': '2026-01-01T00:00:01.123100Z',
      middle: '2026-01-01T00:00:01.500Z',
      newest: '2026-01-01T00:00:02Z',
    };
    for (const [content, at] of Object.entries(createdAt)) {
      const fact = await remember(owner, content);
      await db.pool.query('UPDATE memory.facts SET created_at = $2 WHERE id = $1', [fact.id, at]);
    }

    const pages: string[][] = [];
    let before: string | undefined;
    for (let page = 0; page < 5; page++) {
      const facts = await list(owner, { limit: 3, ...(before ? { before } : {}) });
      if (facts.length === 0) break;
      pages.push(facts.map((fact) => fact.content));
      before = facts.at(-1)?.createdAt;
    }

    expect(pages).toEqual([['newest', 'middle'], ['tie one', 'tie two', 'tie three'], ['oldest']]);
  });
});

describe('memory.search finds facts', () => {
  it('by a paraphrase, with their metadata, until they are forgotten', async () => {
    const userId = randomUUID();
    await clientBus.request(memoryAppend, {
      userId,
      role: 'user',
      content: 'The weather was lovely at the beach today.',
    });
    const fact = await remember(userId, "Daughter's violin recital is on Friday evening", {
      category: 'reminder',
      tags: ['family'],
      importance: 8,
    });

    const results = await searchFacts(userId, 'when will she play the violin?');

    expect(results).toEqual([
      {
        kind: 'fact',
        id: fact.id,
        score: expect.any(Number),
        text: fact.content,
        metadata: { category: 'reminder', tags: ['family'], importance: 8 },
        createdAt: fact.createdAt,
        conversationId: null,
      },
    ]);
    expect(await accessedAt(fact.id)).toBeInstanceOf(Date);
    const everything = await clientBus.request(memorySearch, { userId, query: 'violin recital' });
    expect(everything.results[0]).toMatchObject({ kind: 'fact', id: fact.id });

    await clientBus.request(memoryFactsForget, { userId, id: fact.id });

    expect(await searchFacts(userId, 'when will she play the violin?')).toEqual([]);
  });

  it('counts as accessed the facts it returns, not the ones it only weighed', async () => {
    const userId = randomUUID();
    const returned = await remember(userId, 'The violin lessons are on Wednesdays with Ms Ortega');
    const weighed = await remember(userId, 'Bought a second-hand violin case in May');

    const results = (
      await clientBus.request(memorySearch, {
        userId,
        query: 'violin lessons on Wednesdays with Ms Ortega',
        kinds: ['fact'],
        limit: 1,
      })
    ).results;

    expect(results.map((result) => result.id)).toEqual([returned.id]);
    // Both were written by the one statement that marks the search's facts, if at all.
    expect(await accessedAt(returned.id)).toBeInstanceOf(Date);
    expect(await lastAccessedAt(weighed.id)).toBeNull();
  });

  it('finds the current version of an updated fact, never the old one', async () => {
    const userId = randomUUID();
    const old = await remember(userId, 'Gym membership at FitLife downtown');
    const { fact } = await clientBus.request(memoryFactsUpdate, {
      userId,
      id: old.id,
      content: 'Gym membership cancelled, now swims at the municipal pool',
    });

    const results = await searchFacts(userId, 'gym membership');

    expect(results.map((result) => result.id)).toEqual([fact.id]);
  });

  it('drops a fact that became invalid while its embedding is still there', async () => {
    const userId = randomUUID();
    const fact = await remember(userId, 'Parks the car on level three');
    // What a search sees when it races an update or a forget.
    await db.pool.query('UPDATE memory.facts SET valid_to = now() WHERE id = $1', [fact.id]);

    expect(await embeddingCount(fact.id)).toBe(1);
    expect(await searchFacts(userId, 'where is the car parked')).toEqual([]);
  });

  it('finds no facts within a conversation: facts belong to none', async () => {
    const userId = randomUUID();
    const { message } = await clientBus.request(memoryAppend, {
      userId,
      role: 'user',
      content: 'hello',
    });
    await remember(userId, 'Owns a sailing boat named Aurora');

    const { results } = await clientBus.request(memorySearch, {
      userId,
      query: 'sailing boat',
      kinds: ['fact'],
      conversationId: message.conversationId,
    });

    expect(results).toEqual([]);
  });
});

describe('request validation at the edge', () => {
  const userId = randomUUID();

  it.each([
    ['empty content', { content: '' }, 'content'],
    ['blank content', { content: '   ' }, 'content'],
    ['content over the limit', { content: 'x'.repeat(FACT_CONTENT_MAX_CHARS + 1) }, 'content'],
    ['importance 0', { importance: 0 }, 'importance'],
    ['importance 11', { importance: 11 }, 'importance'],
    ['a fractional importance', { importance: 2.5 }, 'importance'],
    ['an unknown category', { category: 'gossip' }, 'category'],
    ['more than 32 tags', { tags: Array.from({ length: 33 }, (_, i) => `t${i}`) }, 'tags'],
    ['an empty tag', { tags: [''] }, 'tags.0'],
    ['a source that is not a uuid', { sourceMessageIds: ['nope'] }, 'sourceMessageIds.0'],
    ['a userId that is not a uuid', { userId: 'nope' }, 'userId'],
  ])('answers bad_request to a remember with %s', async (_label, override, field) => {
    const reply = await sendRaw(clientBus, 'memory.facts.remember', {
      userId,
      content: 'ok',
      ...override,
    });

    expect(reply).toEqual({
      ok: false,
      error: { code: 'bad_request', message: expect.stringMatching(new RegExp(`^${field}: `)) },
    });
  });

  it('accepts content of exactly the limit', async () => {
    const fact = await remember(userId, 'y'.repeat(FACT_CONTENT_MAX_CHARS), { importance: 10 });

    expect(fact.content).toHaveLength(FACT_CONTENT_MAX_CHARS);
  });

  it.each([
    ['memory.facts.update', { id: randomUUID(), importance: 0 }, /^importance: /],
    ['memory.facts.update', { id: randomUUID(), content: '' }, /^content: /],
    ['memory.facts.update', { id: randomUUID() }, /^\(root\): give at least one of/],
    ['memory.facts.get', { id: 'nope' }, /^id: /],
    ['memory.facts.forget', {}, /^id: /],
    ['memory.facts.list', { limit: 201 }, /^limit: /],
    ['memory.facts.list', { limit: 0 }, /^limit: /],
    ['memory.facts.list', { before: 'yesterday' }, /^before: /],
    ['memory.facts.list', { category: 'gossip' }, /^category: /],
  ])('answers bad_request to %s with %j', async (subject, body, message) => {
    const reply = await sendRaw(clientBus, subject, { userId, ...body });

    expect(reply).toEqual({
      ok: false,
      error: { code: 'bad_request', message: expect.stringMatching(message) },
    });
  });

  it('stores nothing for a rejected remember', async () => {
    const owner = randomUUID();
    await sendRaw(clientBus, 'memory.facts.remember', {
      userId: owner,
      content: 'x',
      importance: 11,
    });

    const { rows } = await db.pool.query('SELECT 1 FROM memory.facts WHERE user_id = $1', [owner]);
    expect(rows).toEqual([]);
  });
});

describe("another user's facts", () => {
  const owner = randomUUID();
  const intruder = randomUUID();
  let factId: string;

  beforeAll(async () => {
    const fact = await remember(owner, 'The safe code is 4711', { tags: ['secret'] });
    factId = (
      await clientBus.request(memoryFactsUpdate, { userId: owner, id: fact.id, importance: 9 })
    ).fact.id;
    await remember(intruder, 'My own fact about safes');
  });

  it('answer every request naming them exactly like a missing fact', async () => {
    const attempts = [
      () => get(intruder, factId),
      () => clientBus.request(memoryFactsUpdate, { userId: intruder, id: factId, content: 'x' }),
      () => clientBus.request(memoryFactsForget, { userId: intruder, id: factId }),
    ];

    for (const attempt of attempts) {
      await expect(attempt()).rejects.toMatchObject(NOT_FOUND);
    }
    await expect(get(intruder, randomUUID())).rejects.toMatchObject(NOT_FOUND);
  });

  it('never show up in listings or search', async () => {
    const listed = await list(intruder, { includeInvalid: true, tag: 'secret' });
    const all = await list(intruder, { includeInvalid: true });
    const found = await clientBus.request(memorySearch, { userId: intruder, query: 'safe code' });

    expect(listed).toEqual([]);
    expect(all.map((fact) => fact.content)).toEqual(['My own fact about safes']);
    expect(found.results.map((result) => result.text)).toEqual(['My own fact about safes']);
  });

  it('stay untouched', async () => {
    const { fact, history } = await get(owner, factId);

    expect(fact).toMatchObject({ content: 'The safe code is 4711', importance: 9, validTo: null });
    expect(history).toHaveLength(1);
  });
});

describe('memory.recall', () => {
  it('brings a fact the user stated, however many messages share its words', async () => {
    const userId = randomUUID();
    // A long chat history full of other people's cats and their names.
    await clientBus.request(memoryImport, {
      userId,
      conversationId: randomUUID(),
      batchKey: 'neighbours',
      firstIndex: 0,
      messages: Array.from({ length: 60 }, (_, index) => ({
        role: 'user' as const,
        content: `The neighbours named their cat Whiskers ${index}: what a name for a cat!`,
        createdAt: new Date(Date.UTC(2024, 0, 1 + index)).toISOString(),
      })),
    });
    const fact = await remember(userId, "The user's cat is a grey tabby called Biscotti.");
    const { message } = await clientBus.request(memoryAppend, {
      userId,
      role: 'user',
      content: 'What is the name of our cat?',
    });

    const { results } = await clientBus.request(memorySearch, {
      userId,
      query: message.content,
      limit: RECALL_RELEVANT_LIMIT,
    });
    const recall = await clientBus.request(memoryRecall, {
      userId,
      conversationId: message.conversationId,
      messageId: message.id,
      query: message.content,
      recentLimit: 5,
    });

    // Ranked with everything else, the fact is crowded out of what a prompt has room for.
    expect(results.map((result) => result.id)).not.toContain(fact.id);
    expect(recall.relevant).toContainEqual(
      expect.objectContaining({ kind: 'fact', id: fact.id, text: fact.content }),
    );
    expect(recall.relevant.length).toBeLessThanOrEqual(RECALL_RELEVANT_LIMIT);
  });
});

import { randomUUID } from 'node:crypto';
import { type Fact, MemoryFactsListResponse, MemoryFactsUpdateResponse } from '@jarvis/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  badRequest,
  type Reply,
  type RouterFixture,
  startRouterFixture,
  type TestUser,
} from './router-fixture';

let harness: RouterFixture;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  harness = await startRouterFixture('/v1/memory/facts', { services: ['memory'] });
  ({ alice, bob } = harness);
});

afterAll(async () => {
  await harness?.stop();
});

const call: RouterFixture['call'] = (method, route, options) =>
  harness.call(method, route, options);

// The reply's fact, checked against the contract (a remember's reply also says isDuplicate).
function factOf(reply: Reply): Fact {
  return MemoryFactsUpdateResponse.parse(reply.body).fact;
}

const NOT_FOUND = {
  status: 404,
  body: { error: { code: 'not_found', message: 'fact not found' } },
};

describe('authentication', () => {
  const id = randomUUID();

  it.each([
    ['GET', '/'],
    ['GET', `/${id}`],
    ['POST', '/'],
    ['PATCH', `/${id}`],
    ['DELETE', `/${id}`],
  ])('answers 401 to %s %s without a key', async (method, route) => {
    const reply = await call(method, route, {
      body: method === 'GET' || method === 'DELETE' ? undefined : {},
    });

    expect(reply.status).toBe(401);
    expect(reply.body).toEqual({
      error: { code: 'unauthorized', message: expect.stringContaining('missing API key') },
    });
  });

  it('answers 401 to a key that was never issued', async () => {
    const reply = await call('GET', '/', { key: 'jv_thisKeyWasNeverIssuedToAnyoneAtAll' });

    expect(reply.status).toBe(401);
  });
});

describe('a fact round trip', () => {
  it('remembers, reads, updates, lists and forgets', async () => {
    const key = alice.key;

    const remembered = await call('POST', '/', {
      key,
      body: { content: 'Prefers window seats', category: 'preference', tags: ['travel'] },
    });
    expect(remembered).toEqual({
      status: 201,
      body: {
        fact: {
          id: expect.any(String),
          category: 'preference',
          content: 'Prefers window seats',
          tags: ['travel'],
          importance: 5,
          sourceMessageIds: [],
          validFrom: expect.any(String),
          validTo: null,
          supersededBy: null,
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
        },
        isDuplicate: false,
      },
    });
    const first = factOf(remembered);

    const read = await call('GET', `/${first.id}`, { key });
    expect(read).toEqual({
      status: 200,
      body: { fact: first, history: [], isHistoryTruncated: false },
    });

    const updated = await call('PATCH', `/${first.id}`, {
      key,
      body: { content: 'Prefers aisle seats', importance: 7 },
    });
    expect(updated).toMatchObject({
      status: 200,
      body: { fact: { content: 'Prefers aisle seats', importance: 7, tags: ['travel'] } },
    });
    const second = factOf(updated);
    expect(second.id).not.toBe(first.id);

    const withHistory = await call('GET', `/${second.id}`, { key });
    expect(withHistory).toMatchObject({
      status: 200,
      body: {
        fact: { id: second.id, validTo: null },
        history: [{ id: first.id, supersededBy: second.id, validTo: expect.any(String) }],
      },
    });

    const listed = await call('GET', '/?category=preference&tag=travel&limit=10', { key });
    expect(listed.status).toBe(200);
    expect(MemoryFactsListResponse.parse(listed.body).facts.map((fact) => fact.id)).toEqual([
      second.id,
    ]);

    const forgotten = await call('DELETE', `/${second.id}`, { key });
    expect(forgotten).toMatchObject({
      status: 200,
      body: { fact: { id: second.id, validTo: expect.any(String), supersededBy: null } },
    });
    expect(await call('GET', '/', { key })).toEqual({ status: 200, body: { facts: [] } });
    const everything = await call('GET', '/?includeInvalid=true', { key });
    expect(everything).toMatchObject({
      status: 200,
      body: { facts: [{ id: second.id }, { id: first.id }] },
    });
    const older = await call('GET', `/?includeInvalid=true&before=${second.createdAt}`, { key });
    expect(older).toMatchObject({ status: 200, body: { facts: [{ id: first.id }] } });

    const again = await call('DELETE', `/${second.id}`, { key });
    expect(again).toEqual({
      status: 409,
      body: { error: { code: 'conflict', message: 'fact is no longer valid' } },
    });
    expect(await call('GET', `/${randomUUID()}`, { key })).toEqual(NOT_FOUND);
  });
});

describe('input validation', () => {
  const id = randomUUID();

  it.each([
    ['POST without content', 'POST', '/', { tags: ['x'] }, /^content: /],
    ['POST with blank content', 'POST', '/', { content: '  ' }, /^content: /],
    ['POST with long content', 'POST', '/', { content: 'x'.repeat(2_001) }, /^content: /],
    ['POST with importance 11', 'POST', '/', { content: 'x', importance: 11 }, /^importance: /],
    ['POST with importance "5"', 'POST', '/', { content: 'x', importance: '5' }, /^importance: /],
    ['POST with a category', 'POST', '/', { content: 'x', category: 'rumour' }, /^category: /],
    ['POST naming a userId', 'POST', '/', { content: 'x', userId: randomUUID() }, /userId/],
    ['PATCH with nothing to change', 'PATCH', `/${id}`, {}, /give at least one of/],
    ['PATCH with importance 0', 'PATCH', `/${id}`, { importance: 0 }, /^importance: /],
    ['PATCH naming an id', 'PATCH', `/${id}`, { id, content: 'x' }, /id/],
    ['PATCH with a bad id', 'PATCH', '/nope', { content: 'x' }, /^id: /],
    ['GET with a bad id', 'GET', '/nope', undefined, /^id: /],
    ['DELETE with a bad id', 'DELETE', '/nope', undefined, /^id: /],
    ['GET list with limit 201', 'GET', '/?limit=201', undefined, /^limit: /],
    ['GET list with a text limit', 'GET', '/?limit=many', undefined, /^limit: /],
    [
      'GET list with includeInvalid=yes',
      'GET',
      '/?includeInvalid=yes',
      undefined,
      /^includeInvalid: /,
    ],
    ['GET list with a bad before', 'GET', '/?before=yesterday', undefined, /^before: /],
    ['GET list with a category', 'GET', '/?category=rumour', undefined, /^category: /],
    ['GET list with two tags', 'GET', '/?tag=a&tag=b', undefined, /^tag: /],
    ['GET list naming a userId', 'GET', `/?userId=${randomUUID()}`, undefined, /userId/],
  ])('answers 400 to %s', async (_label, method, route, body, message) => {
    expect(await call(method, route, { key: alice.key, body })).toEqual(badRequest(message));
  });

  it('answers 400 to a remember without a JSON body', async () => {
    const reply = await call('POST', '/', { key: alice.key });

    expect(reply).toEqual(badRequest(/expected a JSON body/));
  });
});

describe('isolation between users', () => {
  it("takes the user from the key only, and answers 404 for another user's fact", async () => {
    const secret = factOf(
      await call('POST', '/', { key: alice.key, body: { content: 'Hides the key under the mat' } }),
    );

    expect(await call('GET', `/${secret.id}`, { key: bob.key })).toEqual(NOT_FOUND);
    expect(
      await call('PATCH', `/${secret.id}`, { key: bob.key, body: { content: 'mine now' } }),
    ).toEqual(NOT_FOUND);
    expect(await call('DELETE', `/${secret.id}`, { key: bob.key })).toEqual(NOT_FOUND);
    expect(await call('GET', '/?includeInvalid=true', { key: bob.key })).toEqual({
      status: 200,
      body: { facts: [] },
    });

    const own = await call('GET', `/${secret.id}`, { key: alice.key });
    expect(own).toMatchObject({
      status: 200,
      body: { fact: { content: 'Hides the key under the mat', validTo: null } },
    });
  });
});

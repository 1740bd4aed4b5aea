import { randomUUID } from 'node:crypto';
import { MemoryDocumentsIngestResponse } from '@jarvis/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser } from '../services/api-keys';
import {
  badRequest,
  type RouterFixture,
  startRouterFixture,
  type TestUser,
} from './router-fixture';

let harness: RouterFixture;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  harness = await startRouterFixture('/v1/memory/documents', { services: ['memory'] });
  ({ alice, bob } = harness);
});

afterAll(async () => {
  await harness?.stop();
});

const call: RouterFixture['call'] = (method, route, options) =>
  harness.call(method, route, options);

const NOT_FOUND = {
  status: 404,
  body: { error: { code: 'not_found', message: 'document not found' } },
};

function maxDocumentBytes(): number {
  return (harness.bus.nc.info?.max_payload ?? 1_048_576) - 128 * 1_024;
}

describe('authentication', () => {
  it.each([
    ['POST', '/'],
    ['GET', '/'],
    ['GET', `/${randomUUID()}`],
    ['DELETE', `/${randomUUID()}`],
  ])('answers 401 to %s %s without a key', async (method, route) => {
    const reply = await call(method, route, { body: method === 'POST' ? {} : undefined });

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

describe('a document round trip', () => {
  it('ingests, lists, reads and deletes', async () => {
    const key = alice.key;
    const content =
      '<h1>Wi-Fi</h1><p>The guest network is <b>jarvis-guest</b>, password on the fridge.</p>';

    const ingested = await call('POST', '/', {
      key,
      body: {
        title: 'House manual',
        contentType: 'text/html',
        content,
        source: 'https://wiki.local/house',
        metadata: { floor: 2 },
      },
    });
    expect(ingested).toEqual({
      status: 201,
      body: {
        document: {
          id: expect.any(String),
          title: 'House manual',
          contentType: 'text/html',
          source: 'https://wiki.local/house',
          metadata: { floor: 2 },
          sizeChars: expect.any(Number),
          chunkCount: 1,
          mediaType: 'text/html',
          chunks: 1,
          createdAt: expect.any(String),
        },
      },
    });
    const { document } = MemoryDocumentsIngestResponse.parse(ingested.body);

    const listed = await call('GET', '/?limit=10', { key });
    expect(listed).toMatchObject({
      status: 200,
      body: { documents: [{ id: document.id, title: 'House manual', chunkCount: 1 }] },
    });

    const read = await call('GET', `/${document.id}`, { key });
    expect(read).toEqual({
      status: 200,
      body: {
        document,
        chunks: [
          {
            index: 0,
            content: 'Wi-Fi\n\nThe guest network is jarvis-guest, password on the fridge.',
            tokenCount: 13,
          },
        ],
        isTruncated: false,
      },
    });
    const later = await call('GET', `/${document.id}?fromIndex=1`, { key });
    expect(later).toMatchObject({ status: 200, body: { chunks: [], isTruncated: false } });

    const deleted = await call('DELETE', `/${document.id}`, { key });
    expect(deleted).toEqual({ status: 204, body: undefined });
    expect(await call('GET', `/${document.id}`, { key })).toEqual(NOT_FOUND);
    expect(await call('DELETE', `/${document.id}`, { key })).toEqual(NOT_FOUND);
    expect(await call('GET', '/', { key })).toEqual({ status: 200, body: { documents: [] } });
  });
});

describe('input validation', () => {
  const valid = { title: 'T', contentType: 'text/plain', content: 'Some text.' };

  it.each([
    ['an empty title', { ...valid, title: '' }, /^title: /],
    ['no title', { contentType: 'text/plain', content: 'x' }, /^title: /],
    ['an unknown contentType', { ...valid, contentType: 'application/pdf' }, /^contentType: /],
    ['empty content', { ...valid, content: '' }, /^content: /],
    ['a userId', { ...valid, userId: randomUUID() }, /userId/],
    ['metadata that is not an object', { ...valid, metadata: 'x' }, /^metadata: /],
  ])('answers 400 to a POST with %s', async (_label, body, message) => {
    expect(await call('POST', '/', { key: alice.key, body })).toEqual(badRequest(message));
  });

  it.each([
    ['GET with a limit over 200', 'GET', '/?limit=201', /^limit: /],
    ['GET with a text limit', 'GET', '/?limit=many', /^limit: /],
    ['GET of an id that is not a uuid', 'GET', '/not-a-uuid', /^id: /],
    ['GET with a negative fromIndex', 'GET', `/${randomUUID()}?fromIndex=-1`, /^fromIndex: /],
    ['DELETE of an id that is not a uuid', 'DELETE', '/42', /^id: /],
  ])('answers 400 to %s', async (_label, method, route, message) => {
    expect(await call(method, route, { key: alice.key })).toEqual(badRequest(message));
  });

  it('answers 400 to a POST without a JSON body', async () => {
    expect(await call('POST', '/', { key: alice.key })).toEqual(badRequest(/expected a JSON body/));
  });

  it("passes the memory service's own 400 through: HTML without text", async () => {
    const body = { ...valid, contentType: 'text/html', content: '<script>only()</script>' };

    expect(await call('POST', '/', { key: alice.key, body })).toEqual(
      badRequest('document has no text'),
    );
  });

  it('answers 413 to a document too large for one NATS message, and stores nothing', async () => {
    const limit = maxDocumentBytes();
    const content = 'word '.repeat(Math.ceil(limit / 5));

    const reply = await call('POST', '/', { key: bob.key, body: { ...valid, content } });

    expect(reply).toEqual({
      status: 413,
      body: {
        error: { code: 'payload_too_large', message: `document too large: at most ${limit} bytes` },
      },
    });
    expect(await call('GET', '/', { key: bob.key })).toEqual({
      status: 200,
      body: { documents: [] },
    });
  });

  it('accepts a document just under that limit', async () => {
    const overhead = JSON.stringify({ ...valid, content: '' }).length;
    const content = 'word '.repeat(Math.floor((maxDocumentBytes() - overhead) / 5));
    const userKey = (await createUser(harness.db.pool, 'carol')).apiKey;

    const reply = await call('POST', '/', { key: userKey, body: { ...valid, content } });

    expect(reply).toMatchObject({ status: 201, body: { document: { title: 'T' } } });
  });
});

describe('isolation between users', () => {
  it("takes the user from the key only, and answers 404 for another user's document", async () => {
    const ingested = await call('POST', '/', {
      key: alice.key,
      body: { title: 'Diary', contentType: 'text/plain', content: 'Dear diary, today…' },
    });
    const { document } = MemoryDocumentsIngestResponse.parse(ingested.body);

    expect(await call('GET', `/${document.id}`, { key: bob.key })).toEqual(NOT_FOUND);
    expect(await call('DELETE', `/${document.id}`, { key: bob.key })).toEqual(NOT_FOUND);
    const listed = await call('GET', `/?userId=${alice.id}`, { key: bob.key });
    expect(listed).toEqual({ status: 200, body: { documents: [] } });

    const own = await call('GET', `/${document.id}`, { key: alice.key });
    expect(own).toMatchObject({ status: 200, body: { chunks: [{ index: 0 }] } });
  });
});

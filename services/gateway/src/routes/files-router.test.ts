import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  harness = await startRouterFixture('/v1/memory/files', { services: ['memory'] });
  ({ alice, bob } = harness);
});

afterAll(async () => {
  await harness?.stop();
});

const call: RouterFixture['call'] = (method, route, options) =>
  harness.call(method, route, options);

const NOT_FOUND = {
  status: 404,
  body: { error: { code: 'not_found', message: 'file not found' } },
};

describe('authentication', () => {
  it.each([
    ['GET', '/?prefix=notes/'],
    ['GET', '/content?path=a.md'],
    ['PUT', '/content'],
    ['PATCH', '/content'],
    ['DELETE', '/content?path=a.md'],
    ['GET', '/history?path=a.md'],
    ['POST', '/restore'],
    ['GET', '/grep?pattern=a'],
    ['GET', '/search?q=a'],
  ])('answers 401 to %s %s without a key', async (method, route) => {
    const reply = await call(method, route, { body: method === 'GET' ? undefined : {} });

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

describe('a file round trip', () => {
  it('writes, reads, edits, lists, greps, searches, restores and deletes', async () => {
    const key = alice.key;
    const path = 'notes/groceries.md';

    const written = await call('PUT', '/content', {
      key,
      body: { path: `/${path}`, content: 'eggs\nmilk\nbread', tags: ['shopping'] },
    });
    expect(written).toEqual({
      status: 200,
      body: {
        file: {
          path,
          version: 1,
          size: 15,
          tags: ['shopping'],
          metadata: {},
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
        },
      },
    });

    const read = await call('GET', `/content?path=${encodeURIComponent(path)}`, { key });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ file: { path, version: 1, content: 'eggs\nmilk\nbread' } });

    const edited = await call('PATCH', '/content', {
      key,
      body: { path, old: 'milk', new: 'oat milk' },
    });
    expect(edited).toMatchObject({ status: 200, body: { file: { version: 2 } } });

    const listed = await call('GET', '/?prefix=notes/', { key });
    expect(listed).toMatchObject({
      status: 200,
      body: { files: [{ path, version: 2, tags: ['shopping'] }], isTruncated: false },
    });

    const grepped = await call('GET', '/grep?pattern=MILK&prefix=notes', { key });
    expect(grepped).toEqual({
      status: 200,
      body: { matches: [{ path, line: 2, text: 'oat milk' }], isTruncated: false },
    });
    const regex = await call('GET', `/grep?pattern=${encodeURIComponent('^b.*d$')}&isRegex=true`, {
      key,
    });
    expect(regex.body).toEqual({
      matches: [{ path, line: 3, text: 'bread' }],
      isTruncated: false,
    });

    const found = await call('GET', '/search?q=bread&limit=5', { key });
    expect(found).toMatchObject({ status: 200, body: { results: [{ path, version: 2 }] } });

    const restored = await call('POST', '/restore', { key, body: { path, version: 1 } });
    expect(restored).toMatchObject({ status: 200, body: { file: { version: 3 } } });
    const history = await call('GET', `/history?path=${path}`, { key });
    expect(history).toMatchObject({
      status: 200,
      body: { versions: [{ version: 3, isCurrent: true }, { version: 2 }, { version: 1 }] },
    });
    const old = await call('GET', `/content?path=${path}&version=2`, { key });
    expect(old.body).toMatchObject({ file: { version: 2, content: 'eggs\noat milk\nbread' } });

    const deleted = await call('DELETE', `/content?path=${path}`, { key });
    expect(deleted).toEqual({ status: 204, body: undefined });
    expect(await call('GET', `/content?path=${path}`, { key })).toEqual(NOT_FOUND);
    expect(await call('DELETE', `/content?path=${path}`, { key })).toEqual(NOT_FOUND);
  });
});

describe('input validation', () => {
  it.each([
    [
      'PUT with a parent segment',
      'PUT',
      '/content',
      { path: '../x.md', content: 'x' },
      'path: must not contain . or .. segments',
    ],
    ['PUT with a backslash', 'PUT', '/content', { path: 'a\\b.md', content: 'x' }, /^path: /],
    ['PUT without a path', 'PUT', '/content', { content: 'x' }, /^path: /],
    [
      'PUT naming a userId',
      'PUT',
      '/content',
      { path: 'a.md', content: 'x', userId: 'someone' },
      /userId/,
    ],
    ['PATCH without new', 'PATCH', '/content', { path: 'a.md', old: 'x' }, /^new: /],
    [
      'POST restore with a text version',
      'POST',
      '/restore',
      { path: 'a.md', version: '1' },
      /^version: /,
    ],
    [
      'GET content with an empty segment',
      'GET',
      '/content?path=notes//a.md',
      undefined,
      /^path: must not contain empty segments/,
    ],
    ['GET content without a path', 'GET', '/content', undefined, /^path: /],
    ['GET content with two paths', 'GET', '/content?path=a.md&path=b.md', undefined, /^path: /],
    ['GET content with version 0', 'GET', '/content?path=a.md&version=0', undefined, /^version: /],
    ['DELETE with a dot segment', 'DELETE', '/content?path=./a.md', undefined, /^path: /],
    ['GET history with a trailing slash', 'GET', '/history?path=notes/', undefined, /^path: /],
    [
      'GET grep with a long pattern',
      'GET',
      `/grep?pattern=${'x'.repeat(201)}`,
      undefined,
      /^pattern: /,
    ],
    [
      'GET grep with a bad isRegex',
      'GET',
      '/grep?pattern=x&isRegex=maybe',
      undefined,
      /^isRegex: /,
    ],
    [
      'GET grep with an invalid regex',
      'GET',
      '/grep?pattern=(x&isRegex=true',
      undefined,
      /^pattern: invalid regular expression/,
    ],
    [
      'GET grep with a regex too complex for Postgres',
      'GET',
      `/grep?isRegex=true&pattern=${encodeURIComponent('(a{1,255}){1,255}')}`,
      undefined,
      /^pattern: a repetition may repeat at most 100 times/,
    ],
    ['GET search without q', 'GET', '/search', undefined, /^q: /],
    ['GET search with a text limit', 'GET', '/search?q=x&limit=many', undefined, /^limit: /],
    ['GET search with a limit over 50', 'GET', '/search?q=x&limit=51', undefined, /^limit: /],
  ])('answers 400 to %s', async (_label, method, route, body, message) => {
    expect(await call(method, route, { key: alice.key, body })).toEqual(badRequest(message));
  });

  it('answers 400 to a write without a JSON body', async () => {
    const reply = await call('PUT', '/content', { key: alice.key });

    expect(reply).toEqual(badRequest(/expected a JSON body/));
  });

  it("passes the memory service's own 400s through, such as an ambiguous edit", async () => {
    await call('PUT', '/content', { key: alice.key, body: { path: 'twice.md', content: 'a a' } });

    const reply = await call('PATCH', '/content', {
      key: alice.key,
      body: { path: 'twice.md', old: 'a', new: 'b' },
    });

    expect(reply).toEqual(badRequest(/^old: text is ambiguous/));
  });
});

describe('isolation between users', () => {
  it("takes the user from the key only, and answers 404 for another user's file", async () => {
    await call('PUT', '/content', {
      key: alice.key,
      body: { path: 'private/diary.md', content: 'dear diary' },
    });

    expect(await call('GET', '/content?path=private/diary.md', { key: bob.key })).toEqual(
      NOT_FOUND,
    );
    expect(await call('GET', '/history?path=private/diary.md', { key: bob.key })).toEqual(
      NOT_FOUND,
    );
    expect(
      await call('POST', '/restore', {
        key: bob.key,
        body: { path: 'private/diary.md', version: 1 },
      }),
    ).toEqual(NOT_FOUND);
    expect(await call('DELETE', '/content?path=private/diary.md', { key: bob.key })).toEqual(
      NOT_FOUND,
    );
    const listed = await call('GET', `/?prefix=private/&userId=${alice.id}`, { key: bob.key });
    expect(listed).toEqual({ status: 200, body: { files: [], isTruncated: false } });
    const found = await call('GET', `/search?q=diary&userId=${alice.id}`, { key: bob.key });
    expect(found).toEqual({ status: 200, body: { results: [] } });
    const grepped = await call('GET', '/grep?pattern=diary', { key: bob.key });
    expect(grepped).toEqual({ status: 200, body: { matches: [], isTruncated: false } });

    const own = await call('GET', '/content?path=private/diary.md', { key: alice.key });
    expect(own).toMatchObject({ status: 200, body: { file: { content: 'dear diary' } } });
  });
});

import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { catchBusError, sendRaw } from '@jarvis/bus/testing';
import {
  FILE_CONTENT_MAX_CHARS,
  FILE_GREP_MAX_BYTES,
  FILE_GREP_MAX_FILES,
  FILE_GREP_MAX_MATCHES,
  type MemoryFilesWriteRequest,
  memoryFilesDelete,
  memoryFilesEdit,
  memoryFilesGrep,
  memoryFilesHistory,
  memoryFilesList,
  memoryFilesRead,
  memoryFilesRestore,
  memoryFilesSearch,
  memoryFilesWrite,
  memorySearch,
} from '@jarvis/contracts';
import type { TestDatabase } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerFileHandlers } from './files-handlers';
import { type MemoryFixture, startMemoryFixture } from './memory-fixture';

let memory: MemoryFixture;
let db: TestDatabase;
let clientBus: Bus;

beforeAll(async () => {
  memory = await startMemoryFixture('memory-files', [registerFileHandlers]);
  ({ db, clientBus } = memory);
});

afterAll(async () => {
  await memory?.stop();
});

function write(
  userId: string,
  path: string,
  content: string,
  extra: Partial<MemoryFilesWriteRequest> = {},
) {
  return clientBus.request(memoryFilesWrite, { userId, path, content, ...extra });
}

function read(userId: string, path: string, version?: number) {
  return clientBus.request(memoryFilesRead, {
    userId,
    path,
    ...(version === undefined ? {} : { version }),
  });
}

function history(userId: string, path: string) {
  return clientBus.request(memoryFilesHistory, { userId, path });
}

const NOT_FOUND = { code: 'not_found', message: 'file not found' };

describe('memory.files.write and memory.files.read', () => {
  it('stores a new file as version 1 and reads it back', async () => {
    const userId = randomUUID();

    const { file: written } = await write(userId, 'notes/todo.md', '# Todo\n- café', {
      tags: ['todo', 'todo', 'list'],
      metadata: { source: 'agent' },
    });
    const { file } = await read(userId, 'notes/todo.md');

    expect(written).toEqual({
      path: 'notes/todo.md',
      version: 1,
      size: Buffer.byteLength('# Todo\n- café'),
      tags: ['todo', 'list'],
      metadata: { source: 'agent' },
      createdAt: expect.any(String),
      updatedAt: written.createdAt,
    });
    expect(written).not.toHaveProperty('content');
    expect(file).toEqual({ ...written, content: '# Todo\n- café' });
  });

  it('treats one leading slash as naming the same relative file', async () => {
    const userId = randomUUID();
    await write(userId, '/episodes/2026-11-21/run-1.md', 'ran');

    const { file } = await read(userId, 'episodes/2026-11-21/run-1.md');

    expect(file.path).toBe('episodes/2026-11-21/run-1.md');
    expect(file.content).toBe('ran');
  });

  it('keeps tags and metadata on an overwrite that leaves them out, and clears them on request', async () => {
    const userId = randomUUID();
    await write(userId, 'a.md', 'one', { tags: ['keep'], metadata: { n: 1 } });

    const { file: kept } = await write(userId, 'a.md', 'two');
    const { file: cleared } = await write(userId, 'a.md', 'three', { tags: [], metadata: {} });

    expect(kept).toMatchObject({ version: 2, tags: ['keep'], metadata: { n: 1 } });
    expect(cleared).toMatchObject({ version: 3, tags: [], metadata: {} });
  });

  it('gives concurrent writes to one new path consecutive versions of one file', async () => {
    const userId = randomUUID();

    const replies = await Promise.all(
      Array.from({ length: 5 }, (_, index) => write(userId, 'race.md', `writer ${index}`)),
    );

    expect(replies.map((reply) => reply.file.version).sort()).toEqual([1, 2, 3, 4, 5]);
    const { versions } = await history(userId, 'race.md');
    expect(versions.map((entry) => entry.version)).toEqual([5, 4, 3, 2, 1]);
  });

  it('accepts content of exactly the limit', async () => {
    const userId = randomUUID();
    const content = 'y'.repeat(FILE_CONTENT_MAX_CHARS);

    await write(userId, 'big.txt', content);

    expect((await read(userId, 'big.txt')).file.content).toHaveLength(FILE_CONTENT_MAX_CHARS);
  });
});

describe('versions: memory.files.history and memory.files.restore', () => {
  it('keeps every overwritten version, newest first, readable by number', async () => {
    const userId = randomUUID();
    await write(userId, 'plan.md', 'first', { tags: ['v1'] });
    await write(userId, 'plan.md', 'second', { tags: ['v2'] });
    await write(userId, 'plan.md', 'third');

    const { versions, isTruncated } = await history(userId, 'plan.md');

    expect(isTruncated).toBe(false);
    expect(versions).toEqual([
      { version: 3, size: 5, tags: ['v2'], createdAt: expect.any(String), isCurrent: true },
      { version: 2, size: 6, tags: ['v2'], createdAt: expect.any(String), isCurrent: false },
      { version: 1, size: 5, tags: ['v1'], createdAt: expect.any(String), isCurrent: false },
    ]);
    const { file: first } = await read(userId, 'plan.md', 1);
    expect(first).toMatchObject({ version: 1, content: 'first', tags: ['v1'] });
    expect((await read(userId, 'plan.md', 3)).file.content).toBe('third');
    await expect(read(userId, 'plan.md', 9)).rejects.toMatchObject({
      code: 'not_found',
      message: 'version 9 not found',
    });
  });

  it('brings an old version back as a new version, keeping the one it replaces', async () => {
    const userId = randomUUID();
    await write(userId, 'plan.md', 'original', { tags: ['old'], metadata: { draft: false } });
    await write(userId, 'plan.md', 'rewritten', { tags: ['new'], metadata: { draft: true } });

    const { file: restored } = await clientBus.request(memoryFilesRestore, {
      userId,
      path: 'plan.md',
      version: 1,
    });

    expect(restored).toMatchObject({ version: 3, tags: ['old'], metadata: { draft: false } });
    expect((await read(userId, 'plan.md')).file.content).toBe('original');
    const { versions } = await history(userId, 'plan.md');
    expect(versions.map((entry) => entry.version)).toEqual([3, 2, 1]);
    expect((await read(userId, 'plan.md', 2)).file.content).toBe('rewritten');
  });

  it('answers not_found to a version that never existed', async () => {
    const userId = randomUUID();
    await write(userId, 'plan.md', 'only');

    const error = await catchBusError(
      clientBus.request(memoryFilesRestore, { userId, path: 'plan.md', version: 5 }),
    );

    expect(error.code).toBe('not_found');
    expect((await read(userId, 'plan.md')).file.version).toBe(1);
  });
});

describe('memory.files.edit', () => {
  function edit(userId: string, path: string, old: string, replacement: string) {
    return clientBus.request(memoryFilesEdit, { userId, path, old, new: replacement });
  }

  it('replaces text that occurs exactly once, as a new version', async () => {
    const userId = randomUUID();
    await write(userId, 'procedures/deploy.md', 'step 1: build\nstep 2: ship $1\n', {
      tags: ['ops'],
    });

    const { file } = await edit(userId, 'procedures/deploy.md', 'step 2: ship $1', 'step 2: test');

    expect(file).toMatchObject({ version: 2, tags: ['ops'] });
    expect((await read(userId, 'procedures/deploy.md')).file.content).toBe(
      'step 1: build\nstep 2: test\n',
    );
    expect((await read(userId, 'procedures/deploy.md', 1)).file.content).toContain('ship $1');
  });

  it('answers bad_request when the old text is missing, and changes nothing', async () => {
    const userId = randomUUID();
    await write(userId, 'a.md', 'hello world');

    const error = await catchBusError(edit(userId, 'a.md', 'goodbye', 'hi'));

    expect(error.code).toBe('bad_request');
    expect(error.message).toBe('old: text not found in a.md');
    expect((await read(userId, 'a.md')).file.version).toBe(1);
  });

  it('answers bad_request when the old text is ambiguous, overlapping occurrences included', async () => {
    const userId = randomUUID();
    await write(userId, 'a.md', 'todo: x\ntodo: y\nbaaa');

    const twice = await catchBusError(edit(userId, 'a.md', 'todo', 'done'));
    const overlapping = await catchBusError(edit(userId, 'a.md', 'aa', 'b'));

    for (const error of [twice, overlapping]) {
      expect(error.code).toBe('bad_request');
      expect(error.message).toMatch(/^old: text is ambiguous, it occurs more than once in a\.md/);
    }
    expect((await read(userId, 'a.md')).file.version).toBe(1);
  });

  it('answers not_found for a file that does not exist', async () => {
    await expect(edit(randomUUID(), 'nope.md', 'a', 'b')).rejects.toMatchObject(NOT_FOUND);
  });
});

describe('memory.files.ls', () => {
  it('lists live files under a prefix, sorted by path', async () => {
    const userId = randomUUID();
    for (const path of ['notes/b.md', 'notes/a.md', 'notes/sub/c.md', 'notesx.md', 'other/d.md']) {
      await write(userId, path, path);
    }
    await write(userId, 'notes/gone.md', 'bye');
    await clientBus.request(memoryFilesDelete, { userId, path: 'notes/gone.md' });

    const underNotes = await clientBus.request(memoryFilesList, { userId, prefix: 'notes/' });
    const everything = await clientBus.request(memoryFilesList, { userId });

    expect(underNotes.files.map((file) => file.path)).toEqual([
      'notes/a.md',
      'notes/b.md',
      'notes/sub/c.md',
    ]);
    expect(underNotes.isTruncated).toBe(false);
    expect(underNotes.files[0]).toEqual({
      path: 'notes/a.md',
      version: 1,
      size: 10,
      tags: [],
      updatedAt: expect.any(String),
    });
    expect(everything.files.map((file) => file.path)).toEqual([
      'notes/a.md',
      'notes/b.md',
      'notes/sub/c.md',
      'notesx.md',
      'other/d.md',
    ]);
  });

  it('takes a prefix with a leading slash like one without', async () => {
    const userId = randomUUID();
    await write(userId, 'notes/a.md', 'a');

    const { files } = await clientBus.request(memoryFilesList, { userId, prefix: '/notes' });

    expect(files.map((file) => file.path)).toEqual(['notes/a.md']);
  });
});

describe('memory.files.grep', () => {
  function grep(
    userId: string,
    pattern: string,
    extra: { prefix?: string; isRegex?: boolean } = {},
  ) {
    return clientBus.request(memoryFilesGrep, { userId, pattern, ...extra });
  }

  it('finds a substring in any case, with 1-based line numbers, by path then line', async () => {
    const userId = randomUUID();
    await write(userId, 'notes/b.md', 'nothing\nBuy MILK\r\nand milk again');
    await write(userId, 'notes/a.md', 'milk first');
    await write(userId, 'other/c.md', 'milk elsewhere');
    await write(userId, 'notes/gone.md', 'milk deleted');
    await clientBus.request(memoryFilesDelete, { userId, path: 'notes/gone.md' });

    const { matches, isTruncated } = await grep(userId, 'Milk', { prefix: 'notes/' });

    expect(isTruncated).toBe(false);
    expect(matches).toEqual([
      { path: 'notes/a.md', line: 1, text: 'milk first' },
      { path: 'notes/b.md', line: 2, text: 'Buy MILK' },
      { path: 'notes/b.md', line: 3, text: 'and milk again' },
    ]);
  });

  it('takes regex characters literally unless asked for a regex', async () => {
    const userId = randomUUID();
    await write(userId, 'a.md', 'cost: $5 (approx.)\nabc5');

    const literal = await grep(userId, '(approx.)');
    const regex = await grep(userId, '^ABC[0-9]$', { isRegex: true });

    expect(literal.matches).toEqual([{ path: 'a.md', line: 1, text: 'cost: $5 (approx.)' }]);
    expect(regex.matches).toEqual([{ path: 'a.md', line: 2, text: 'abc5' }]);
  });

  it('stops at the match limit and says so', async () => {
    const userId = randomUUID();
    const lines = Array.from({ length: FILE_GREP_MAX_MATCHES + 50 }, (_, index) => `hit ${index}`);
    await write(userId, 'many.txt', lines.join('\n'));

    const { matches, isTruncated } = await grep(userId, 'hit');

    expect(matches).toHaveLength(FILE_GREP_MAX_MATCHES);
    expect(matches.at(-1)).toEqual({
      path: 'many.txt',
      line: FILE_GREP_MAX_MATCHES,
      text: `hit ${FILE_GREP_MAX_MATCHES - 1}`,
    });
    expect(isTruncated).toBe(true);
  });

  it('runs an allowed pattern over a long line in linear time', async () => {
    const userId = randomUUID();
    await write(userId, 'long.txt', `${'a'.repeat(200_000)}!`);

    const started = Date.now();
    const { matches } = await grep(userId, '(ab|a)*[a-z]{20}$', { isRegex: true });

    expect(matches).toEqual([]);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it.each([
    ['an invalid regex', '(unclosed', true, /^pattern: invalid regular expression/],
    ['a backreference', '(a)\\1', true, /^pattern: backreferences are not supported$/],
    ['a nested repetition', '(a+)+$', true, /^pattern: a repeated group must not contain/],
    ['a large count', 'x{101}', true, /^pattern: a repetition may repeat at most 100 times/],
    ['a repeated constraint', '(\\y){52,}', true, /^pattern: a repetition must not repeat an/],
    ['a regex Postgres alone refuses', '(?<name>a)', true, /^pattern: invalid regular expression/],
    ['a pattern over 200 characters', 'x'.repeat(201), false, /^pattern: /],
    ['an empty pattern', '', false, /^pattern: /],
  ])('answers bad_request to %s', async (_label, pattern, isRegex, message) => {
    const error = await catchBusError(grep(randomUUID(), pattern, { isRegex }));

    expect(error.code).toBe('bad_request');
    expect(error.message).toMatch(message);
  });

  // Files this large or this many are written in one statement: through the handler they would
  // pass the bus's message size, or take most of a minute.
  async function insertFiles(userId: string, count: number, prefix: string, content: string) {
    await db.pool.query(
      `INSERT INTO memory.files (id, user_id, path, content)
       SELECT gen_random_uuid(), $1, $2 || lpad(n::text, 5, '0') || '.md', $3
       FROM generate_series(1, $4::int) AS n`,
      [userId, prefix, content, count],
    );
  }

  it('reads files in path order up to its byte bound, and says the rest went unread', async () => {
    const userId = randomUUID();
    // Two bytes a character: two of these fit in the bound, not three.
    await insertFiles(userId, 3, 'big/', `hit\n${'é'.repeat(FILE_GREP_MAX_BYTES / 4 - 10)}`);

    const all = await grep(userId, 'HIT', { prefix: 'big/' });
    const rest = await grep(userId, 'hit', { prefix: 'big/00003' });

    expect(all.matches.map((match) => match.path)).toEqual(['big/00001.md', 'big/00002.md']);
    expect(all.isTruncated).toBe(true);
    expect(rest).toEqual({
      matches: [{ path: 'big/00003.md', line: 1, text: 'hit' }],
      isTruncated: false,
    });
  });

  it('reads at most its number of files, and says the rest went unread', async () => {
    const userId = randomUUID();
    await insertFiles(userId, FILE_GREP_MAX_FILES, 'many/', 'filler');
    await write(userId, 'many/zz.md', 'needle');

    const cut = await grep(userId, 'needle', { prefix: 'many/' });
    const narrowed = await grep(userId, 'needle', { prefix: 'many/z' });

    expect(cut).toEqual({ matches: [], isTruncated: true });
    expect(narrowed).toEqual({
      matches: [{ path: 'many/zz.md', line: 1, text: 'needle' }],
      isTruncated: false,
    });
  });
});

describe('memory.files.search', () => {
  it('ranks files by full-text relevance, path words counting most, with snippets', async () => {
    const userId = randomUUID();
    await write(
      userId,
      'procedures/kubernetes-upgrade.md',
      'Upgrading kubernetes clusters: drain each kubernetes node first.',
    );
    await write(userId, 'notes/misc.md', 'Somewhere in here kubernetes is mentioned once.');
    await write(userId, 'notes/cooking.md', 'Pasta needs salted water.');
    await write(userId, 'notes/old.md', 'kubernetes kubernetes kubernetes');
    await clientBus.request(memoryFilesDelete, { userId, path: 'notes/old.md' });

    const { results } = await clientBus.request(memoryFilesSearch, {
      userId,
      query: 'Kubernetes',
    });

    expect(results.map((result) => result.path)).toEqual([
      'procedures/kubernetes-upgrade.md',
      'notes/misc.md',
    ]);
    const [best, second] = results;
    expect(best?.rank).toBeGreaterThan(second?.rank ?? Number.POSITIVE_INFINITY);
    expect(best).toMatchObject({ version: 1, updatedAt: expect.any(String) });
    expect(second?.snippet).toContain('**kubernetes**');
  });

  it('understands web search syntax and honours the limit', async () => {
    const userId = randomUUID();
    await write(userId, 'a.md', 'deploy the staging server');
    await write(userId, 'b.md', 'deploy the production server');
    await write(userId, 'c.md', 'deploy on friday');

    const excluded = await clientBus.request(memoryFilesSearch, {
      userId,
      query: 'deploy -production',
    });
    const limited = await clientBus.request(memoryFilesSearch, {
      userId,
      query: 'deploy',
      limit: 2,
    });
    const stopWordsOnly = await clientBus.request(memoryFilesSearch, { userId, query: 'the' });

    expect(excluded.results.map((result) => result.path).sort()).toEqual(['a.md', 'c.md']);
    expect(limited.results).toHaveLength(2);
    expect(stopWordsOnly.results).toEqual([]);
  });
});

describe('files in memory search', () => {
  it('finds the current version of a file, and forgets it once deleted', async () => {
    const userId = randomUUID();
    const other = randomUUID();
    await write(userId, 'recipes/bread.md', 'Sourdough: 500 g flour, 350 g water, 10 g salt.');
    await write(userId, 'recipes/bread.md', 'Sourdough: 500 g rye flour, 400 g water, 12 g salt.');
    const search = (user: string, query: string) =>
      clientBus.request(memorySearch, { userId: user, query, kinds: ['file'] });

    const { results } = await search(userId, 'how much rye flour for the sourdough?');
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({
      kind: 'file',
      text: 'Sourdough: 500 g rye flour, 400 g water, 12 g salt.',
      metadata: { path: 'recipes/bread.md', version: 2 },
      conversationId: null,
    });
    expect((await search(other, 'sourdough rye flour')).results).toEqual([]);

    await clientBus.request(memoryFilesDelete, { userId, path: 'recipes/bread.md' });
    expect((await search(userId, 'sourdough rye flour')).results).toEqual([]);
  });
});

describe('memory.files.delete', () => {
  it('removes the file from reads, history and listings, and frees the path', async () => {
    const userId = randomUUID();
    await write(userId, 'tmp/scratch.md', 'one');
    await write(userId, 'tmp/scratch.md', 'two');

    const deleted = await clientBus.request(memoryFilesDelete, { userId, path: 'tmp/scratch.md' });

    expect(deleted).toEqual({ path: 'tmp/scratch.md' });
    await expect(read(userId, 'tmp/scratch.md')).rejects.toMatchObject(NOT_FOUND);
    await expect(history(userId, 'tmp/scratch.md')).rejects.toMatchObject(NOT_FOUND);
    await expect(
      clientBus.request(memoryFilesDelete, { userId, path: 'tmp/scratch.md' }),
    ).rejects.toMatchObject(NOT_FOUND);
    expect((await clientBus.request(memoryFilesList, { userId })).files).toEqual([]);

    const { file } = await write(userId, 'tmp/scratch.md', 'fresh');
    expect(file.version).toBe(1);
    expect((await history(userId, 'tmp/scratch.md')).versions).toHaveLength(1);
  });

  it('keeps the deleted file and all its versions in the database', async () => {
    const userId = randomUUID();
    await write(userId, 'kept.md', 'one');
    await write(userId, 'kept.md', 'two');

    await clientBus.request(memoryFilesDelete, { userId, path: 'kept.md' });

    const { rows } = await db.pool.query<{ version: number; content: string }>(
      `SELECT v.version, v.content FROM memory.file_versions v
       JOIN memory.files f ON f.id = v.file_id
       WHERE f.user_id = $1 AND f.path = $2 AND f.deleted_at IS NOT NULL
       ORDER BY v.version`,
      [userId, 'kept.md'],
    );
    expect(rows).toEqual([
      { version: 1, content: 'one' },
      { version: 2, content: 'two' },
    ]);
  });
});

describe('request validation at the edge', () => {
  const userId = randomUUID();

  it.each([
    ['an empty path', ''],
    ['a lone slash', '/'],
    ['a parent segment', '../etc/passwd'],
    ['a parent segment inside', 'notes/../secret.md'],
    ['a dot segment', './notes.md'],
    ['an empty segment', 'notes//a.md'],
    ['a trailing slash', 'notes/'],
    ['two leading slashes', '//notes/a.md'],
    ['a backslash', 'notes\\a.md'],
    ['a NUL character', 'notes/a\u0000.md'],
    ['a newline', 'notes/a\n.md'],
    ['a DEL character', 'notes/a\u007f.md'],
    ['a path over 512 characters', `${'a/'.repeat(256)}b`],
    ['a segment over 128 characters', `notes/${'x'.repeat(129)}.md`],
    ['a path that is not a string', 42],
  ])('answers bad_request naming path to %s', async (_label, path) => {
    const reply = await sendRaw(clientBus, 'memory.files.write', { userId, path, content: 'x' });

    expect(reply).toEqual({
      ok: false,
      error: { code: 'bad_request', message: expect.stringMatching(/^path: /) },
    });
  });

  it.each([
    ['memory.files.read', {}],
    ['memory.files.edit', { old: 'a', new: 'b' }],
    ['memory.files.delete', {}],
    ['memory.files.history', {}],
    ['memory.files.restore', { version: 1 }],
  ])('applies the same path rules to %s', async (subject, extra) => {
    const reply = await sendRaw(clientBus, subject, { userId, path: 'a/../b', ...extra });

    expect(reply).toEqual({
      ok: false,
      error: { code: 'bad_request', message: 'path: must not contain . or .. segments' },
    });
  });

  it.each([
    ['content over the limit', { content: 'x'.repeat(FILE_CONTENT_MAX_CHARS + 1) }, 'content'],
    ['more than 32 tags', { tags: Array.from({ length: 33 }, (_, i) => `t${i}`) }, 'tags'],
    ['a tag over 64 characters', { tags: ['x'.repeat(65)] }, 'tags.0'],
    ['oversized metadata', { metadata: { blob: 'x'.repeat(16_001) } }, 'metadata'],
    ['a userId that is not a uuid', { userId: 'nope' }, 'userId'],
  ])('answers bad_request to %s', async (_label, override, field) => {
    const reply = await sendRaw(clientBus, 'memory.files.write', {
      userId,
      path: 'ok.md',
      content: 'x',
      ...override,
    });

    expect(reply).toEqual({
      ok: false,
      error: { code: 'bad_request', message: expect.stringMatching(new RegExp(`^${field}: `)) },
    });
  });

  it('stores nothing for a rejected write', async () => {
    const reply = await sendRaw(clientBus, 'memory.files.write', {
      userId,
      path: 'ok.md',
      content: 'x'.repeat(FILE_CONTENT_MAX_CHARS + 1),
    });

    expect(reply).toMatchObject({ ok: false });
    const { rows } = await db.pool.query('SELECT 1 FROM memory.files WHERE user_id = $1', [userId]);
    expect(rows).toEqual([]);
  });
});

describe("another user's files", () => {
  const owner = randomUUID();
  const intruder = randomUUID();
  const path = 'secret/plan.md';

  beforeAll(async () => {
    await write(owner, path, 'the launch codes are 1234');
    await write(owner, path, 'the launch codes are 5678');
    await write(intruder, 'mine.md', 'my own notes');
  });

  it('answer every request naming them exactly like a missing file', async () => {
    const attempts = [
      () => read(intruder, path),
      () => read(intruder, path, 1),
      () => history(intruder, path),
      () => clientBus.request(memoryFilesEdit, { userId: intruder, path, old: 'launch', new: 'x' }),
      () => clientBus.request(memoryFilesDelete, { userId: intruder, path }),
      () => clientBus.request(memoryFilesRestore, { userId: intruder, path, version: 1 }),
    ];

    for (const attempt of attempts) {
      await expect(attempt()).rejects.toMatchObject(NOT_FOUND);
    }
  });

  it('never show up in listings, grep or search', async () => {
    const listed = await clientBus.request(memoryFilesList, { userId: intruder });
    const grepped = await clientBus.request(memoryFilesGrep, {
      userId: intruder,
      pattern: 'launch',
    });
    const found = await clientBus.request(memoryFilesSearch, { userId: intruder, query: 'launch' });

    expect(listed.files.map((file) => file.path)).toEqual(['mine.md']);
    expect(grepped.matches).toEqual([]);
    expect(found.results).toEqual([]);
  });

  it('stay untouched, and the same path is a separate file for each user', async () => {
    const { file } = await write(intruder, path, 'decoy');

    expect(file.version).toBe(1);
    const { file: original } = await read(owner, path);
    expect(original).toMatchObject({ version: 2, content: 'the launch codes are 5678' });
    expect((await history(owner, path)).versions.map((entry) => entry.version)).toEqual([2, 1]);
  });
});

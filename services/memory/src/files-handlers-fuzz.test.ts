import { randomUUID } from 'node:crypto';
import { sendRaw } from '@jarvis/bus/testing';
import { memoryFilesGrep, memoryFilesWrite } from '@jarvis/contracts';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { registerFileHandlers } from './files-handlers';
import { type MemoryFixture, startMemoryFixture } from './memory-fixture';

// Hostile grep regexes against the memory service on the embedded Postgres, which has no
// statement timeout and runs every connection through one queue: one regex it cannot bound
// stalls every user, and one it answers wrongly ("too complex" as no rows) hangs it for good.
// These are PGlite's own failure modes, so this file runs on it whatever engine the rest of the
// suite runs on.

const SEED = 20_261_121;
const RUNS = 300;
// How long another user's ordinary grep may wait while the fuzz runs.
const OTHER_USER_MAX_MS = 2_000;

let memory: MemoryFixture;

beforeAll(async () => {
  memory = await startMemoryFixture('memory-files-fuzz', [registerFileHandlers], undefined, {
    engine: 'embedded',
  });
});

afterAll(async () => {
  await memory?.stop();
});

type Regex = { node: string; atom: string; quantifier: string };

const count = fc.integer({ min: 0, max: 300 });

// Regexes built from the pieces that strain a regex engine: nested and counted repetition,
// alternation, wildcards, backreferences, and stray syntax that leaves them malformed.
const generated = fc.letrec<Regex>((tie) => ({
  atom: fc.constantFrom(
    'a',
    'b',
    '.',
    '\\w',
    '\\s',
    '\\d',
    '[a-z]',
    '[^x]',
    '[[:alpha:]]',
    '^',
    '$',
    '\\y',
    '\\1',
    '(?=a)',
    '(?<!b)',
    '(',
    ')',
    '[',
    '{',
    '\\',
    '|',
  ),
  quantifier: fc.oneof(
    fc.constantFrom('*', '+', '?', '*?', '+?', '{,3}'),
    count.map((n) => `{${n}}`),
    count.map((n) => `{${n},}`),
    fc.tuple(count, count).map(([n, m]) => `{${Math.min(n, m)},${Math.max(n, m)}}`),
  ),
  node: fc.oneof(
    { depthSize: 'small' },
    tie('atom'),
    tie('node').map((inner) => `(${inner})`),
    fc.tuple(tie('node'), tie('quantifier')).map(([inner, quantifier]) => {
      const grouped = inner.length > 1 ? `(${inner})` : inner;
      return `${grouped}${quantifier}`;
    }),
    fc.array(tie('node'), { minLength: 2, maxLength: 4 }).map((parts) => parts.join('')),
    fc.array(tie('node'), { minLength: 2, maxLength: 3 }).map((parts) => parts.join('|')),
  ),
})).node;

// Known offenders, each once at least: the first and the third hang the embedded Postgres, the
// second stalled every user for seconds.
const KNOWN = [
  '(a{1,255}){1,255}',
  '(.*){1,200}x',
  '(\\y){52,}',
  '(a+)+$',
  '((a|b)*)*c',
  '.{100}x|.{99}y|.{98}z',
  '(?=.{100}x)',
  '[\\s\\S]{100}',
  '(a)\\1',
  '(?i:a)',
  '(?<n>a)',
  '(',
  'a{1,2',
  '***=a',
];

// Matches, or a 400: never an internal error, a timeout or no answer.
const AcceptableReply = z.union([
  z.object({ ok: z.literal(true) }),
  z.object({ ok: z.literal(false), error: z.object({ code: z.literal('bad_request') }) }),
]);

const pattern = fc
  .oneof({ arbitrary: fc.constantFrom(...KNOWN), weight: 1 }, { arbitrary: generated, weight: 4 })
  .filter((text) => text.length > 0 && text.length <= 200);

describe('memory.files.grep under hostile regexes', () => {
  it('answers each with matches or a bad request, and keeps answering other users', async () => {
    const { clientBus } = memory;
    const attacker = randomUUID();
    const other = randomUUID();
    const line = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab abababab 2026-11-21 todo: fox x\n';
    for (let index = 0; index < 5; index += 1) {
      await clientBus.request(memoryFilesWrite, {
        userId: attacker,
        path: `notes/${index}.md`,
        content: line.repeat(250),
      });
    }
    await clientBus.request(memoryFilesWrite, {
      userId: other,
      path: 'todo.md',
      content: 'todo: buy milk',
    });

    let isFuzzing = true;
    const otherUserMs: number[] = [];
    const otherUser = (async () => {
      while (isFuzzing) {
        const started = Date.now();
        const { matches } = await clientBus.request(memoryFilesGrep, {
          userId: other,
          pattern: '^todo:',
          isRegex: true,
        });
        otherUserMs.push(Date.now() - started);
        expect(matches).toEqual([{ path: 'todo.md', line: 1, text: 'todo: buy milk' }]);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();

    try {
      await fc.assert(
        fc.asyncProperty(pattern, async (regex) => {
          // Past the client's own check, so the memory service's edge is what answers.
          const reply = await sendRaw(clientBus, 'memory.files.grep', {
            userId: attacker,
            pattern: regex,
            isRegex: true,
          });
          expect(AcceptableReply.safeParse(reply).success, JSON.stringify(reply)).toBe(true);
        }),
        { seed: SEED, numRuns: RUNS, examples: KNOWN.map((known) => [known]) },
      );
    } finally {
      isFuzzing = false;
      await otherUser;
    }

    expect(otherUserMs.length).toBeGreaterThan(10);
    expect(Math.max(...otherUserMs)).toBeLessThan(OTHER_USER_MAX_MS);
  }, 60_000);

  // The embedded Postgres answered this regex with no rows instead of "too complex", then hung
  // on the next statement that failed, and every service with it.
  it('refuses a regex too complex for Postgres, and still answers the next bad one at once', async () => {
    const { clientBus } = memory;
    const userId = randomUUID();
    await clientBus.request(memoryFilesWrite, { userId, path: 'a.md', content: 'aaa' });

    // Past the client's own check, so the memory service's edge is what answers.
    const send = (pattern: string) =>
      sendRaw(clientBus, 'memory.files.grep', { userId, pattern, isRegex: true });

    const complex = await send('(a{1,255}){1,255}');
    const started = Date.now();
    const unbalanced = await send('(');
    const refusedByPostgres = await send('(?i:a)');

    expect(complex).toEqual({
      ok: false,
      error: {
        code: 'bad_request',
        message: 'pattern: a repetition may repeat at most 100 times, not {1,255}',
      },
    });
    expect(unbalanced).toMatchObject({ ok: false, error: { code: 'bad_request' } });
    expect(refusedByPostgres).toMatchObject({
      ok: false,
      error: { code: 'bad_request', message: expect.stringMatching(/^pattern: invalid regular/) },
    });
    expect(Date.now() - started).toBeLessThan(2_000);
    const { matches } = await clientBus.request(memoryFilesGrep, {
      userId,
      pattern: 'a{3}',
      isRegex: true,
    });
    expect(matches).toHaveLength(1);
  });
});

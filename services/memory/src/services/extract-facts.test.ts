import { randomUUID } from 'node:crypto';
import { migrate } from '@jarvis/db';
import { startTestDatabase, type TestDatabase } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTerms } from '../repositories/terms-repository';
import { hasSomethingNew, parseExtractionAnswer } from './extract-facts';

describe('parseExtractionAnswer', () => {
  const factId = randomUUID();
  const valid = {
    operations: [
      { op: 'add', content: 'The user works as a nurse.', category: 'fact', importance: 6 },
      { op: 'update', factId, content: 'The user lives in Braga.' },
      { op: 'invalidate', factId, reason: 'moved away' },
      { op: 'noop' },
    ],
  };

  it('accepts every operation, bare or in a Markdown fence', () => {
    const bare = parseExtractionAnswer(JSON.stringify(valid));
    expect(bare).toEqual({ ok: true, operations: valid.operations });
    const fenced = parseExtractionAnswer(`\`\`\`json\n${JSON.stringify(valid, null, 2)}\n\`\`\``);
    expect(fenced).toEqual(bare);
  });

  it('names the first problem of an unusable answer', () => {
    expect(parseExtractionAnswer('Sure! The user is a nurse.')).toEqual({
      ok: false,
      problem: 'the answer is not valid JSON',
    });
    expect(
      parseExtractionAnswer(JSON.stringify({ operations: [{ op: 'add', content: 'x' }] })),
    ).toMatchObject({ ok: false, problem: expect.stringMatching(/^operations\.0\.category: /) });
    // Strict: a field the schema does not know is a mistake, not something to drop silently.
    expect(
      parseExtractionAnswer(JSON.stringify({ operations: [{ op: 'noop', note: 'nothing' }] })),
    ).toMatchObject({ ok: false });
    expect(
      parseExtractionAnswer(JSON.stringify({ operations: [{ op: 'update', factId: '1' }] })),
    ).toMatchObject({ ok: false, problem: expect.stringMatching(/^operations\.0\.factId: /) });
    const tooMany = { operations: Array.from({ length: 11 }, () => ({ op: 'noop' })) };
    expect(parseExtractionAnswer(JSON.stringify(tooMany))).toMatchObject({ ok: false });
  });

  it('takes an end for a fact that holds for a while, and never a standing rule', () => {
    const until = {
      op: 'add',
      content: 'The user is in Berlin until Friday.',
      category: 'fact',
      importance: 5,
      validTo: '2026-11-28T00:00:00+01:00',
    };
    expect(parseExtractionAnswer(JSON.stringify({ operations: [until] }))).toEqual({
      ok: true,
      operations: [until],
    });
    const rule = {
      op: 'add',
      content: 'Always answer in metric.',
      category: 'rule',
      importance: 9,
    };
    expect(parseExtractionAnswer(JSON.stringify({ operations: [rule] }))).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/^operations\.0\.category: /),
    });
  });
});

describe('hasSomethingNew', () => {
  // The terms as the worker reads them: Postgres' text search, through the memory schema.
  let database: TestDatabase;
  beforeAll(async () => {
    database = await startTestDatabase();
    await migrate(database.pool, {
      schema: 'memory',
      directory: new URL('../../migrations', import.meta.url),
    });
  });
  afterAll(async () => {
    await database?.stop();
  });
  const isNew = async (message: string, knownTexts: string[]) => {
    const [terms = [], ...known] = await readTerms(database.pool, [message, ...knownTexts]);
    return hasSomethingNew(terms, known);
  };

  it('finds nothing in a message of fewer than three terms', async () => {
    expect(await isNew('ok thanks', [])).toBe(false);
    expect(await isNew('Thank you so much!', [])).toBe(false);
    expect(await isNew('I work as a nurse in Porto', [])).toBe(true);
  });

  it('finds nothing when every term is already in what is known', async () => {
    const known = ['The user moved to Porto last month.', 'The user works as a nurse.'];
    expect(await isNew('I work as a nurse in Porto', known)).toBe(false);
    expect(await isNew('I work as a nurse in Braga', known)).toBe(true);
  });
});

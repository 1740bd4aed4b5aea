import { HttpError } from '@jarvis/service-kit';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseBody } from './parse-body';

const Body = z.object({
  name: z.string(),
  tags: z.array(z.string()).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

function problemOf(body: unknown): string | undefined {
  try {
    parseBody(Body, body);
    return undefined;
  } catch (error) {
    return error instanceof HttpError ? `${error.status} ${error.message}` : String(error);
  }
}

describe('parseBody', () => {
  it('refuses NUL anywhere in the input, naming where, after the schema has had its say', () => {
    expect(problemOf({ name: 'a\u0000b' })).toBe('400 name: must not contain NUL characters');
    expect(problemOf({ name: 'a', tags: ['ok', '\u0000'] })).toBe(
      '400 tags.1: must not contain NUL characters',
    );
    expect(problemOf({ name: 'a', metadata: { 'k\u0000': 1 } })).toBe(
      '400 metadata.k\u0000: must not contain NUL characters',
    );
    expect(problemOf({ name: 1, tags: ['\u0000'] })).toMatch(/^400 name: /);
    expect(problemOf({ name: 'a\\u0000 is text', metadata: { a: '\u2400' } })).toBeUndefined();
  });

  it('takes a record holding a key named constructor (zod before 4.1.13 threw on it: a 500)', () => {
    expect(problemOf({ name: 'a', metadata: { constructor: null } })).toBeUndefined();
  });

  it('walks metadata nested far deeper than the stack would allow', () => {
    let deep: unknown = 'x\u0000';
    for (let depth = 0; depth < 50_000; depth += 1) deep = [deep];
    expect(problemOf({ name: 'a', metadata: { deep } })).toMatch(/^400 metadata\.deep\.0\.0/);
  });
});

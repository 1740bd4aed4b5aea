import { randomUUID } from 'node:crypto';
import { HttpError } from '@jarvis/service-kit';
import { describe, expect, it } from 'vitest';
import { importedId, parseExportFile, planBatches } from './memory-import';

const MAX_RECORD_BYTES = 900_000;
const LIMITS = { maxRecordBytes: MAX_RECORD_BYTES, maxMemoryBytes: 4_000_000 };
const AT = '2024-05-01T10:00:00.000Z';
const HEADER = { type: 'header', format: 'jarvis-memory', version: 1, exportedAt: AT };

const conversationId = randomUUID();
const messageId = randomUUID();
const conversation = { type: 'conversation', id: conversationId, isDefault: true, createdAt: AT };
const message = {
  type: 'message',
  id: messageId,
  conversationId,
  role: 'user',
  content: 'My passport is in the blue drawer.',
  author: null,
  metadata: {},
  createdAt: AT,
};

function fact(id: string, supersededBy: string | null, content = 'Prefers tea') {
  return {
    type: 'fact',
    id,
    category: 'preference',
    content,
    tags: [],
    importance: 5,
    sourceMessageIds: [],
    validFrom: AT,
    validTo: supersededBy === null ? null : AT,
    supersededBy,
    createdAt: AT,
    updatedAt: AT,
  };
}

function file(...lines: unknown[]): string {
  return `${lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))).join('\n')}\n`;
}

function problemOf(text: string): string {
  try {
    parseExportFile(text, LIMITS);
  } catch (error) {
    if (error instanceof HttpError && error.code === 'bad_request') return error.message;
    throw error;
  }
  throw new Error('expected the file to be refused');
}

describe('parseExportFile', () => {
  it('answers the records by type, each fact version after its successor', () => {
    const [oldest, middle, newest] = [randomUUID(), randomUUID(), randomUUID()];
    const records = parseExportFile(
      file(
        HEADER,
        fact(oldest, middle, 'Prefers green tea'),
        '',
        message,
        fact(middle, newest, 'Prefers black tea'),
        conversation,
        fact(newest, null, 'Prefers jasmine tea'),
      ).replaceAll('\n', '\r\n'),
      LIMITS,
    ).records;
    expect(records.map((record) => record.type)).toEqual([
      'conversation',
      'message',
      'fact',
      'fact',
      'fact',
    ]);
    expect(records.slice(2).map((record) => record.type === 'fact' && record.content)).toEqual([
      'Prefers jasmine tea',
      'Prefers black tea',
      'Prefers green tea',
    ]);
  });

  it('answers the instructions first, wherever the file has them, and only once', () => {
    const instructions = { type: 'instructions', text: 'Answer in Norwegian.', updatedAt: AT };
    const v3 = { ...HEADER, version: 3 };
    const records = parseExportFile(
      file(v3, conversation, fact(randomUUID(), null), instructions),
      LIMITS,
    ).records;
    expect(records.map((record) => record.type)).toEqual(['instructions', 'conversation', 'fact']);
    expect(problemOf(file(v3, instructions, conversation, instructions))).toBe(
      'line 4: the instructions record appears twice (first on line 2)',
    );
    expect(problemOf(file(v3, { ...instructions, text: '' }))).toMatch(/^line 2: text: /);
  });

  it('names the line and the problem of the first bad line', () => {
    expect(problemOf('')).toBe('line 1: expected the export header; the file is empty');
    expect(problemOf(file({ ...HEADER, version: 4 }))).toMatch(
      /^line 1: expected the export header .*\(version: /,
    );
    expect(problemOf(file(HEADER, conversation, '{"type": "message",'))).toBe(
      'line 3: not valid JSON',
    );
    expect(problemOf(file(HEADER, conversation, { ...message, role: 'robot' }))).toMatch(
      /^line 3: role: /,
    );
    expect(problemOf(file(HEADER, { type: 'photo', id: randomUUID() }))).toMatch(
      /^line 2: type: type must be one of instructions, conversation, message/,
    );
    expect(problemOf(file(HEADER, conversation, HEADER))).toMatch(/^line 3: type: /);
    expect(problemOf(file(HEADER, { ...conversation, extra: 1 }))).toMatch(/^line 2: /);
    expect(problemOf(file(HEADER, conversation, { ...message, content: 'a\u0000b' }))).toBe(
      'line 3: must not contain NUL characters',
    );
    expect(
      problemOf(file(HEADER, conversation, { ...message, content: 'x'.repeat(MAX_RECORD_BYTES) })),
    ).toMatch(/^line 3: record too large/);
  });

  it('refuses a date outside years 0001-9999, and a fact that ends before it begins', () => {
    expect(problemOf(file(HEADER, { ...conversation, createdAt: '0000-01-01T00:00:00Z' }))).toBe(
      'line 2: createdAt: year must be 0001-9999',
    );
    expect(
      problemOf(file(HEADER, conversation, { ...message, createdAt: '0001-01-01T00:30:00+01:00' })),
    ).toBe('line 3: createdAt: year must be 0001-9999');
    expect(
      problemOf(file(HEADER, { ...fact(randomUUID(), null), validTo: '2024-04-30T10:00:00Z' })),
    ).toBe('line 2: validTo: validTo must not be before validFrom');
    const lastYear = { ...message, createdAt: '9999-12-31T23:59:59Z' };
    expect(parseExportFile(file(HEADER, conversation, lastYear), LIMITS).records).toHaveLength(2);
  });

  it('refuses references to records that are not in the file', () => {
    expect(problemOf(file(HEADER, message))).toBe(
      'line 2: conversationId: names no conversation of the file',
    );
    expect(problemOf(file(HEADER, fact(randomUUID(), randomUUID())))).toBe(
      'line 2: supersededBy: names no fact of the file',
    );
    expect(
      problemOf(
        file(HEADER, conversation, { ...fact(randomUUID(), null), sourceMessageIds: [messageId] }),
      ),
    ).toBe('line 3: sourceMessageIds: names a message that is not in the file');
    expect(
      problemOf(
        file(HEADER, {
          type: 'documentChunk',
          id: randomUUID(),
          documentId: randomUUID(),
          index: 0,
          content: 'x',
          tokenCount: 1,
          createdAt: AT,
        }),
      ),
    ).toBe('line 2: documentId: names no document of the file');
    const [a, b] = [randomUUID(), randomUUID()];
    expect(problemOf(file(HEADER, fact(a, b), fact(b, a)))).toMatch(
      /^line \d: supersededBy: the versions name each other in a loop$/,
    );
    expect(problemOf(file(HEADER, conversation, message, message))).toBe(
      'line 4: message id appears twice (first on line 3)',
    );
    expect(problemOf(file(HEADER, conversation, { ...conversation, id: randomUUID() }))).toBe(
      'line 3: only one conversation may be the default',
    );
  });
});

describe('parseExportFile with workspace files', () => {
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const chart = {
    type: 'workspaceFile',
    kind: 'conversation',
    id: conversationId,
    path: 'charts/a.png',
    mediaType: 'image/png',
    content: png.toString('base64'),
  };

  it('hands workspace files back apart from the records, with their lines, from a version 2 file', () => {
    const checked = parseExportFile(
      file({ ...HEADER, version: 2 }, conversation, chart, { ...chart, kind: 'mission' }),
      LIMITS,
    );

    expect(checked.records.map((record) => record.type)).toEqual(['conversation']);
    expect(checked.workspaceFiles).toEqual([
      { record: chart, line: 3 },
      { record: { ...chart, kind: 'mission' }, line: 4 },
    ]);
  });

  it('counts only the memory records against the memory limit, and a file as large as it likes', () => {
    const big = { ...chart, content: Buffer.alloc(3 * MAX_RECORD_BYTES).toString('base64') };
    expect(parseExportFile(file(HEADER, big), LIMITS).workspaceFiles).toHaveLength(1);

    const messages = Array.from({ length: 200 }, () => ({
      ...message,
      id: randomUUID(),
      content: 'm'.repeat(30_000),
    }));
    let refused: unknown;
    try {
      parseExportFile(file(HEADER, conversation, ...messages), LIMITS);
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(HttpError);
    expect(refused).toMatchObject({
      code: 'payload_too_large',
      message: expect.stringMatching(
        /^line \d+: the memory's records come to more than 4000000 bytes, the most one import takes$/,
      ),
    });
  });

  it('refuses a bad workspace file with its line', () => {
    expect(problemOf(file(HEADER, { ...chart, content: 'not base64!' }))).toMatch(
      /^line 2: content: /,
    );
    expect(problemOf(file(HEADER, { ...chart, path: '../etc/passwd' }))).toMatch(/^line 2: path: /);
    expect(problemOf(file(HEADER, { ...chart, kind: 'project' }))).toMatch(/^line 2: kind: /);
    expect(problemOf(file(HEADER, { ...chart, size: 8 }))).toMatch(/^line 2: /);
    expect(problemOf(file(HEADER, chart, conversation, { ...chart, content: '' }))).toBe(
      'line 4: workspace file appears twice (first on line 2)',
    );
  });
});

describe('importedId', () => {
  // The memory service's derivation gives this same id (its importedId, checked when this was
  // written): a conversation's workspace files must land in the conversation the import made.
  it('derives the id the memory service gives an imported record', () => {
    const user = '6f1c3b7e-2a4d-4e8f-9b0a-1c2d3e4f5a6b';
    expect(importedId(user, 'A1B2C3D4-E5F6-4789-8abc-def012345678')).toBe(
      '115def29-dcd8-8a57-a1c6-097cf1d22065',
    );
    expect(importedId(user, 'a1b2c3d4-e5f6-4789-8abc-def012345678')).toBe(
      '115def29-dcd8-8a57-a1c6-097cf1d22065',
    );
  });
});

describe('planBatches', () => {
  it('keeps batches under the byte budget, a larger record alone, in order', () => {
    const records = parseExportFile(
      file(
        HEADER,
        conversation,
        ...['a', 'b', 'c', 'd'].map((letter) => ({
          ...message,
          id: randomUUID(),
          content: letter.repeat(letter === 'c' ? 3_000 : 400),
        })),
      ),
      LIMITS,
    ).records;
    const batches = planBatches(records, 1_200);
    expect(batches.flat()).toEqual(records);
    expect(batches.map((batch) => batch.length)).toEqual([2, 1, 1, 1]);
  });
});

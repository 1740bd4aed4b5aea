import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { catchBusError } from '@jarvis/bus/testing';
import {
  type ExportRecord,
  ExportRecordType,
  memoryAppend,
  memoryDocumentsIngest,
  memoryExportPage,
  memoryFactsForget,
  memoryFactsGet,
  memoryFactsList,
  memoryFactsRemember,
  memoryFactsUpdate,
  memoryFilesDelete,
  memoryFilesWrite,
  memoryForgetApply,
  memoryImport,
  memoryImportRecords,
  memoryInstructionsGet,
  memoryInstructionsPut,
  memoryRecall,
  memorySearch,
} from '@jarvis/contracts';
import type { TestDatabase } from '@jarvis/testkit';
import { estimateTokens } from '@jarvis/tokens';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerDocumentHandlers } from './documents-handlers';
import { registerExportHandlers } from './export-handlers';
import { registerFactHandlers } from './facts-handlers';
import { registerFileHandlers } from './files-handlers';
import { registerForgetHandlers } from './forget-handlers';
import { registerInstructionsHandlers } from './instructions-handlers';
import { type MemoryFixture, startMemoryFixture } from './memory-fixture';
import { importedId } from './services/import-records-service';

let memory: MemoryFixture;
let db: TestDatabase;
let clientBus: Bus;

beforeAll(async () => {
  memory = await startMemoryFixture('memory-export', [
    registerExportHandlers,
    registerForgetHandlers,
    registerFactHandlers,
    registerFileHandlers,
    registerDocumentHandlers,
    registerInstructionsHandlers,
  ]);
  ({ db, clientBus } = memory);
});

afterAll(async () => {
  await memory?.stop();
});

const LIGHTHOUSE = Array.from(
  { length: 300 },
  (_, i) => `Entry ${i}: the lighthouse keeper logged storm number ${i} near the cliffs.`,
).join(' ');
// Ten pages of thirty entries, as a PDF's extracted text would come.
const LIGHTHOUSE_PAGE_STARTS = Array.from({ length: 10 }, (_, page) =>
  LIGHTHOUSE.indexOf(`Entry ${page * 30}:`),
);

const INSTRUCTIONS = 'Answer in Norwegian. Keep answers short.';

// A memory with every kind of record: standing instructions, two conversations (one imported,
// with a summary), facts with history, files with versions (one deleted) and a document of
// several chunks.
async function seedMemory(userId: string) {
  await clientBus.request(memoryInstructionsPut, { userId, text: INSTRUCTIONS });
  const say = async (role: 'user' | 'assistant', content: string) =>
    (await clientBus.request(memoryAppend, { userId, role, content })).message;
  const lisbon = await say('user', 'We booked the flights to Lisbon for June.');
  await say('assistant', 'Lovely, Lisbon in June.');
  await say('user', 'My passport is in the blue drawer.');

  const imported = randomUUID();
  await clientBus.request(memoryImport, {
    userId,
    conversationId: imported,
    batchKey: `seed:${userId}`,
    firstIndex: 0,
    messages: [
      { role: 'user', content: 'Planning the garden beds.', createdAt: '2023-03-02T10:00:00Z' },
      {
        role: 'assistant',
        content: 'Raised beds drain well.',
        createdAt: '2023-03-02T10:00:05Z',
        author: 'Gardener bot',
        metadata: { source: 'old-chat', n: 2 },
      },
      { role: 'user', content: 'Tomatoes go by the wall.', createdAt: '2023-03-02T10:01:00Z' },
      { role: 'assistant', content: 'They like the warmth.', createdAt: '2023-03-02T10:01:05Z' },
    ],
  });
  // Summaries come from the utility model; here one is written as compaction would.
  await db.pool.query(
    `INSERT INTO memory.summaries
       (id, user_id, conversation_id, from_seq, to_seq, from_at, to_at, content)
     SELECT $1, $2, $3, min(seq), max(seq), min(created_at), max(created_at), $4
     FROM (SELECT seq, created_at FROM memory.messages WHERE conversation_id = $3
           ORDER BY seq LIMIT 2) covered`,
    [randomUUID(), userId, imported, 'SUMMARY: the user plans raised garden beds.'],
  );

  const remember = async (content: string, sourceMessageIds: string[] = []) =>
    (await clientBus.request(memoryFactsRemember, { userId, content, sourceMessageIds })).fact;
  const tea = await remember('Prefers green tea');
  const jasmine = (
    await clientBus.request(memoryFactsUpdate, {
      userId,
      id: tea.id,
      content: 'Prefers jasmine tea',
    })
  ).fact;
  const nurse = await remember('Travels to Lisbon every June', [lisbon.id]);
  const porto = await remember('Lives in Porto');
  await clientBus.request(memoryFactsForget, { userId, id: porto.id });

  const write = (path: string, content: string) =>
    clientBus.request(memoryFilesWrite, { userId, path, content, tags: ['plan'] });
  await write('notes/plan.md', 'first draft of the plan');
  await write('notes/plan.md', 'second draft of the plan');
  await write('old.md', 'an old note');
  await clientBus.request(memoryFilesDelete, { userId, path: 'old.md' });

  const { document } = await clientBus.request(
    memoryDocumentsIngest,
    {
      userId,
      title: 'Lighthouse log',
      contentType: 'application/pdf',
      content: LIGHTHOUSE,
      pageStarts: LIGHTHOUSE_PAGE_STARTS,
    },
    { timeoutMs: 30_000 },
  );
  return { lisbon, imported, tea, jasmine, nurse, porto, document };
}

async function exportAll(userId: string, limit = 500) {
  const records: ExportRecord[] = [];
  let pages = 0;
  for (const type of ExportRecordType.options) {
    let after: string | undefined;
    do {
      const page = await clientBus.request(memoryExportPage, {
        userId,
        type,
        limit,
        ...(after === undefined ? {} : { after }),
      });
      records.push(...page.records);
      pages += 1;
      after = page.next;
    } while (after !== undefined);
  }
  return { records, pages };
}

function countByType(records: ExportRecord[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const record of records) counts[record.type] = (counts[record.type] ?? 0) + 1;
  return counts;
}

const ID_FIELDS = [
  'id',
  'conversationId',
  'fromMessageId',
  'toMessageId',
  'supersededBy',
  'fileId',
  'documentId',
] as const;

// Every id the record holds, mapped.
function remapIds(record: ExportRecord, map: (id: string) => string): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...record };
  for (const field of ID_FIELDS) {
    const value = copy[field];
    if (typeof value === 'string') copy[field] = map(value);
  }
  if (record.type === 'fact') copy.sourceMessageIds = record.sourceMessageIds.map(map);
  return copy;
}

function idsOf(records: ExportRecord[]): Set<string> {
  return new Set(
    records.flatMap((record) => {
      const copy: Record<string, unknown> = { ...record };
      return ID_FIELDS.flatMap((field) => {
        const value = copy[field];
        return typeof value === 'string' ? [value] : [];
      });
    }),
  );
}

// In type order, a few records per request, as the gateway sends them.
async function importAll(userId: string, records: ExportRecord[], batchSize = 5) {
  const total = { conversations: 0, messages: 0, summaries: 0, facts: 0, files: 0, documents: 0 };
  for (let start = 0; start < records.length; start += batchSize) {
    const { imported } = await clientBus.request(
      memoryImportRecords,
      { userId, records: records.slice(start, start + batchSize) },
      { timeoutMs: 30_000 },
    );
    for (const key of Object.keys(total) as (keyof typeof total)[]) total[key] += imported[key];
  }
  return total;
}

describe('memory.export.page', () => {
  it('pages through every record exactly once, in order, whatever the page size', async () => {
    const userId = randomUUID();
    const seeded = await seedMemory(userId);

    const whole = await exportAll(userId);
    expect(whole.pages).toBe(ExportRecordType.options.length);
    for (const limit of [1, 3]) {
      const paged = await exportAll(userId, limit);
      expect(paged.records).toEqual(whole.records);
      expect(paged.pages).toBeGreaterThan(whole.pages);
    }

    const { records } = whole;
    const chunks = records.filter((record) => record.type === 'documentChunk');
    // The instructions come first, as the gateway writes them after the header.
    expect(records[0]).toEqual({
      type: 'instructions',
      text: INSTRUCTIONS,
      updatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(countByType(records)).toEqual({
      instructions: 1,
      conversation: 2,
      message: 7,
      summary: 1,
      fact: 4,
      file: 2,
      fileVersion: 2,
      document: 1,
      documentChunk: seeded.document.chunkCount,
    });
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.map((chunk) => chunk.index)).toEqual(chunks.map((_, index) => index));
    // A PDF keeps its page count, and each chunk the page it begins on.
    expect(records.find((record) => record.type === 'document')).toMatchObject({ pages: 10 });
    // The entry a chunk's first word is in: the first one it names, or the one before that.
    const firstEntries = chunks.map((chunk) => {
      const named = /Entry (\d+):/.exec(chunk.content);
      return Number(named?.[1]) - (named?.index === 0 ? 0 : 1);
    });
    expect(chunks.map((chunk) => chunk.page)).toEqual(
      firstEntries.map((entry) => Math.floor(entry / 30) + 1),
    );
    const keys = records.map((record) =>
      record.type === 'fileVersion'
        ? `${record.fileId}:${record.version}`
        : record.type === 'instructions'
          ? record.type
          : record.id,
    );
    expect(new Set(keys).size).toBe(keys.length);

    // Conversation order, with what each message carries.
    const messages = records.filter((record) => record.type === 'message');
    expect(messages.map((message) => message.content)).toEqual([
      'We booked the flights to Lisbon for June.',
      'Lovely, Lisbon in June.',
      'My passport is in the blue drawer.',
      'Planning the garden beds.',
      'Raised beds drain well.',
      'Tomatoes go by the wall.',
      'They like the warmth.',
    ]);
    expect(messages[4]).toEqual({
      type: 'message',
      id: expect.any(String),
      conversationId: seeded.imported,
      role: 'assistant',
      content: 'Raised beds drain well.',
      author: 'Gardener bot',
      metadata: { source: 'old-chat', n: 2 },
      createdAt: '2023-03-02T10:00:05.000Z',
    });
    expect(records.find((record) => record.type === 'summary')).toMatchObject({
      conversationId: seeded.imported,
      fromMessageId: messages[3]?.id,
      toMessageId: messages[4]?.id,
      content: 'SUMMARY: the user plans raised garden beds.',
    });

    // Every fact version, with its history chain and provenance.
    const facts = records.filter((record) => record.type === 'fact');
    expect(facts.map((fact) => [fact.content, fact.validTo === null])).toEqual([
      ['Prefers green tea', false],
      ['Prefers jasmine tea', true],
      ['Travels to Lisbon every June', true],
      ['Lives in Porto', false],
    ]);
    expect(facts[0]).toMatchObject({ id: seeded.tea.id, supersededBy: seeded.jasmine.id });
    expect(facts[2]?.sourceMessageIds).toEqual([seeded.lisbon.id]);
    expect(facts[3]).toMatchObject({ id: seeded.porto.id, supersededBy: null });

    // The current file and the versions it replaced; the deleted file keeps its history.
    expect(
      records.flatMap((record) =>
        record.type === 'file'
          ? [[record.path, record.version, record.content, record.deletedAt !== null]]
          : [],
      ),
    ).toEqual([
      ['notes/plan.md', 2, 'second draft of the plan', false],
      ['old.md', 1, 'an old note', true],
    ]);
    expect(
      records.flatMap((record) =>
        record.type === 'fileVersion' ? [[record.version, record.content]] : [],
      ),
    ).toEqual([
      [1, 'first draft of the plan'],
      [1, 'an old note'],
    ]);
  });

  it('keeps every reply well under the NATS message limit', async () => {
    const userId = randomUUID();
    const big = (letter: string) => `${letter.repeat(99)}\n`.repeat(3_000);
    for (const name of ['a', 'b', 'c']) {
      await clientBus.request(memoryFilesWrite, {
        userId,
        path: `big/${name}.md`,
        content: big(name),
      });
    }
    const first = await clientBus.request(memoryExportPage, { userId, type: 'file' });
    expect(first.records).toHaveLength(1);
    expect(first.next).toBeDefined();
    expect(Buffer.byteLength(JSON.stringify(first))).toBeLessThan(600_000);
    const { records } = await exportAll(userId);
    expect(records.map((record) => (record.type === 'file' ? record.path : record.type))).toEqual([
      'big/a.md',
      'big/b.md',
      'big/c.md',
    ]);
  });

  it('leaves forgotten messages out, and every reference to them', async () => {
    const userId = randomUUID();
    const seeded = await seedMemory(userId);
    const before = (await exportAll(userId)).records.filter((record) => record.type === 'message');
    const gardenStart = before[3];
    if (!gardenStart) throw new Error('seed has no imported conversation');
    const { forgotten } = await clientBus.request(memoryForgetApply, {
      userId,
      items: [
        { kind: 'message', id: seeded.lisbon.id },
        { kind: 'message', id: gardenStart.id },
      ],
    });
    expect(forgotten).toBe(2);

    const { records } = await exportAll(userId);
    const ids = idsOf(records);
    expect(ids.has(seeded.lisbon.id)).toBe(false);
    expect(ids.has(gardenStart.id)).toBe(false);
    expect(records.filter((record) => record.type === 'message')).toHaveLength(5);
    expect(records.find((record) => record.type === 'summary')).toMatchObject({
      fromMessageId: before[4]?.id,
      toMessageId: before[4]?.id,
    });
    expect(records.find((record) => 'id' in record && record.id === seeded.nurse.id)).toMatchObject(
      {
        sourceMessageIds: [],
      },
    );
  });

  it('answers a cursor that is not one of its own with bad_request', async () => {
    const userId = randomUUID();
    const error = await catchBusError(
      clientBus.request(memoryExportPage, { userId, type: 'fact', after: '12_x_0' }),
    );
    expect(error.code).toBe('bad_request');
    const seqForTime = await catchBusError(
      clientBus.request(memoryExportPage, { userId, type: 'fact', after: `42_${randomUUID()}_0` }),
    );
    expect(seqForTime.message).toBe('after: not a cursor of a fact export');
  });
});

const at = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString();

// A current standing rule of an export, written a month ago.
const rule = (content: string, fields: Partial<Extract<ExportRecord, { type: 'fact' }>> = {}) =>
  ({
    type: 'fact',
    id: randomUUID(),
    category: 'rule',
    content,
    tags: [],
    importance: 5,
    sourceMessageIds: [],
    validFrom: at(30),
    validTo: null,
    supersededBy: null,
    createdAt: at(30),
    updatedAt: at(30),
    ...fields,
  }) satisfies ExportRecord;

describe('memory.import.records', () => {
  it('imports under new ids, remaps every reference, and adds nothing the second time', async () => {
    const alice = randomUUID();
    const bob = randomUUID();
    await seedMemory(alice);
    const exported = (await exportAll(alice)).records;

    expect(await importAll(bob, exported)).toEqual({
      conversations: 2,
      messages: 7,
      summaries: 1,
      facts: 4,
      files: 2,
      documents: 1,
    });
    const restored = (await exportAll(bob)).records;
    expect(restored).toEqual(
      exported.map((record) => remapIds(record, (id) => importedId(bob, id))),
    );
    const { instructions } = await clientBus.request(memoryInstructionsGet, { userId: bob });
    expect(instructions.text).toBe(INSTRUCTIONS);

    // A second import, in other batch sizes, finds everything stored.
    expect(await importAll(bob, exported, 17)).toEqual({
      conversations: 0,
      messages: 0,
      summaries: 0,
      facts: 0,
      files: 0,
      documents: 0,
    });
    expect((await exportAll(bob)).records).toEqual(restored);

    // Searchable like its own memories: valid facts only, documents, summaries.
    const search = async (query: string, kinds: ('message' | 'fact' | 'summary' | 'document')[]) =>
      (await clientBus.request(memorySearch, { userId: bob, query, kinds })).results;
    expect((await search('flights to Lisbon', ['message']))[0]?.text).toBe(
      'We booked the flights to Lisbon for June.',
    );
    const teas = (await search('tea', ['fact'])).map((result) => result.text);
    expect(teas[0]).toBe('Prefers jasmine tea');
    expect(teas).not.toContain('Prefers green tea');
    expect((await search('storm number 250 lighthouse', ['document']))[0]?.text).toContain(
      'storm number 250',
    );
    expect((await search('garden beds', ['summary']))[0]?.text).toBe(
      'SUMMARY: the user plans raised garden beds.',
    );

    // Recall sees the restored conversation: after the summary, in order.
    const conversationId = restored.flatMap((record) =>
      record.type === 'conversation' && !record.isDefault ? [record.id] : [],
    )[0];
    if (!conversationId) throw new Error('no imported conversation');
    const recall = await clientBus.request(memoryRecall, { userId: bob, conversationId });
    expect(recall.summaries.map((summary) => summary.content)).toEqual([
      'SUMMARY: the user plans raised garden beds.',
    ]);
    expect(recall.recent.map((message) => message.content)).toEqual([
      'Tomatoes go by the wall.',
      'They like the warmth.',
    ]);
  });

  it('keeps the standing tier within its cap: a current rule past it is stored ended and reported', async () => {
    const userId = randomUUID();
    // 600 of the 1,000 tokens are the user's own instructions on this install.
    const instructions = 'Answer in Norwegian. '.repeat(120).trim();
    await clientBus.request(memoryInstructionsPut, { userId, text: instructions });
    const fits = rule(`Always quote prices in NOK. ${'Round to whole kroner. '.repeat(30)}`.trim());
    // Long, but an older version: only current rules take part of the cap.
    const older = rule('Quote prices in euros. '.repeat(60).trim(), {
      validTo: at(10),
      supersededBy: fits.id,
    });
    const tooLong = rule(`Sign every answer. ${'With a short poem. '.repeat(40)}`.trim());
    const short = rule('Use metric units.');
    const fact = { ...rule('Lives in Bergen.'), category: 'fact' } satisfies ExportRecord;
    const records = [fits, older, tooLong, short, fact];

    const answer = await clientBus.request(memoryImportRecords, { userId, records });

    const inUse = estimateTokens(instructions) + estimateTokens(fits.content);
    expect(inUse + estimateTokens(tooLong.content)).toBeGreaterThan(1_000);
    expect(answer).toEqual({
      imported: expect.objectContaining({ facts: 5 }),
      instructions: 'none',
      rulesOverCap: [
        {
          id: tooLong.id,
          content: tooLong.content,
          reason:
            `standing instructions and rules are capped at 1000 tokens: ${inUse} are in use ` +
            `and this needs ${estimateTokens(tooLong.content)}; shorten or remove some first`,
        },
      ],
    });
    const standing = await clientBus.request(memoryFactsList, { userId, category: 'rule' });
    expect(standing.facts.map((stored) => stored.content).sort()).toEqual(
      [fits.content, short.content].sort(),
    );
    const { instructions: tier } = await clientBus.request(memoryInstructionsGet, { userId });
    expect(tier.tokens + tier.rulesTokens).toBeLessThanOrEqual(tier.cap);
    // Ended at the import, kept as history, and in no search.
    const ended = await clientBus.request(memoryFactsGet, {
      userId,
      id: importedId(userId, tooLong.id),
    });
    expect(ended.fact).toMatchObject({ content: tooLong.content, supersededBy: null });
    expect(Date.parse(ended.fact.validTo ?? '')).toBeLessThanOrEqual(Date.now());
    const found = await clientBus.request(memorySearch, {
      userId,
      query: 'sign every answer with a short poem',
      kinds: ['fact'],
    });
    expect(found.results.map((result) => result.id)).not.toContain(importedId(userId, tooLong.id));

    // The same file again adds nothing and reports nothing: its rules are stored.
    expect(await clientBus.request(memoryImportRecords, { userId, records })).toEqual({
      imported: expect.objectContaining({ facts: 0 }),
      rulesOverCap: [],
      instructions: 'none',
    });
  });

  it("takes the file's instructions only when the user has none, and within the cap", async () => {
    const record = (text: string) =>
      ({
        type: 'instructions',
        text,
        updatedAt: '2026-03-01T08:00:00.000Z',
      }) satisfies ExportRecord;
    const importInstructions = async (userId: string, text: string) =>
      (await clientBus.request(memoryImportRecords, { userId, records: [record(text)] }))
        .instructions;
    const textOf = async (userId: string) =>
      (await clientBus.request(memoryInstructionsGet, { userId })).instructions.text;

    // A user moving installs has none: they take the file's, with when they were written.
    const fresh = randomUUID();
    expect(await importInstructions(fresh, INSTRUCTIONS)).toBe('imported');
    expect(await textOf(fresh)).toBe(INSTRUCTIONS);
    expect((await exportAll(fresh)).records).toEqual([record(INSTRUCTIONS)]);
    // Again: nothing changes.
    expect(await importInstructions(fresh, INSTRUCTIONS)).toBe('same');
    expect(await importInstructions(fresh, `  ${INSTRUCTIONS.toUpperCase()}`)).toBe('same');
    expect((await exportAll(fresh)).records).toEqual([record(INSTRUCTIONS)]);

    // A user who has their own keeps them.
    const settled = randomUUID();
    await clientBus.request(memoryInstructionsPut, { userId: settled, text: 'Answer in Welsh.' });
    expect(await importInstructions(settled, INSTRUCTIONS)).toBe('kept-yours');
    expect(await textOf(settled)).toBe('Answer in Welsh.');

    // One who cleared theirs has none.
    await clientBus.request(memoryInstructionsPut, { userId: settled, text: '' });
    expect(await importInstructions(settled, INSTRUCTIONS)).toBe('imported');
    expect(await textOf(settled)).toBe(INSTRUCTIONS);

    // Past the cap beside the user's rules, as PUT refuses: nothing changes.
    const ruled = randomUUID();
    await clientBus.request(memoryFactsRemember, {
      userId: ruled,
      content: `Quote prices in NOK. ${'Round to whole kroner. '.repeat(60)}`.trim(),
      category: 'rule',
    });
    const long = 'Keep it short. '.repeat(200).trim();
    const put = await catchBusError(
      clientBus.request(memoryInstructionsPut, { userId: ruled, text: long }),
    );
    expect(put.code).toBe('bad_request');
    expect(await importInstructions(ruled, long)).toBe('over-cap');
    expect(await textOf(ruled)).toBe('');

    // A batch without instructions says so; one with two is refused.
    const { instructions } = await clientBus.request(memoryImportRecords, {
      userId: fresh,
      records: [{ type: 'conversation', id: randomUUID(), isDefault: false, createdAt: at(1) }],
    });
    expect(instructions).toBe('none');
    const twice = await catchBusError(
      clientBus.request(memoryImportRecords, {
        userId: fresh,
        records: [record('One.'), record('Two.')],
      }),
    );
    expect(twice.code).toBe('bad_request');
  });

  it("checks the file's rules against the cap with the instructions it set", async () => {
    const userId = randomUUID();
    // 600 of the 1,000 tokens.
    const instructions = 'Answer in Norwegian. '.repeat(120).trim();
    const long = rule(`Sign every answer. ${'With a short poem. '.repeat(100)}`.trim());
    const answer = await clientBus.request(memoryImportRecords, {
      userId,
      records: [
        { type: 'instructions', text: instructions, updatedAt: at(1) },
        long,
        rule('Use metric units.'),
      ],
    });
    expect(estimateTokens(instructions) + estimateTokens(long.content)).toBeGreaterThan(1_000);
    expect(answer.instructions).toBe('imported');
    expect(answer.rulesOverCap.map((over) => over.id)).toEqual([long.id]);
    const standing = await clientBus.request(memoryFactsList, { userId, category: 'rule' });
    expect(standing.facts.map((stored) => stored.content)).toEqual(['Use metric units.']);
  });

  it('stores a rule the user already has, in the same words, once', async () => {
    const userId = randomUUID();
    const { fact: own } = await clientBus.request(memoryFactsRemember, {
      userId,
      content: 'Never book flights before 9.',
      category: 'rule',
    });
    const same = rule('  never BOOK flights\nbefore 9. ');
    const older = rule('Never book flights before 8.', {
      validTo: at(10),
      supersededBy: same.id,
    });
    // Twice in the file too: the second is a repeat of the first.
    const metric = rule('Use metric units.');
    const metricAgain = rule('use metric units');
    const records = [same, older, metric, metricAgain];

    const answer = await clientBus.request(memoryImportRecords, { userId, records });

    // The older version is new history; the repeats add nothing.
    expect(answer.imported.facts).toBe(2);
    expect(answer.rulesOverCap).toEqual([]);
    const standing = await clientBus.request(memoryFactsList, { userId, category: 'rule' });
    expect(standing.facts.map((stored) => stored.id).sort()).toEqual(
      [own.id, importedId(userId, metric.id)].sort(),
    );
    const { instructions: tier } = await clientBus.request(memoryInstructionsGet, { userId });
    expect(tier.rulesTokens).toBe(estimateTokens(own.content) + estimateTokens(metric.content));
    // The repeat is kept ended, so its older version still names it, as history.
    const repeat = await clientBus.request(memoryFactsGet, {
      userId,
      id: importedId(userId, same.id),
    });
    expect(Date.parse(repeat.fact.validTo ?? '')).toBeLessThanOrEqual(Date.now());
    expect(repeat.history.map((version) => version.content)).toEqual([older.content]);

    // The same file again changes nothing.
    expect(await clientBus.request(memoryImportRecords, { userId, records })).toEqual({
      imported: expect.objectContaining({ facts: 0 }),
      rulesOverCap: [],
      instructions: 'none',
    });
    const again = await clientBus.request(memoryFactsList, { userId, category: 'rule' });
    expect(again.facts).toEqual(standing.facts);
  });

  it("keeps users apart: each import is the importer's own", async () => {
    const alice = randomUUID();
    const bob = randomUUID();
    const carol = randomUUID();
    const seeded = await seedMemory(alice);
    const exported = (await exportAll(alice)).records;
    await importAll(bob, exported);
    const bobsBefore = (await exportAll(bob)).records;
    await importAll(carol, exported, 50);

    const bobs = (await exportAll(bob)).records;
    const carols = (await exportAll(carol)).records;
    expect(bobs).toEqual(bobsBefore);
    expect(carols).toHaveLength(bobs.length);
    const aliceIds = idsOf(exported);
    const carolIds = idsOf(carols);
    for (const id of idsOf(bobs)) {
      expect(aliceIds.has(id)).toBe(false);
      expect(carolIds.has(id)).toBe(false);
    }
    expect((await exportAll(randomUUID())).records).toEqual([]);

    // Bob cannot forget Alice's originals by their ids.
    const { forgotten } = await clientBus.request(memoryForgetApply, {
      userId: bob,
      items: [
        { kind: 'message', id: seeded.lisbon.id },
        { kind: 'fact', id: seeded.jasmine.id },
      ],
    });
    expect(forgotten).toBe(0);
    expect((await exportAll(alice)).records).toEqual(exported);
  });

  it('refuses a batch that refers to records not imported before it', async () => {
    const userId = randomUUID();
    const orphan = await catchBusError(
      clientBus.request(memoryImportRecords, {
        userId,
        records: [
          {
            type: 'message',
            id: randomUUID(),
            conversationId: randomUUID(),
            role: 'user',
            content: 'hello',
            author: null,
            metadata: {},
            createdAt: '2024-01-01T00:00:00.000Z',
          },
        ],
      }),
    );
    expect(orphan.code).toBe('bad_request');
    expect(orphan.message).toMatch(/its conversation was not imported/);

    const early = await catchBusError(
      clientBus.request(memoryImportRecords, {
        userId,
        records: [
          {
            type: 'fact',
            id: randomUUID(),
            category: 'fact',
            content: 'An old version',
            tags: [],
            importance: 5,
            sourceMessageIds: [],
            validFrom: '2024-01-01T00:00:00.000Z',
            validTo: '2024-02-01T00:00:00.000Z',
            supersededBy: randomUUID(),
            createdAt: '2024-01-01T00:00:00.000Z',
            updatedAt: '2024-02-01T00:00:00.000Z',
          },
        ],
      }),
    );
    expect(early.code).toBe('bad_request');
    // Nothing of the refused batch stayed.
    expect((await exportAll(userId)).records).toEqual([]);
  });

  it('derives the same version-8 UUID for the same user and id, a different one per user', () => {
    const id = randomUUID();
    const user = randomUUID();
    const derived = importedId(user, id);
    expect(derived).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(importedId(user, id.toUpperCase())).toBe(derived);
    expect(importedId(randomUUID(), id)).not.toBe(derived);
  });
});

import { randomUUID } from 'node:crypto';
import {
  ChatResponse,
  ErrorBody,
  ExportFileRecord,
  ExportHeader,
  ExportRecordType,
  MemoryExportImportResponse,
  MemoryFactsGetResponse,
  MemoryFactsRememberResponse,
  MemoryForgetApplyResponse,
  MemoryForgetPreviewResponse,
  MemoryInstructionsResponse,
  MemorySearchResponse,
  workspaceFileUrl,
} from '@jarvis/contracts';
import {
  type FakeLlmRequest,
  type StackFixture,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

type SentMessage = { role: string; content: string };

function sentMessages(request: FakeLlmRequest | undefined): SentMessage[] {
  const body = request?.body;
  if (typeof body !== 'object' || body === null || !('messages' in body)) return [];
  return Array.isArray(body.messages) ? body.messages : [];
}

function isSummaryRequest(request: FakeLlmRequest): boolean {
  return sentMessages(request).some((message) =>
    message.content.includes('Conversation to condense'),
  );
}

// A turn's prompt starts with the persona; other requests are background work.
function isTurnRequest(request: FakeLlmRequest): boolean {
  return sentMessages(request)[0]?.content.startsWith('You are Jarvis') ?? false;
}

// Turns get a short reply, compaction its summary, and fact extraction "nothing to keep" at its
// first attempt, so no retries run beside the test.
function reply(request: FakeLlmRequest): { content: string } {
  if (isTurnRequest(request)) return { content: 'Noted.' };
  if (isSummaryRequest(request)) return { content: SUMMARY };
  return { content: '{"operations": []}' };
}

const INSTRUCTIONS = 'Answer in English. Keep answers short.';
const SUMMARY = 'SUMMARY: the user planned raised garden beds with tomatoes by the wall.';
const GARDEN = Array.from({ length: 12 }, (_, i) => ({
  role: i % 2 === 0 ? 'user' : 'assistant',
  content:
    `Garden note ${i}: ${'raised beds, compost, tomatoes by the warm wall, and watering every other evening in summer. '.repeat(3)}`.trim(),
  createdAt: new Date(Date.UTC(2023, 2, 2, 10, i)).toISOString(),
  ...(i === 1 ? { author: 'Gardener bot', metadata: { source: 'old-chat', n: i } } : {}),
}));
// A chart the garden conversation's workspace holds (a PNG signature and bytes that do not
// compress), and a data file past what one page of the workspace export carries inline.
const CHART = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  Buffer.from(Array.from({ length: 4_000 }, (_, i) => (i * 7919) % 251)),
]);
const SOIL_DATA = Buffer.from(Array.from({ length: 600_000 }, (_, i) => (i * 104_729) % 256));
const LIGHTHOUSE = Array.from(
  { length: 300 },
  (_, i) => `Entry ${i}: the lighthouse keeper logged storm number ${i} near the cliffs.`,
).join(' ');

type Exported = { header: ExportHeader; records: ExportFileRecord[]; text: string };

// Every line checked against its schema.
function parseExport(text: string): Exported {
  const [first, ...rest] = text.trimEnd().split('\n');
  return {
    header: ExportHeader.parse(JSON.parse(first ?? '')),
    records: rest.map((line) => ExportFileRecord.parse(JSON.parse(line))),
    text,
  };
}

function countByType(records: ExportFileRecord[]): Record<string, number> {
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

function remapIds(record: ExportFileRecord, map: Map<string, string>): Record<string, unknown> {
  const lookup = (id: string) => map.get(id) ?? `unmapped:${id}`;
  const copy: Record<string, unknown> = { ...record };
  for (const field of ID_FIELDS) {
    const value = copy[field];
    if (typeof value === 'string') copy[field] = lookup(value);
  }
  if (record.type === 'fact') copy.sourceMessageIds = record.sourceMessageIds.map(lookup);
  return copy;
}

// Another user's (or install's) copy of an export equals it once ids are matched up by position
// within each type: everything else, order included, must be the same. A workspace file's id is
// its conversation's, so it follows the conversation's match.
function expectSameMemory(copy: Exported, original: Exported) {
  expect(copy.header).toMatchObject({ type: 'header', format: 'jarvis-memory', version: 3 });
  expect(countByType(copy.records)).toEqual(countByType(original.records));
  const map = new Map<string, string>();
  for (const type of ExportRecordType.options) {
    const mine = original.records.filter((record) => record.type === type);
    const theirs = copy.records.filter((record) => record.type === type);
    for (const [index, record] of mine.entries()) {
      const counterpart = theirs[index];
      if ('id' in record && counterpart && 'id' in counterpart) map.set(record.id, counterpart.id);
    }
  }
  for (const [from, to] of map) expect(to).not.toBe(from);
  expect(copy.records).toEqual(original.records.map((record) => remapIds(record, map)));
}

describe('export and import of a whole memory', () => {
  let first: StackFixture;
  let fresh: StackFixture | undefined;
  let alice: string;
  let exported: Exported;

  const call = (
    fixture: StackFixture,
    method: string,
    path: string,
    key: string,
    body?: unknown,
    contentType = 'application/json',
  ) =>
    fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': contentType },
      ...(body === undefined
        ? {}
        : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });

  const exportOf = async (fixture: StackFixture, key: string) => {
    const response = await call(fixture, 'GET', '/v1/memory/export', key);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    expect(response.headers.get('content-disposition')).toBe(
      'attachment; filename="jarvis-memory.jsonl"',
    );
    return parseExport(await response.text());
  };

  const importInto = async (fixture: StackFixture, key: string, text: string) => {
    const response = await call(
      fixture,
      'POST',
      '/v1/memory/import',
      key,
      text,
      'application/x-ndjson',
    );
    const body: unknown = await response.json();
    expect(response.status, JSON.stringify(body)).toBe(200);
    const answer = MemoryExportImportResponse.parse(body);
    expect(answer.notImported).toEqual([]);
    return answer.imported;
  };

  const putWorkspaceFile = async (key: string, url: string, bytes: Buffer, type: string) => {
    const response = await fetch(`${first.stack.gatewayUrl}${url}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${key}`, 'content-type': type },
      body: bytes,
    });
    expect(response.status, await response.text()).toBe(201);
  };

  const downloadWorkspaceFile = async (fixture: StackFixture, key: string, url: string) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${url}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(response.status).toBe(200);
    return Buffer.from(await response.arrayBuffer());
  };

  const search = async (fixture: StackFixture, key: string, query: string, kinds?: string[]) =>
    MemorySearchResponse.parse(
      await (
        await call(fixture, 'POST', '/v1/memory/search', key, {
          query,
          ...(kinds ? { kinds } : {}),
        })
      ).json(),
    ).results;

  beforeAll(async () => {
    // Tiny thresholds on the first install, so an imported conversation gets a summary. The
    // fresh install starts in its own test: two stacks starting at once beside the other
    // packages' tests made this hook outlast its timeout in CI.
    first = await startStackFixture({ SUMMARY_TRIGGER_TOKENS: '500', SUMMARY_KEEP_TOKENS: '100' });
    first.fake.onChat(reply);
    alice = (await first.createUser('alice')).apiKey;

    // Alice's memory: chat, an imported conversation (summarised), facts with history, a file
    // with two versions and a document.
    for (const message of ['My passport number is X1234567.', 'We fly to Lisbon in June.']) {
      const chat = await first.chat(alice, { message });
      expect(chat.status).toBe(200);
      ChatResponse.parse(await chat.json());
    }
    const gardenId = randomUUID();
    const garden = await call(
      first,
      'POST',
      `/v1/conversations/${gardenId}/messages/import`,
      alice,
      { messages: GARDEN },
    );
    expect(garden.status).toBe(200);
    // Files in the garden conversation's workspace, as run_code or an upload leaves them.
    await putWorkspaceFile(
      alice,
      workspaceFileUrl('conversation', gardenId, 'charts/beds.png'),
      CHART,
      'image/png',
    );
    await putWorkspaceFile(
      alice,
      workspaceFileUrl('conversation', gardenId, 'data/soil.bin'),
      SOIL_DATA,
      'application/octet-stream',
    );
    // Compaction (and each turn's fact extraction) run in the background; the rest waits for
    // the summary, so no request of the test runs beside them.
    await waitFor(
      async () => {
        const current = await exportOf(first, alice);
        return current.records.some((record) => record.type === 'summary') || undefined;
      },
      { timeoutMs: 60_000, what: 'the garden summary' },
    );
    const remember = async (body: unknown) =>
      MemoryFactsRememberResponse.parse(
        await (await call(first, 'POST', '/v1/memory/facts', alice, body)).json(),
      ).fact;
    const tea = await remember({
      content: 'Prefers green tea',
      category: 'preference',
      tags: ['drinks'],
    });
    const update = await call(first, 'PATCH', `/v1/memory/facts/${tea.id}`, alice, {
      content: 'Prefers jasmine tea',
    });
    expect(update.status, await update.text()).toBe(200);
    await remember({ content: 'Passport expires in March 2031', importance: 8 });
    const porto = await remember({ content: 'Lives in Porto' });
    expect((await call(first, 'DELETE', `/v1/memory/facts/${porto.id}`, alice)).status).toBe(200);
    for (const content of ['first draft of the plan', 'second draft of the plan']) {
      const write = await call(first, 'PUT', '/v1/memory/files/content', alice, {
        path: 'notes/plan.md',
        content,
        tags: ['plan'],
        metadata: { owner: 'alice' },
      });
      expect(write.status).toBe(200);
    }
    const instructions = await call(first, 'PUT', '/v1/me/instructions', alice, {
      text: INSTRUCTIONS,
    });
    expect(instructions.status, await instructions.text()).toBe(200);
    const document = await call(first, 'POST', '/v1/memory/documents', alice, {
      title: 'Lighthouse log',
      contentType: 'text/plain',
      content: LIGHTHOUSE,
      source: 'log.txt',
    });
    expect(document.status).toBe(201);
    exported = await exportOf(first, alice);
  });

  afterAll(async () => {
    await Promise.all([first?.close(), fresh?.close()]);
  });

  it('exports every kind of record, with its history', () => {
    expect(exported.text.split('\n')[0]).toMatch(
      /^\{"type":"header","format":"jarvis-memory","version":3,"exportedAt":"/,
    );
    const { records } = exported;
    const counts = countByType(records);
    // Her standing instructions come first.
    expect(records[0]).toMatchObject({ type: 'instructions', text: INSTRUCTIONS });
    expect(counts).toMatchObject({
      instructions: 1,
      conversation: 2,
      message: 4 + GARDEN.length,
      summary: 1,
      fact: 4,
      document: 1,
      workspaceFile: 2,
    });
    // The workspace files come last, in the garden conversation, with their bytes.
    const gardenConversation = records.find(
      (record) => record.type === 'message' && record.content === GARDEN[0]?.content,
    );
    const workspaceFiles = records.filter((record) => record.type === 'workspaceFile');
    expect(records.slice(-2)).toEqual(workspaceFiles);
    // As base64 text: a deep comparison of the bytes themselves takes seconds, and would hold
    // the event loop past the gateway's keep-alive timeout.
    const gardenId =
      gardenConversation?.type === 'message' ? gardenConversation.conversationId : '';
    expect(workspaceFiles).toEqual([
      {
        type: 'workspaceFile',
        kind: 'conversation',
        id: gardenId,
        path: 'charts/beds.png',
        mediaType: 'image/png',
        content: CHART.toString('base64'),
      },
      {
        type: 'workspaceFile',
        kind: 'conversation',
        id: gardenId,
        path: 'data/soil.bin',
        mediaType: 'application/octet-stream',
        content: SOIL_DATA.toString('base64'),
      },
    ]);
    expect(counts.documentChunk).toBeGreaterThan(2);
    // Besides the episodes each turn writes.
    const plan = records.find(
      (record) => record.type === 'file' && record.path === 'notes/plan.md',
    );
    expect(plan).toMatchObject({
      version: 2,
      content: 'second draft of the plan',
      tags: ['plan'],
      metadata: { owner: 'alice' },
      deletedAt: null,
    });
    expect(
      records.filter(
        (record) =>
          record.type === 'fileVersion' && plan && 'id' in plan && record.fileId === plan.id,
      ),
    ).toMatchObject([{ version: 1, content: 'first draft of the plan' }]);
    const facts = records.filter((record) => record.type === 'fact');
    expect(facts.map((fact) => [fact.content, fact.validTo === null])).toEqual([
      ['Prefers green tea', false],
      ['Prefers jasmine tea', true],
      ['Passport expires in March 2031', true],
      ['Lives in Porto', false],
    ]);
    expect(facts[0]?.supersededBy).toBe(facts[1]?.id);
    const messages = records.filter((record) => record.type === 'message');
    expect(messages.slice(4).map((message) => message.content)).toEqual(
      GARDEN.map((message) => message.content),
    );
    expect(messages[5]).toMatchObject({
      author: 'Gardener bot',
      metadata: { source: 'old-chat', n: 1 },
      createdAt: '2023-03-02T10:01:00.000Z',
    });
  });

  it("imports into another user as that user's own, once", async () => {
    const bob = (await first.createUser('bob')).apiKey;
    const imported = await importInto(first, bob, exported.text);
    const counts = countByType(exported.records);
    expect(imported).toEqual({
      conversations: counts.conversation,
      messages: counts.message,
      summaries: counts.summary,
      facts: counts.fact,
      files: counts.file,
      documents: counts.document,
      workspaceFiles: counts.workspaceFile,
    });
    const bobs = await exportOf(first, bob);
    expectSameMemory(bobs, exported);
    // Bob's copy of the chart is in his copy of the garden conversation, served as his.
    const bobsChart = bobs.records.find((record) => record.type === 'workspaceFile');
    if (bobsChart?.type !== 'workspaceFile') throw new Error("Bob's export has no workspace file");
    const chartUrl = workspaceFileUrl('conversation', bobsChart.id, 'charts/beds.png');
    expect((await downloadWorkspaceFile(first, bob, chartUrl)).equals(CHART)).toBe(true);
    const asAlice = await call(first, 'GET', chartUrl, alice);
    expect(asAlice.status).toBe(404);

    expect((await search(first, bob, 'flying to Lisbon'))[0]?.text).toBe(
      'We fly to Lisbon in June.',
    );
    expect((await search(first, bob, 'jasmine tea', ['fact']))[0]?.text).toBe(
      'Prefers jasmine tea',
    );
    expect((await search(first, bob, 'storm number 250', ['document']))[0]?.text).toContain(
      'storm number 250',
    );
    expect((await search(first, bob, 'garden beds tomatoes', ['summary']))[0]?.text).toBe(SUMMARY);

    expect(await importInto(first, bob, exported.text)).toEqual({
      conversations: 0,
      messages: 0,
      summaries: 0,
      facts: 0,
      files: 0,
      documents: 0,
      workspaceFiles: 0,
    });
    expectSameMemory(await exportOf(first, bob), exported);
  });

  it('refuses a malformed file with the line and the problem, importing nothing', async () => {
    const dave = (await first.createUser('dave')).apiKey;
    const lines = exported.text.split('\n');
    lines[4] = '{"type": "message", "id": ';
    const response = await call(
      first,
      'POST',
      '/v1/memory/import',
      dave,
      lines.join('\n'),
      'application/x-ndjson',
    );
    expect(response.status).toBe(400);
    expect(ErrorBody.parse(await response.json()).error).toEqual({
      code: 'bad_request',
      message: 'line 5: not valid JSON',
    });
    const wrongType = await call(first, 'POST', '/v1/memory/import', dave, { hello: 1 });
    expect(wrongType.status).toBe(400);
    expect((await exportOf(first, dave)).records).toEqual([]);
  });

  it('restores the export into a fresh install', async () => {
    fresh = await startStackFixture();
    const { apiKey } = await fresh.createUser('alice-again');
    await importInto(fresh, apiKey, exported.text);
    expectSameMemory(await exportOf(fresh, apiKey), exported);
    const instructions = await call(fresh, 'GET', '/v1/me/instructions', apiKey);
    expect(MemoryInstructionsResponse.parse(await instructions.json()).instructions.text).toBe(
      INSTRUCTIONS,
    );
    expect((await search(fresh, apiKey, 'passport number')).map((result) => result.text)).toContain(
      'My passport number is X1234567.',
    );
  });

  it('forgets by query: what matched is no longer searched or recalled, the fact keeps its record', async () => {
    const preview = await call(first, 'POST', '/v1/memory/forget/preview', alice, {
      query: 'passport',
    });
    expect(preview.status).toBe(200);
    const { matches } = MemoryForgetPreviewResponse.parse(await preview.json());
    const message = matches.find((match) => match.kind === 'message');
    const fact = matches.find((match) => match.kind === 'fact');
    expect(message?.text).toBe('My passport number is X1234567.');
    expect(fact?.text).toBe('Passport expires in March 2031');
    if (!message || !fact) throw new Error('preview found no message or fact');

    // The turn's episode (a memory file, which recall brings back too) says it as well: the user
    // forgets every match, as the preview offers them.
    const episodes = matches.filter((match) => match.kind === 'file');
    expect(episodes.some((episode) => episode.text.includes('X1234567'))).toBe(true);
    const applied = await call(first, 'POST', '/v1/memory/forget', alice, {
      items: matches.map((match) => ({ kind: match.kind, id: match.id })),
    });
    expect(MemoryForgetApplyResponse.parse(await applied.json())).toEqual({
      forgotten: matches.length,
    });

    const found = await search(first, alice, 'passport number X1234567 expires');
    expect(found.map((result) => result.id)).not.toContain(message.id);
    expect(found.map((result) => result.id)).not.toContain(fact.id);

    const kept = await call(first, 'GET', `/v1/memory/facts/${fact.id}`, alice);
    const keptBody: unknown = await kept.json();
    expect(kept.status, JSON.stringify(keptBody)).toBe(200);
    const { fact: closed } = MemoryFactsGetResponse.parse(keptBody);
    expect(closed).toMatchObject({ content: 'Passport expires in March 2031', supersededBy: null });
    expect(closed.validTo).not.toBeNull();

    const after = await exportOf(first, alice);
    expect(after.records.some((record) => 'id' in record && record.id === message.id)).toBe(false);

    // The next turn's prompt shows neither.
    const question = 'what is my passport number?';
    expect((await first.chat(alice, { message: question })).status).toBe(200);
    const prompt = first.fake
      .chatRequests()
      .filter((request) => sentMessages(request).at(-1)?.content === question)
      .at(-1);
    const shown = sentMessages(prompt)
      .map((sent) => sent.content)
      .join('\n');
    expect(shown).toContain(question);
    expect(shown).not.toContain('X1234567');
    expect(shown).not.toContain('March 2031');
  });
});

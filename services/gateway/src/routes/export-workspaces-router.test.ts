import { randomUUID } from 'node:crypto';
import { storedBlobNames } from '@jarvis/bus/testing';
import {
  ErrorBody,
  ExportedWorkspaceFile,
  ExportHeader,
  MemoryExportImportResponse,
  MemoryFactsListResponse,
  MemoryInstructionsResponse,
  UPLOADS_BUCKET,
  workspaceFileUrl,
} from '@jarvis/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser } from '../services/api-keys';
import { type RouterFixture, startRouterFixture, type TestUser } from './router-fixture';

// Workspace files in GET /v1/memory/export and back through POST /v1/memory/import, through the
// real memory and tools services (each its own process, on Postgres), the real uploads bucket and
// the gateway's real router. The tools service keeps files of at most 1 MiB here and the gateway
// takes lines for files of up to 2 MiB, so that a file the tools service refuses gets through
// the gateway's check, and "too large" costs little.
const TOOLS_FILE_MAX_BYTES = 1_024 * 1_024;
const GATEWAY_FILE_MAX_BYTES = 2 * TOOLS_FILE_MAX_BYTES;

let harness: RouterFixture;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  harness = await startRouterFixture('/v1', {
    services: ['memory', 'tools'],
    serviceEnv: { SANDBOX_ENABLED: 'false', WORKSPACE_FILE_MAX_MB: '1', WORKSPACE_QUOTA_MB: '3' },
    workspaceFileMaxBytes: GATEWAY_FILE_MAX_BYTES,
  });
  ({ alice, bob } = harness);
}, 120_000);

afterAll(async () => {
  await harness?.stop();
});

// Bytes that do not compress, larger than one NATS message would carry as base64 with the rest.
function bytesOf(size: number, seed = 1): Buffer {
  const bytes = Buffer.alloc(size);
  for (let index = 0; index < size; index += 1) bytes[index] = (index * 7919 + seed) % 251;
  return bytes;
}

function send(path: string, key: string, init: { method: string; body?: string | Buffer }) {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (init.body !== undefined) headers['content-type'] = 'application/x-ndjson';
  return fetch(`${harness.url}${path}`, { ...init, headers });
}

async function putFile(key: string, url: string, bytes: Buffer, contentType: string) {
  const response = await fetch(`${harness.url}${url.slice('/v1'.length)}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${key}`, 'content-type': contentType },
    body: bytes,
  });
  expect(response.status, await response.text()).toBe(201);
}

async function download(key: string, url: string): Promise<Buffer> {
  const response = await fetch(`${harness.url}${url.slice('/v1'.length)}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

type ParsedExport = { text: string; header: ExportHeader; lines: Record<string, unknown>[] };

async function exportOf(key: string): Promise<ParsedExport> {
  const response = await send('/memory/export', key, { method: 'GET' });
  expect(response.status).toBe(200);
  const text = await response.text();
  const [first, ...rest] = text.trimEnd().split('\n');
  return {
    text,
    header: ExportHeader.parse(JSON.parse(first ?? '')),
    lines: rest.map((line) => JSON.parse(line)),
  };
}

function workspaceFilesOf(exported: ParsedExport): ExportedWorkspaceFile[] {
  return exported.lines
    .filter((line) => line.type === 'workspaceFile')
    .map((line) => ExportedWorkspaceFile.parse(line));
}

async function importFile(key: string, text: string) {
  const response = await send('/memory/import', key, { method: 'POST', body: text });
  const body: unknown = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(200);
  return MemoryExportImportResponse.parse(body);
}

describe('workspace files in the memory export', () => {
  const conversationId = randomUUID();
  const missionId = randomUUID();
  const chart = bytesOf(2_000, 7);
  // Past what one export page carries inline: it goes by blob.
  const data = bytesOf(900_000, 3);
  let exported: ParsedExport;

  beforeAll(async () => {
    const imported = await fetch(`${harness.url}/conversations/${conversationId}/messages/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        messages: [
          { role: 'user', content: 'Draw me a chart.', createdAt: '2026-01-01T10:00:00.000Z' },
        ],
      }),
    });
    expect(imported.status, await imported.text()).toBe(200);
    const inChat = (path: string) => workspaceFileUrl('conversation', conversationId, path);
    await putFile(alice.key, inChat('charts/a.png'), chart, 'image/png');
    await putFile(alice.key, inChat('data/big.bin'), data, 'application/octet-stream');
    await putFile(
      alice.key,
      workspaceFileUrl('mission', missionId, 'report.txt'),
      Buffer.from('done'),
      'text/plain',
    );
    exported = await exportOf(alice.key);
  }, 60_000);

  it('exports each file as a line after the memory records, its bytes base64, as version 3', async () => {
    expect(exported.header.version).toBe(3);
    const types = exported.lines.map((line) => line.type);
    expect(types.slice(types.indexOf('workspaceFile'))).toEqual(Array(3).fill('workspaceFile'));
    const files = workspaceFilesOf(exported);
    expect(files.map(({ kind, id, path, mediaType }) => ({ kind, id, path, mediaType }))).toEqual([
      { kind: 'conversation', id: conversationId, path: 'charts/a.png', mediaType: 'image/png' },
      {
        kind: 'conversation',
        id: conversationId,
        path: 'data/big.bin',
        mediaType: 'application/octet-stream',
      },
      { kind: 'mission', id: missionId, path: 'report.txt', mediaType: 'text/plain' },
    ]);
    expect(Buffer.from(files[0]?.content ?? '', 'base64').equals(chart)).toBe(true);
    expect(Buffer.from(files[1]?.content ?? '', 'base64').equals(data)).toBe(true);
    expect(await storedBlobNames(harness.bus, UPLOADS_BUCKET)).toEqual([]);
    // Another user's export has none of them.
    expect(workspaceFilesOf(await exportOf(bob.key))).toEqual([]);
  });

  it("imports a conversation's files into the conversation the import made, once; a mission's are reported", async () => {
    const answer = await importFile(bob.key, exported.text);

    const missionLine = exported.text.trimEnd().split('\n').length;
    expect(answer).toEqual({
      imported: {
        conversations: 1,
        messages: 1,
        summaries: 0,
        facts: 0,
        files: 0,
        documents: 0,
        workspaceFiles: 2,
      },
      notImported: [
        {
          line: missionLine,
          kind: 'mission',
          id: missionId,
          path: 'report.txt',
          reason: "missions are not in the export, so a mission's files have no mission to go to",
        },
      ],
      rulesOverCap: [],
      instructions: 'none',
    });
    const bobs = await exportOf(bob.key);
    const conversation = bobs.lines.find((line) => line.type === 'conversation');
    const bobsConversation = String(conversation?.id);
    expect(bobsConversation).not.toBe(conversationId);
    const inBobsChat = (path: string) => workspaceFileUrl('conversation', bobsConversation, path);
    expect((await download(bob.key, inBobsChat('charts/a.png'))).equals(chart)).toBe(true);
    expect((await download(bob.key, inBobsChat('data/big.bin'))).equals(data)).toBe(true);
    expect(workspaceFilesOf(bobs).map(({ id, path }) => [id, path])).toEqual([
      [bobsConversation, 'charts/a.png'],
      [bobsConversation, 'data/big.bin'],
    ]);

    const again = await importFile(bob.key, exported.text);
    expect(again.imported.workspaceFiles).toBe(0);
    expect(again.imported.conversations).toBe(0);
    expect(await storedBlobNames(harness.bus, UPLOADS_BUCKET)).toEqual([]);
  });

  it('reports a file the tools service refuses and imports the rest', async () => {
    const carol = await newUser();
    const lines = exported.text.trimEnd().split('\n');
    const tooBig: ExportedWorkspaceFile = {
      type: 'workspaceFile',
      kind: 'conversation',
      id: conversationId,
      path: 'too-big.bin',
      mediaType: 'application/octet-stream',
      content: bytesOf(TOOLS_FILE_MAX_BYTES + 1).toString('base64'),
    };
    lines.push(JSON.stringify(tooBig));

    const answer = await importFile(carol, `${lines.join('\n')}\n`);

    expect(answer.imported).toMatchObject({ conversations: 1, workspaceFiles: 2 });
    expect(answer.notImported.map(({ line, path, reason }) => ({ line, path, reason }))).toEqual([
      expect.objectContaining({ path: 'report.txt' }),
      {
        line: lines.length,
        path: 'too-big.bin',
        reason: `the file is larger than the limit of ${TOOLS_FILE_MAX_BYTES} bytes for one file`,
      },
    ]);
    expect(await storedBlobNames(harness.bus, UPLOADS_BUCKET)).toEqual([]);
  });

  it('answers 413 naming a line longer than the largest workspace file, importing nothing', async () => {
    const dave = await newUser();
    const lines = exported.text.trimEnd().split('\n');
    const hugeContent = bytesOf(GATEWAY_FILE_MAX_BYTES + 100_000).toString('base64');
    lines.splice(2, 0, JSON.stringify({ ...workspaceFilesOf(exported)[0], content: hugeContent }));

    const response = await send('/memory/import', dave, {
      method: 'POST',
      body: `${lines.join('\n')}\n`,
    });

    expect(response.status).toBe(413);
    expect(ErrorBody.parse(await response.json()).error).toEqual({
      code: 'payload_too_large',
      message: `line 3: longer than ${4 * Math.ceil(GATEWAY_FILE_MAX_BYTES / 3) + 65_536} characters (a workspace file of at most ${GATEWAY_FILE_MAX_BYTES} bytes)`,
    });
    expect((await exportOf(dave)).lines).toEqual([]);
    expect(await storedBlobNames(harness.bus, UPLOADS_BUCKET)).toEqual([]);
  });

  it('refuses a bad line after a workspace file, leaving nothing in the bucket', async () => {
    const erin = await newUser();
    const text = `${exported.text}{"type": "message",\n`;

    const response = await send('/memory/import', erin, { method: 'POST', body: text });

    expect(response.status).toBe(400);
    expect(ErrorBody.parse(await response.json()).error.message).toMatch(/: not valid JSON$/);
    expect(await storedBlobNames(harness.bus, UPLOADS_BUCKET)).toEqual([]);
  });

  it('still imports a version 1 file, which has no workspace files', async () => {
    const frank = await newUser();
    const header = {
      type: 'header',
      format: 'jarvis-memory',
      version: 1,
      exportedAt: '2025-01-01T00:00:00.000Z',
    };
    const v1 = [
      JSON.stringify(header),
      ...exported.lines
        .filter((line) => line.type !== 'workspaceFile')
        .map((line) => JSON.stringify(line)),
    ].join('\n');

    const answer = await importFile(frank, v1);

    expect(answer).toEqual({
      imported: expect.objectContaining({ conversations: 1, messages: 1, workspaceFiles: 0 }),
      notImported: [],
      rulesOverCap: [],
      instructions: 'none',
    });
  });
});

async function putInstructions(key: string, text: string) {
  const response = await fetch(`${harness.url}/me/instructions`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text }),
  });
  expect(response.status, await response.text()).toBe(200);
}

async function instructionsOf(key: string) {
  const response = await fetch(`${harness.url}/me/instructions`, {
    headers: { authorization: `Bearer ${key}` },
  });
  expect(response.status).toBe(200);
  return MemoryInstructionsResponse.parse(await response.json()).instructions;
}

async function rulesOf(key: string): Promise<string[]> {
  const response = await fetch(`${harness.url}/memory/facts?category=rule`, {
    headers: { authorization: `Bearer ${key}` },
  });
  expect(response.status).toBe(200);
  return MemoryFactsListResponse.parse(await response.json()).facts.map((fact) => fact.content);
}

describe('standing instructions in the memory export', () => {
  const INSTRUCTIONS = 'Answer in Norwegian. Keep answers short.';
  let henry: string;
  let exported: ParsedExport;

  beforeAll(async () => {
    henry = await newUser();
    await putInstructions(henry, INSTRUCTIONS);
    const fact = await fetch(`${harness.url}/memory/facts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${henry}`, 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'Use metric units.', category: 'rule' }),
    });
    expect(fact.status, await fact.text()).toBe(201);
    exported = await exportOf(henry);
  });

  it('writes them on the line after the header', () => {
    expect(exported.header.version).toBe(3);
    expect(exported.lines[0]).toEqual({
      type: 'instructions',
      text: INSTRUCTIONS,
      updatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(exported.lines.filter((line) => line.type === 'instructions')).toHaveLength(1);
  });

  it('gives them to a user who has none; a second import changes nothing', async () => {
    const ida = await newUser();

    const answer = await importFile(ida, exported.text);

    expect(answer.instructions).toBe('imported');
    expect(answer.imported.facts).toBe(1);
    expect((await instructionsOf(ida)).text).toBe(INSTRUCTIONS);
    expect(await rulesOf(ida)).toEqual(['Use metric units.']);
    const again = await importFile(ida, exported.text);
    expect(again).toEqual({
      ...answer,
      imported: { ...answer.imported, facts: 0 },
      instructions: 'same',
    });
    expect((await exportOf(ida)).lines.slice(0, 1)).toEqual(exported.lines.slice(0, 1));
    expect(await rulesOf(ida)).toEqual(['Use metric units.']);
  });

  it("keeps a user's own instructions and says so; a rule they have already is not stored twice", async () => {
    const jack = await newUser();
    await putInstructions(jack, 'Answer in Welsh.');
    const fact = await fetch(`${harness.url}/memory/facts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${jack}`, 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'use METRIC units', category: 'rule' }),
    });
    expect(fact.status, await fact.text()).toBe(201);
    const before = await instructionsOf(jack);

    const answer = await importFile(jack, exported.text);

    expect(answer.instructions).toBe('kept-yours');
    expect(answer.imported.facts).toBe(0);
    expect((await instructionsOf(jack)).text).toBe('Answer in Welsh.');
    expect(await rulesOf(jack)).toEqual(['use METRIC units']);
    expect((await instructionsOf(jack)).rulesTokens).toBe(before.rulesTokens);
  });

  it('refuses a file with two instructions lines, naming the second', async () => {
    const kate = await newUser();
    const [header = '', first = '', ...rest] = exported.text.trimEnd().split('\n');
    const text = [header, first, ...rest, first].join('\n');

    const response = await send('/memory/import', kate, { method: 'POST', body: text });

    expect(response.status).toBe(400);
    expect(ErrorBody.parse(await response.json()).error.message).toBe(
      `line ${rest.length + 3}: the instructions record appears twice (first on line 2)`,
    );
    expect((await instructionsOf(kate)).text).toBe('');
  });
});

describe('standing rules in an import', () => {
  it('stores a rule past the cap ended, and names it with its line and the reason', async () => {
    const grace = await newUser();
    // 600 of the 1,000 tokens.
    const instructions = 'Keep it short. '.repeat(160).trim();
    const put = await fetch(`${harness.url}/me/instructions`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${grace}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: instructions }),
    });
    expect(put.status, await put.text()).toBe(200);
    const rule = (content: string) => ({
      type: 'fact',
      id: randomUUID(),
      category: 'rule',
      content,
      tags: [],
      importance: 5,
      sourceMessageIds: [],
      validFrom: '2026-01-01T00:00:00.000Z',
      validTo: null,
      supersededBy: null,
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
    });
    const fits = rule('Use metric units.');
    const tooLong = rule('Cite a source for every claim. '.repeat(60).trim());
    const file = [
      { type: 'header', format: 'jarvis-memory', version: 2, exportedAt: '2026-02-01T00:00:00Z' },
      fits,
      tooLong,
    ]
      .map((line) => JSON.stringify(line))
      .join('\n');

    const answer = await importFile(grace, file);

    expect(answer.imported.facts).toBe(2);
    expect(answer.rulesOverCap).toEqual([
      {
        line: 3,
        id: tooLong.id,
        content: tooLong.content,
        reason: expect.stringMatching(/^standing instructions and rules are capped at 1000 tokens/),
      },
    ]);
    const response = await fetch(`${harness.url}/me/instructions`, {
      headers: { authorization: `Bearer ${grace}` },
    });
    const { instructions: tier } = MemoryInstructionsResponse.parse(await response.json());
    expect(tier.rulesTokens).toBe(Math.ceil(fits.content.length / 4));
  });
});

async function newUser(): Promise<string> {
  const created = await createUser(harness.db.pool, `user-${randomUUID().slice(0, 8)}`);
  return created.apiKey;
}

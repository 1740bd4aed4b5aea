import { randomUUID } from 'node:crypto';
import { type BlobStore, type Bus, openBlobStore } from '@jarvis/bus';
import { catchBusError, connectTestBus, storedBlobNames } from '@jarvis/bus/testing';
import {
  toolsWorkspacesExportPage,
  UPLOADS_BUCKET,
  UPLOADS_TTL_MS,
  type WorkspaceExportFile,
} from '@jarvis/contracts';
import type { TestDatabase } from '@jarvis/testkit';
import { uniqueNamespace } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startToolsDatabase } from '../tools-database-fixture';
import { registerWorkspaceExportHandler } from './workspace-export-handler';
import { type Workspace, writeWorkspaceFile } from './workspace-repository';
import { fillWorkspace } from './workspace-test-fixture';

// tools.workspaces.exportPage through the real bus, large files through the real uploads bucket,
// on a real database: what GET /v1/memory/export asks for after the memory's records.

let db: TestDatabase;
let server: Bus;
let client: Bus;
let uploads: BlobStore;
let subscription: { unsubscribe(): void } | undefined;

beforeAll(async () => {
  const namespace = uniqueNamespace('workspace-export');
  [db, server, client] = await Promise.all([
    startToolsDatabase(),
    connectTestBus(namespace),
    connectTestBus(namespace),
  ]);
  uploads = await openBlobStore(client, UPLOADS_BUCKET, { ttlMs: UPLOADS_TTL_MS });
  subscription = registerWorkspaceExportHandler({
    bus: server,
    pool: db.pool,
    uploads: await openBlobStore(server, UPLOADS_BUCKET, { ttlMs: UPLOADS_TTL_MS }),
  });
}, 60_000);
afterAll(async () => {
  subscription?.unsubscribe();
  const jsm = await client?.nc.jetstreamManager();
  await jsm?.streams.delete(`OBJ_${client.streamName(UPLOADS_BUCKET)}`).catch(() => undefined);
  await Promise.all([client?.close(), server?.close()]);
  await db?.stop();
});

// Bytes that do not compress, larger than one NATS message.
function bytesOf(size: number, seed = 1): Buffer {
  const bytes = Buffer.alloc(size);
  for (let index = 0; index < size; index += 1) bytes[index] = (index * 7919 + seed) % 251;
  return bytes;
}

type ExportedBytes = { file: WorkspaceExportFile; bytes: Buffer; page: number };

// As the gateway exports: page after page, each blob read and deleted.
async function exportAll(userId: string): Promise<{ files: ExportedBytes[]; pages: number }> {
  const files: ExportedBytes[] = [];
  let after: string | undefined;
  let pages = 0;
  do {
    const page = await client.request(
      toolsWorkspacesExportPage,
      { userId, ...(after === undefined ? {} : { after }) },
      { timeoutMs: 30_000 },
    );
    pages += 1;
    for (const file of page.files) {
      if ('blob' in file) {
        const bytes = Buffer.from((await uploads.get(file.blob)) ?? []);
        await uploads.delete(file.blob);
        files.push({ file, bytes, page: pages });
      } else {
        files.push({ file, bytes: Buffer.from(file.content, 'base64'), page: pages });
      }
    }
    after = page.next;
  } while (after !== undefined);
  return { files, pages };
}

async function write(userId: string, workspace: Workspace, path: string, content: Buffer) {
  await writeWorkspaceFile(db.pool, userId, workspace, {
    path,
    content,
    mediaType: path.endsWith('.png') ? 'image/png' : 'text/plain',
  });
}

describe('tools.workspaces.exportPage', () => {
  it("pages through every workspace of the user, bytes included, a large file's by blob", async () => {
    const userId = randomUUID();
    const chat = { kind: 'conversation' as const, id: randomUUID() };
    const mission = { kind: 'mission' as const, id: randomUUID() };
    const big = bytesOf(1_500_000);
    await write(userId, chat, 'charts/a.png', bytesOf(2_000, 3));
    await write(userId, chat, 'data/big.bin', big);
    await write(userId, chat, 'notes.txt', Buffer.from('plan'));
    await write(userId, mission, 'report.txt', Buffer.from('done'));
    await write(userId, mission, 'empty.txt', Buffer.alloc(0));
    await write(randomUUID(), chat, 'theirs.txt', Buffer.from('not alice'));

    const { files, pages } = await exportAll(userId);

    expect(files.map(({ file }) => [file.kind, file.id, file.path])).toEqual([
      ['conversation', chat.id, 'charts/a.png'],
      ['conversation', chat.id, 'data/big.bin'],
      ['conversation', chat.id, 'notes.txt'],
      ['mission', mission.id, 'empty.txt'],
      ['mission', mission.id, 'report.txt'],
    ]);
    const bigFile = files[1];
    expect(bigFile?.file).toMatchObject({ size: 1_500_000, mediaType: 'text/plain' });
    expect('blob' in (bigFile?.file ?? {})).toBe(true);
    expect(bigFile?.bytes.equals(big)).toBe(true);
    // A large file ends its page: the caller holds one at a time.
    expect(pages).toBe(2);
    expect(files.map((file) => file.page)).toEqual([1, 1, 2, 2, 2]);
    expect(files[0]).toMatchObject({ file: { size: 2_000, mediaType: 'image/png' } });
    expect(files[0]?.bytes.equals(bytesOf(2_000, 3))).toBe(true);
    expect(files.map(({ bytes }) => bytes.toString()).slice(2)).toEqual(['plan', '', 'done']);
    expect(Date.parse(files[0]?.file.updatedAt ?? '')).toBeGreaterThan(Date.now() - 60_000);
    expect(await storedBlobNames(client, UPLOADS_BUCKET)).toEqual([]);
  });

  it('answers a full workspace in pages of at most 100 files, each file once', async () => {
    const userId = randomUUID();
    await fillWorkspace(db.pool, userId, { kind: 'conversation', id: randomUUID() }, 250);

    const { files, pages } = await exportAll(userId);

    expect(pages).toBe(3);
    expect(files.map(({ file }) => file.path)).toEqual(
      Array.from({ length: 250 }, (_, index) => `file-${String(index).padStart(4, '0')}`),
    );
    expect(files.every(({ bytes }) => bytes.toString() === 'x')).toBe(true);
  });

  it('keeps a page of inline files under half a NATS message', async () => {
    const userId = randomUUID();
    const chat = { kind: 'conversation' as const, id: randomUUID() };
    for (const index of [0, 1, 2, 3, 4, 5]) {
      await write(userId, chat, `part-${index}.bin`, bytesOf(100_000, index));
    }

    const { files, pages } = await exportAll(userId);

    expect(files.map(({ file }) => 'content' in file)).toEqual(Array(6).fill(true));
    expect(files.map((file) => file.page)).toEqual([1, 1, 1, 2, 2, 2]);
    expect(pages).toBe(2);
  });

  it('answers an empty page to a user with no files, and refuses a cursor it did not make', async () => {
    expect(await client.request(toolsWorkspacesExportPage, { userId: randomUUID() })).toEqual({
      files: [],
    });
    const refused = await catchBusError(
      client.request(toolsWorkspacesExportPage, { userId: randomUUID(), after: '["file", 1]' }),
    );
    expect(refused).toMatchObject({
      code: 'bad_request',
      message: 'after: not a cursor of this export',
    });
  });
});

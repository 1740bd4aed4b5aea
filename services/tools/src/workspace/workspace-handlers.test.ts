import { randomUUID } from 'node:crypto';
import { type BlobStore, type Bus, openBlobStore } from '@jarvis/bus';
import { catchBusError, connectTestBus, sendRaw, storedBlobNames } from '@jarvis/bus/testing';
import {
  newWorkspaceBlobName,
  toolsWorkspacesDelete,
  toolsWorkspacesGet,
  toolsWorkspacesList,
  toolsWorkspacesPut,
  UPLOADS_BUCKET,
  UPLOADS_TTL_MS,
} from '@jarvis/contracts';
import { createLogger } from '@jarvis/telemetry';
import { type TestDatabase, uniqueNamespace } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startToolsDatabase } from '../tools-database-fixture';
import { registerWorkspaceHandlers } from './workspace-handlers';
import { listWorkspaceFiles, WORKSPACE_MAX_FILES } from './workspace-repository';
import { fillWorkspace } from './workspace-test-fixture';

// tools.workspaces.* through the real bus, with file bodies through the real uploads bucket, on
// a real database: what the gateway's /v1/workspaces routes ask.
const LIMITS = { fileMaxBytes: 2_000_000, quotaBytes: 3_000_000 };

let db: TestDatabase;
let server: Bus;
let client: Bus;
let uploads: BlobStore;
let subscriptions: { unsubscribe(): void }[];

beforeAll(async () => {
  const namespace = uniqueNamespace('workspaces');
  [db, server, client] = await Promise.all([
    startToolsDatabase(),
    connectTestBus(namespace),
    connectTestBus(namespace),
  ]);
  uploads = await openBlobStore(client, UPLOADS_BUCKET, { ttlMs: UPLOADS_TTL_MS });
  subscriptions = registerWorkspaceHandlers({
    bus: server,
    pool: db.pool,
    uploads: await openBlobStore(server, UPLOADS_BUCKET, { ttlMs: UPLOADS_TTL_MS }),
    limits: LIMITS,
    logger: createLogger('workspaces-test', 'silent'),
  });
}, 60_000);
afterAll(async () => {
  for (const subscription of subscriptions ?? []) subscription.unsubscribe();
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

// As the gateway uploads: the body into the bucket, then the request naming it.
async function put(
  ref: { userId: string; kind: 'conversation' | 'mission'; id: string },
  path: string,
  content: Buffer,
  mediaType?: string,
) {
  const blob = newWorkspaceBlobName();
  await uploads.put(blob, content);
  return client.request(
    toolsWorkspacesPut,
    { ...ref, path, blob, ...(mediaType ? { mediaType } : {}) },
    { timeoutMs: 30_000 },
  );
}

// As the gateway downloads: the reply names an object, which the reader deletes.
async function download(ref: { userId: string; kind: 'conversation'; id: string }, path: string) {
  const reply = await client.request(toolsWorkspacesGet, { ...ref, path }, { timeoutMs: 30_000 });
  const bytes = await uploads.get(reply.blob);
  await uploads.delete(reply.blob);
  return { ...reply, bytes: Buffer.from(bytes ?? []) };
}

describe('tools.workspaces.*', () => {
  it('takes a file larger than a NATS message, lists it, gives it back and deletes it', async () => {
    const ref = { userId: randomUUID(), kind: 'conversation' as const, id: randomUUID() };
    const big = bytesOf(1_500_000);

    const created = await put(ref, 'data/big.bin', big);
    expect(created).toMatchObject({
      created: true,
      file: { path: 'data/big.bin', size: 1_500_000, mediaType: 'application/octet-stream' },
    });
    const replaced = await put(ref, 'data/big.bin', big.subarray(0, 1_000), 'image/png');
    expect(replaced).toMatchObject({
      created: false,
      file: { size: 1_000, mediaType: 'image/png' },
    });
    await put(ref, 'notes.md', Buffer.from('# notes'));

    const listed = await client.request(toolsWorkspacesList, ref);
    expect(listed).toMatchObject({ usedBytes: 1_007, quotaBytes: 3_000_000 });
    expect(listed.files.map(({ path, size, mediaType }) => ({ path, size, mediaType }))).toEqual([
      { path: 'data/big.bin', size: 1_000, mediaType: 'image/png' },
      { path: 'notes.md', size: 7, mediaType: 'text/markdown' },
    ]);

    await put(ref, 'data/big.bin', big);
    const got = await download(ref, 'data/big.bin');
    expect(got).toMatchObject({ size: 1_500_000, mediaType: 'application/octet-stream' });
    expect(got.bytes.equals(big)).toBe(true);

    expect(await client.request(toolsWorkspacesDelete, { ...ref, path: 'data/big.bin' })).toEqual(
      {},
    );
    const again = await catchBusError(
      client.request(toolsWorkspacesDelete, { ...ref, path: 'data/big.bin' }),
    );
    expect(again.code).toBe('not_found');
    const gone = await catchBusError(
      client.request(toolsWorkspacesGet, { ...ref, path: 'data/big.bin' }),
    );
    expect(gone.code).toBe('not_found');
    // Every object either side put has been read and deleted.
    expect(await storedBlobNames(client, UPLOADS_BUCKET)).toEqual([]);
  }, 60_000);

  it("shows another user's workspace as empty, and its files as not there", async () => {
    const ref = { userId: randomUUID(), kind: 'conversation' as const, id: randomUUID() };
    await put(ref, 'secret.txt', Buffer.from('mine'));
    const stranger = { ...ref, userId: randomUUID() };

    expect(await client.request(toolsWorkspacesList, stranger)).toEqual({
      files: [],
      usedBytes: 0,
      quotaBytes: 3_000_000,
    });
    for (const request of [
      client.request(toolsWorkspacesGet, { ...stranger, path: 'secret.txt' }),
      client.request(toolsWorkspacesDelete, { ...stranger, path: 'secret.txt' }),
    ]) {
      expect((await catchBusError(request)).code).toBe('not_found');
    }
    expect(await listWorkspaceFiles(db.pool, ref.userId, ref)).toHaveLength(1);
  });

  it('refuses a file over the file limit or the quota, keeping nothing of it', async () => {
    const ref = { userId: randomUUID(), kind: 'mission' as const, id: randomUUID() };
    const overFile = await catchBusError(put(ref, 'huge.bin', bytesOf(2_000_001)));
    expect(overFile.code).toBe('payload_too_large');

    await put(ref, 'a.bin', bytesOf(1_900_000));
    const overQuota = await catchBusError(
      put({ ...ref, id: randomUUID() }, 'b.bin', bytesOf(1_200_000)),
    );
    expect(overQuota).toMatchObject({ code: 'payload_too_large' });
    expect(overQuota.message).toContain('quota');

    const listed = await client.request(toolsWorkspacesList, ref);
    expect(listed.files.map((file) => file.path)).toEqual(['a.bin']);
    expect(listed.usedBytes).toBe(1_900_000);
    expect(await storedBlobNames(client, UPLOADS_BUCKET)).toEqual([]);
  }, 60_000);

  it('refuses a new file in a full workspace, and keeps nothing of it', async () => {
    const ref = { userId: randomUUID(), kind: 'conversation' as const, id: randomUUID() };
    await fillWorkspace(db.pool, ref.userId, ref, WORKSPACE_MAX_FILES);
    const full = await catchBusError(put(ref, 'one-more.txt', Buffer.from('x')));
    expect(full.code).toBe('payload_too_large');
    expect(full.message).toContain(`${WORKSPACE_MAX_FILES} files`);
    expect(await listWorkspaceFiles(db.pool, ref.userId, ref)).toHaveLength(WORKSPACE_MAX_FILES);
    expect(await storedBlobNames(client, UPLOADS_BUCKET)).toEqual([]);
  });

  it('refuses a bad path, a file where a folder is, and an upload that is gone', async () => {
    const ref = { userId: randomUUID(), kind: 'conversation' as const, id: randomUUID() };
    for (const path of ['../x', '/etc/passwd', 'a//b', 'a/./b', 'back\\slash']) {
      const reply = await sendRaw(client, 'tools.workspaces.put', {
        ...ref,
        path,
        blob: newWorkspaceBlobName(),
      });
      expect(reply).toMatchObject({ error: { code: 'bad_request' } });
    }

    await put(ref, 'a/b.txt', Buffer.from('x'));
    const clash = await catchBusError(put(ref, 'a', Buffer.from('y')));
    expect(clash.code).toBe('bad_request');

    const missing = await catchBusError(
      client.request(toolsWorkspacesPut, { ...ref, path: 'c.txt', blob: newWorkspaceBlobName() }),
    );
    expect(missing.code).toBe('not_found');
  });
});

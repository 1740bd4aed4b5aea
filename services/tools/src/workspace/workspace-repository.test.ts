import { randomUUID } from 'node:crypto';
import type { TestDatabase } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startToolsDatabase } from '../tools-database-fixture';
import {
  deleteWorkspaceFile,
  listWorkspaceFiles,
  lockUserWorkspaces,
  readWorkspaceFile,
  storeWorkspaceFile,
  WORKSPACE_MAX_FILES,
  type Workspace,
  workspaceUsage,
  writeWorkspaceFile,
} from './workspace-repository';
import { fillWorkspace } from './workspace-test-fixture';

let db: TestDatabase;

beforeAll(async () => {
  db = await startToolsDatabase();
});
afterAll(async () => {
  await db?.stop();
});

function conversation(): Workspace {
  return { kind: 'conversation', id: randomUUID() };
}

const bytes = (text: string) => Buffer.from(text, 'utf8');

describe('workspace repository', () => {
  it('keeps bytes exactly, lists by path without them, and shows them to their owner only', async () => {
    const userId = randomUUID();
    const workspace = conversation();
    const binary = Buffer.from([0, 1, 2, 255, 0x89, 0x50]);
    await writeWorkspaceFile(db.pool, userId, workspace, {
      path: 'out/chart.png',
      content: binary,
      mediaType: 'image/png',
    });
    await writeWorkspaceFile(db.pool, userId, workspace, {
      path: 'a.txt',
      content: bytes('hello'),
      mediaType: 'text/plain',
    });

    const files = await listWorkspaceFiles(db.pool, userId, workspace);
    expect(files.map(({ path, size, mediaType }) => ({ path, size, mediaType }))).toEqual([
      { path: 'a.txt', size: 5, mediaType: 'text/plain' },
      { path: 'out/chart.png', size: 6, mediaType: 'image/png' },
    ]);
    expect(Number.isNaN(Date.parse(files[0]?.updatedAt ?? ''))).toBe(false);
    expect(await readWorkspaceFile(db.pool, userId, workspace, 'out/chart.png')).toEqual({
      content: binary,
      size: 6,
      mediaType: 'image/png',
    });

    const stranger = randomUUID();
    expect(await listWorkspaceFiles(db.pool, stranger, workspace)).toEqual([]);
    expect(await readWorkspaceFile(db.pool, stranger, workspace, 'a.txt')).toBeUndefined();
    expect(await deleteWorkspaceFile(db.pool, stranger, workspace, 'a.txt')).toBe(false);
    // The same id as the other kind is another workspace.
    const mission: Workspace = { kind: 'mission', id: workspace.id };
    expect(await listWorkspaceFiles(db.pool, userId, mission)).toEqual([]);

    expect(await deleteWorkspaceFile(db.pool, userId, workspace, 'a.txt')).toBe(true);
    expect(await deleteWorkspaceFile(db.pool, userId, workspace, 'a.txt')).toBe(false);
    expect((await listWorkspaceFiles(db.pool, userId, workspace)).map((file) => file.path)).toEqual(
      ['out/chart.png'],
    );
  });

  it('counts usage per user across all their workspaces', async () => {
    const userId = randomUUID();
    await writeWorkspaceFile(db.pool, userId, conversation(), {
      path: 'a',
      content: Buffer.alloc(100),
      mediaType: 'application/octet-stream',
    });
    await writeWorkspaceFile(
      db.pool,
      userId,
      { kind: 'mission', id: randomUUID() },
      {
        path: 'b',
        content: Buffer.alloc(30),
        mediaType: 'application/octet-stream',
      },
    );
    await writeWorkspaceFile(db.pool, randomUUID(), conversation(), {
      path: 'c',
      content: Buffer.alloc(1000),
      mediaType: 'application/octet-stream',
    });
    expect(await workspaceUsage(db.pool, userId)).toBe(130);
    expect(await workspaceUsage(db.pool, randomUUID())).toBe(0);
  });

  it('stores within the quota, counting a replaced file out, and refuses past it', async () => {
    const userId = randomUUID();
    const workspace = conversation();
    const first = await storeWorkspaceFile(
      db.pool,
      userId,
      workspace,
      { path: 'data.csv', content: Buffer.alloc(60), mediaType: 'text/csv' },
      100,
    );
    expect(first).toMatchObject({ outcome: 'stored', isCreated: true, file: { size: 60 } });
    // 60 stored + 50 would pass 100, but this one replaces the 60.
    const replaced = await storeWorkspaceFile(
      db.pool,
      userId,
      workspace,
      { path: 'data.csv', content: Buffer.alloc(90), mediaType: 'text/csv' },
      100,
    );
    expect(replaced).toMatchObject({ outcome: 'stored', isCreated: false, file: { size: 90 } });
    const refused = await storeWorkspaceFile(
      db.pool,
      userId,
      conversation(),
      { path: 'more.csv', content: Buffer.alloc(11), mediaType: 'text/csv' },
      100,
    );
    expect(refused).toEqual({ outcome: 'over_quota', usedBytes: 90 });
    expect(await workspaceUsage(db.pool, userId)).toBe(90);
  });

  it('takes no new file into a full workspace, but replaces one there', async () => {
    const userId = randomUUID();
    const workspace = conversation();
    await fillWorkspace(db.pool, userId, workspace, WORKSPACE_MAX_FILES);
    const store = (path: string) =>
      storeWorkspaceFile(
        db.pool,
        userId,
        workspace,
        { path, content: bytes('x'), mediaType: 'text/plain' },
        1_000_000,
      );
    expect(await store('one-more')).toEqual({ outcome: 'too_many_files' });
    expect((await store('file-0007')).outcome).toBe('stored');
    // Another workspace of the same user has its own count.
    expect(
      (
        await storeWorkspaceFile(
          db.pool,
          userId,
          conversation(),
          { path: 'one-more', content: bytes('x'), mediaType: 'text/plain' },
          1_000_000,
        )
      ).outcome,
    ).toBe('stored');
  });

  it('refuses a file where a stored one is its folder, or lies inside it as one', async () => {
    const userId = randomUUID();
    const workspace = conversation();
    const store = (path: string) =>
      storeWorkspaceFile(
        db.pool,
        userId,
        workspace,
        { path, content: bytes('x'), mediaType: 'text/plain' },
        1_000,
      );
    expect((await store('a/b/c.txt')).outcome).toBe('stored');
    expect(await store('a/b')).toEqual({ outcome: 'conflict', path: 'a/b/c.txt' });
    expect(await store('a')).toEqual({ outcome: 'conflict', path: 'a/b/c.txt' });
    expect(await store('a/b/c.txt/d')).toEqual({ outcome: 'conflict', path: 'a/b/c.txt' });
    // A name that only starts the same is no folder of it.
    expect((await store('a/b/c')).outcome).toBe('stored');
    expect((await store('a/bc')).outcome).toBe('stored');
  });

  it('makes a write wait for another one of the same user before it counts the quota', async () => {
    const userId = randomUUID();
    const writer = await db.pool.connect();
    try {
      // A write in flight: 60 of the 100 bytes taken, not committed yet.
      await writer.query('BEGIN');
      await lockUserWorkspaces(writer, userId);
      await writeWorkspaceFile(writer, userId, conversation(), {
        path: 'first',
        content: Buffer.alloc(60),
        mediaType: 'application/octet-stream',
      });
      let isSettled = false;
      const second = storeWorkspaceFile(
        db.pool,
        userId,
        conversation(),
        { path: 'second', content: Buffer.alloc(60), mediaType: 'application/octet-stream' },
        100,
      ).finally(() => {
        isSettled = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(isSettled).toBe(false);
      await writer.query('COMMIT');
      expect(await second).toEqual({ outcome: 'over_quota', usedBytes: 60 });
    } finally {
      writer.release();
    }
    expect(await workspaceUsage(db.pool, userId)).toBe(60);
  });
});

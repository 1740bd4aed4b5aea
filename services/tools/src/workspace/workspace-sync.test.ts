import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@jarvis/telemetry';
import type { TestDatabase } from '@jarvis/testkit';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startToolsDatabase } from '../tools-database-fixture';
import {
  listWorkspaceFiles,
  readWorkspaceFile,
  WORKSPACE_MAX_FILES,
  type Workspace,
  writeWorkspaceFile,
} from './workspace-repository';
import {
  listProducedFiles,
  materialiseWorkspace,
  type WorkspaceLimits,
  writeBackWorkspace,
} from './workspace-sync';
import { fillWorkspace } from './workspace-test-fixture';

// The copy into a run directory and back, on a real database and a real directory, with the run
// itself played by this test writing into the directory as a box's code would.
const logger = createLogger('workspace-sync-test', 'silent');
const LIMITS: WorkspaceLimits = { fileMaxBytes: 1_000, quotaBytes: 10_000 };

let db: TestDatabase;
let dir: string;

beforeAll(async () => {
  db = await startToolsDatabase();
});
afterAll(async () => {
  await db?.stop();
});
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'workspace-sync-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const text = (value: string) => Buffer.from(value, 'utf8');

async function seed(userId: string, workspace: Workspace, files: Record<string, Buffer>) {
  for (const [path, content] of Object.entries(files)) {
    await writeWorkspaceFile(db.pool, userId, workspace, {
      path,
      content,
      mediaType: 'text/plain',
    });
  }
}

async function storedPaths(userId: string, workspace: Workspace): Promise<string[]> {
  return (await listWorkspaceFiles(db.pool, userId, workspace)).map((file) => file.path);
}

describe('materialiseWorkspace', () => {
  it('copies each stored file byte for byte, folders made, another user’s not at all', async () => {
    const userId = randomUUID();
    const workspace: Workspace = { kind: 'conversation', id: randomUUID() };
    const binary = Buffer.from([0, 255, 10, 13, 0x89]);
    await seed(userId, workspace, { 'a.txt': text('alpha'), 'deep/er/b.bin': binary });
    await seed(randomUUID(), workspace, { 'theirs.txt': text('not yours') });

    const materialised = await materialiseWorkspace(db.pool, userId, workspace, dir, logger);

    expect([...materialised.keys()].sort()).toEqual(['a.txt', 'deep/er/b.bin']);
    expect(await readFile(join(dir, 'a.txt'), 'utf8')).toBe('alpha');
    expect((await readFile(join(dir, 'deep/er/b.bin'))).equals(binary)).toBe(true);
    await expect(readFile(join(dir, 'theirs.txt'))).rejects.toThrow();
  });
});

describe('writeBackWorkspace', () => {
  it('stores new and changed files, deletes removed ones, and leaves unchanged ones alone', async () => {
    const userId = randomUUID();
    const workspace: Workspace = { kind: 'mission', id: randomUUID() };
    await seed(userId, workspace, {
      'same.txt': text('same'),
      'edit.txt': text('before'),
      'gone.txt': text('bye'),
    });
    const before = await listWorkspaceFiles(db.pool, userId, workspace);
    const materialised = await materialiseWorkspace(db.pool, userId, workspace, dir, logger);

    await writeFile(join(dir, 'edit.txt'), 'after, longer');
    await unlink(join(dir, 'gone.txt'));
    await mkdir(join(dir, 'out'));
    await writeFile(join(dir, 'out/chart.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
    // Rewritten with the same bytes: unchanged.
    await writeFile(join(dir, 'same.txt'), 'same');

    const result = await writeBackWorkspace(db.pool, userId, workspace, dir, materialised, LIMITS);

    expect(result.files.map(({ path, size, mediaType }) => ({ path, size, mediaType }))).toEqual([
      { path: 'edit.txt', size: 13, mediaType: 'text/plain' },
      { path: 'out/chart.png', size: 4, mediaType: 'image/png' },
    ]);
    expect(result.deleted).toEqual(['gone.txt']);
    expect(result.notKept).toEqual([]);
    expect(await storedPaths(userId, workspace)).toEqual(['edit.txt', 'out/chart.png', 'same.txt']);
    expect((await readWorkspaceFile(db.pool, userId, workspace, 'edit.txt'))?.content).toEqual(
      text('after, longer'),
    );
    const same = (await listWorkspaceFiles(db.pool, userId, workspace)).find(
      (file) => file.path === 'same.txt',
    );
    expect(same?.updatedAt).toBe(before.find((file) => file.path === 'same.txt')?.updatedAt);
  });

  it('never reads a link back, nor anything but a regular file, and says so', async () => {
    const userId = randomUUID();
    const workspace: Workspace = { kind: 'conversation', id: randomUUID() };
    await seed(userId, workspace, { 'was-a-file.txt': text('mine') });
    const materialised = await materialiseWorkspace(db.pool, userId, workspace, dir, logger);

    await symlink('/etc/passwd', join(dir, 'leak'));
    await symlink('../../../../etc/hostname', join(dir, 'dotdot'));
    await symlink('/etc', join(dir, 'etc-dir'));
    // A stored file swapped for a link to a host file: the stored one goes, the host's is not read.
    await unlink(join(dir, 'was-a-file.txt'));
    await symlink('/etc/passwd', join(dir, 'was-a-file.txt'));
    // A Unix socket listening: a file, but not a regular one.
    const listener = createServer();
    await new Promise<void>((resolve) => listener.listen(join(dir, 'socket'), resolve));
    await writeFile(join(dir, 'real.txt'), 'ok');

    const result = await writeBackWorkspace(
      db.pool,
      userId,
      workspace,
      dir,
      materialised,
      LIMITS,
    ).finally(() => listener.close());

    expect(result.files.map((file) => file.path)).toEqual(['real.txt']);
    expect(result.deleted).toEqual(['was-a-file.txt']);
    const reasons = Object.fromEntries(result.notKept.map((entry) => [entry.path, entry.reason]));
    expect(reasons).toEqual({
      leak: 'a symbolic link: only regular files are kept',
      dotdot: 'a symbolic link: only regular files are kept',
      'etc-dir': 'a symbolic link: only regular files are kept',
      'was-a-file.txt': 'a symbolic link: only regular files are kept',
      socket: 'not a regular file',
    });
    expect(await storedPaths(userId, workspace)).toEqual(['real.txt']);
    const { rows } = await db.pool.query<{ leaked: number }>(
      "SELECT count(*)::int AS leaked FROM tools.workspace_files WHERE position('root:x:0:0'::bytea in content) > 0",
    );
    expect(rows[0]?.leaked).toBe(0);
  });

  it('keeps no file over the file limit or past the quota, in path order', async () => {
    const userId = randomUUID();
    const workspace: Workspace = { kind: 'conversation', id: randomUUID() };
    // 9,000 of the 10,000 bytes used elsewhere.
    const elsewhere: Workspace = { kind: 'conversation', id: randomUUID() };
    await seed(userId, elsewhere, { big: Buffer.alloc(9_000) });
    await writeFile(join(dir, 'a.bin'), Buffer.alloc(600));
    await writeFile(join(dir, 'b.bin'), Buffer.alloc(600));
    await writeFile(join(dir, 'c.bin'), Buffer.alloc(300));
    await writeFile(join(dir, 'huge.bin'), Buffer.alloc(1_001));

    const result = await writeBackWorkspace(db.pool, userId, workspace, dir, new Map(), LIMITS);

    expect(result.files.map((file) => file.path)).toEqual(['a.bin', 'c.bin']);
    expect(result.notKept).toEqual([
      { path: 'b.bin', reason: "the user's workspace quota of 10000 bytes is full" },
      { path: 'huge.bin', reason: 'larger than the limit of 1000 bytes for one file' },
    ]);
    expect(await storedPaths(userId, workspace)).toEqual(['a.bin', 'c.bin']);
  });

  it('deletes no file it did not look at, and takes no new file into a full workspace', async () => {
    const userId = randomUUID();
    const workspace: Workspace = { kind: 'conversation', id: randomUUID() };
    await fillWorkspace(db.pool, userId, workspace, WORKSPACE_MAX_FILES);
    const materialised = await materialiseWorkspace(db.pool, userId, workspace, dir, logger);
    // 2,500 entries beside each other, read in name order: the walk stops at 2,000, so the given
    // files past file-0499 are never looked at.
    for (let index = 0; index < 1_500; index += 1) {
      await writeFile(join(dir, `a-new-${index}`), 'n');
    }

    const result = await writeBackWorkspace(db.pool, userId, workspace, dir, materialised, {
      fileMaxBytes: 1_000,
      quotaBytes: 1_000_000,
    });

    expect(result.deleted).toEqual([]);
    expect(result.files).toEqual([]);
    expect(await storedPaths(userId, workspace)).toHaveLength(WORKSPACE_MAX_FILES);
    const reasons = new Set(result.notKept.map((entry) => entry.reason));
    expect(reasons).toEqual(
      new Set([
        'more than 2000 files and folders: this and the rest are not kept',
        'the workspace holds 1000 files, the most it may',
      ]),
    );
  }, 30_000);

  it('keeps no name a workspace path cannot have', async () => {
    const userId = randomUUID();
    const workspace: Workspace = { kind: 'conversation', id: randomUUID() };
    await writeFile(join(dir, 'line\nbreak.txt'), 'x');
    // Linux names are bytes: this one is no UTF-8 text.
    await writeFile(Buffer.concat([Buffer.from(`${dir}/`), Buffer.from([0xff, 0x41])]), 'x');
    const deep = join(dir, ...Array.from({ length: 16 }, (_, index) => `d${index}`));
    await mkdir(deep, { recursive: true });
    await writeFile(join(deep, 'too-deep.txt'), 'x');
    await writeFile(join(dir, 'fine.txt'), 'x');

    const result = await writeBackWorkspace(db.pool, userId, workspace, dir, new Map(), LIMITS);

    expect(result.files.map((file) => file.path)).toEqual(['fine.txt']);
    expect(result.notKept.map((entry) => entry.path).sort()).toEqual([
      `${Array.from({ length: 16 }, (_, index) => `d${index}`).join('/')}/too-deep.txt`,
      'line\nbreak.txt',
      '\ufffdA',
    ]);
  });
});

describe('listProducedFiles', () => {
  it('names what a run left without keeping anything', async () => {
    await writeFile(join(dir, 'out.csv'), 'a,b\n1,2\n');
    await symlink('/etc/passwd', join(dir, 'leak'));
    expect(await listProducedFiles(dir)).toEqual({
      files: [{ path: 'out.csv', size: 8, mediaType: 'text/csv' }],
      notKept: [{ path: 'leak', reason: 'a symbolic link: only regular files are kept' }],
    });
  });
});

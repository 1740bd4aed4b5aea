import { randomUUID } from 'node:crypto';
import { catchBusError } from '@jarvis/bus/testing';
import { workspaceFileUrl } from '@jarvis/contracts';
import { createLogger } from '@jarvis/telemetry';
import type { TestDatabase } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolRegistry } from '../registry';
import type { Sandbox } from '../sandbox/sandbox';
import { startTestSandbox, TEST_LIMITS } from '../sandbox/sandbox-test-fixture';
import { startToolsDatabase } from '../tools-database-fixture';
import { createRunCodeTool, cutMiddle } from './run-code-tool';
import {
  listWorkspaceFiles,
  readWorkspaceFile,
  type Workspace,
  writeWorkspaceFile,
} from './workspace-repository';
import type { WorkspaceLimits } from './workspace-sync';

// run_code in the real bwrap sandbox on a real database: what the agent's call does, workspace
// in and out, and what a run trying to reach the host through its workspace gets.
const WORKSPACE_LIMITS: WorkspaceLimits = { fileMaxBytes: 1_048_576, quotaBytes: 4 * 1_048_576 };

let db: TestDatabase;
let sandbox: Sandbox;

beforeAll(async () => {
  [db, sandbox] = await Promise.all([startToolsDatabase(), startTestSandbox()]);
}, 60_000);
afterAll(async () => {
  await db?.stop();
});

type Caller = {
  userId: string;
  conversationId?: string;
  missionId?: string;
  signal?: AbortSignal;
};

// The tool registered as the service registers it: arguments are checked against its schema.
function registered(limits = WORKSPACE_LIMITS): ToolRegistry {
  const registry = new ToolRegistry();
  registry.register(
    createRunCodeTool({
      sandbox,
      pool: db.pool,
      limits: { sandbox: TEST_LIMITS, workspace: limits },
      logger: createLogger('run-code-test', 'silent'),
    }),
  );
  return registry;
}

// A call as the service makes it, with the caller's context.
function runCode(caller: Caller, limits = WORKSPACE_LIMITS) {
  const tool = registered(limits).get('run_code');
  return (args: Record<string, unknown>) =>
    tool?.call(args, {
      runId: undefined,
      conversationId: undefined,
      signal: new AbortController().signal,
      ...caller,
    }) as Promise<Record<string, unknown>>;
}

async function storedPaths(userId: string, workspace: Workspace): Promise<string[]> {
  return (await listWorkspaceFiles(db.pool, userId, workspace)).map((file) => file.path);
}

const CHART = `
import os
import matplotlib.pyplot as plt
os.makedirs('charts', exist_ok=True)
plt.plot([1, 2, 3], [2, 4, 1])
plt.savefig('charts/line.png')
print('saved')
`;

describe('run_code', () => {
  it('declares its time and what the model must know in its descriptor', () => {
    const [descriptor] = registered().list();
    expect(descriptor).toMatchObject({ name: 'run_code', risk: 'safe', timeoutMs: 21_000 });
    for (const words of ['python', 'javascript', 'shell', '/workspace', 'no network', 'image']) {
      expect(descriptor?.description).toContain(words);
    }
    expect(descriptor?.description).toContain('6 s of wall time');
    expect(descriptor?.description).toContain('256 MiB of memory');
  });

  it('draws a chart into the conversation workspace, which the next call sees', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    const workspace: Workspace = { kind: 'conversation', id: conversationId };
    const call = runCode({ userId, conversationId });

    const drawn = await call({
      language: 'python',
      code: CHART,
    });

    expect(drawn).toMatchObject({ exitCode: 0, stdout: 'saved\n', stderr: '', workspace });
    expect(Object.keys(drawn)).toEqual(['exitCode', 'files', 'workspace', 'stdout', 'stderr']);
    const files = drawn.files as { path: string; size: number; mediaType: string; url: string }[];
    expect(files).toHaveLength(1);
    expect(files[0]).toMatchObject({
      path: 'charts/line.png',
      mediaType: 'image/png',
      url: workspaceFileUrl('conversation', conversationId, 'charts/line.png'),
    });
    const png = await readWorkspaceFile(db.pool, userId, workspace, 'charts/line.png');
    expect(png?.content.subarray(0, 8)).toEqual(
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    );
    expect(png?.size).toBe(files[0]?.size);

    // The chart is there for the next call; unchanged, it is not listed as produced again.
    const listed = await call({
      language: 'shell',
      code: 'wc -c < charts/line.png; echo note > notes.txt',
    });
    expect(listed).toMatchObject({ exitCode: 0, stdout: `${png?.size}\n` });
    expect((listed.files as { path: string }[]).map((file) => file.path)).toEqual(['notes.txt']);
    expect(await storedPaths(userId, workspace)).toEqual(['charts/line.png', 'notes.txt']);

    const removed = await call({
      language: 'javascript',
      code: "require('fs').rmSync('notes.txt')",
    });
    expect(removed).toMatchObject({ exitCode: 0 });
    expect(removed.files).toBeUndefined();
    expect(await storedPaths(userId, workspace)).toEqual(['charts/line.png']);
  }, 60_000);

  it('works in the mission workspace for a mission task, not the conversation one', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    const missionId = randomUUID();
    const result = await runCode({ userId, conversationId, missionId })({
      language: 'shell',
      code: 'echo done > report.md',
    });
    expect(result.workspace).toEqual({ kind: 'mission', id: missionId });
    expect(await storedPaths(userId, { kind: 'mission', id: missionId })).toEqual(['report.md']);
    expect(await storedPaths(userId, { kind: 'conversation', id: conversationId })).toEqual([]);
  }, 30_000);

  it('outside a conversation, names the files but keeps none and gives no url', async () => {
    const userId = randomUUID();
    const result = await runCode({ userId })({
      language: 'shell',
      code: 'printf "a,b\\n" > out.csv',
    });
    expect(result).toEqual({
      exitCode: 0,
      files: [{ path: 'out.csv', size: 4, mediaType: 'text/csv' }],
      stdout: '',
      stderr: '',
    });
    const { rows } = await db.pool.query('SELECT 1 FROM tools.workspace_files WHERE user_id = $1', [
      userId,
    ]);
    expect(rows).toEqual([]);
  }, 30_000);

  it('writes the given files before the run and keeps them with the rest', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    const workspace: Workspace = { kind: 'conversation', id: conversationId };
    await writeWorkspaceFile(db.pool, userId, workspace, {
      path: 'data/in.csv',
      content: Buffer.from('old'),
      mediaType: 'text/csv',
    });
    const result = await runCode({ userId, conversationId })({
      language: 'python',
      code: "print(open('data/in.csv').read().strip().upper())",
      files: [{ path: 'data/in.csv', content: 'x,y\n' }],
    });
    expect(result).toMatchObject({ exitCode: 0, stdout: 'X,Y\n' });
    expect((await readWorkspaceFile(db.pool, userId, workspace, 'data/in.csv'))?.content).toEqual(
      Buffer.from('x,y\n'),
    );

    for (const path of ['../escape.txt', '/etc/cron.d/x', 'a/../../b', '']) {
      const refused = await catchBusError(
        runCode({ userId, conversationId })({
          language: 'shell',
          code: 'true',
          files: [{ path, content: 'x' }],
        }),
      );
      expect(refused.code).toBe('bad_request');
    }
  }, 30_000);

  it('keeps nothing of the host: links out of the workspace and ../ tricks are not read back', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    const workspace: Workspace = { kind: 'conversation', id: conversationId };
    await writeWorkspaceFile(db.pool, userId, workspace, {
      path: 'mine.txt',
      content: Buffer.from('mine'),
      mediaType: 'text/plain',
    });
    const code = [
      'ln -s /etc/passwd leak',
      'ln -s ../../../../../../../../etc/shadow shadow',
      'ln -s .. parent',
      'ln -s / root',
      'mkdir -p sub && ln -s ../../.. sub/up',
      // A stored file swapped for a link.
      'rm mine.txt && ln -s /etc/hostname mine.txt',
      // Out of /workspace: read-only, or the scratch dir that is thrown away.
      'echo x > ../escape.txt 2>/dev/null || echo "no ../"',
      'echo x > /tmp/scratch.txt',
      // A hard link to a file outside /workspace crosses a mount.
      'ln /etc/passwd hard 2>/dev/null || echo "no hard link"',
      'mkfifo pipe',
      'echo kept > kept.txt',
    ].join('\n');

    const result = await runCode({ userId, conversationId })({ language: 'shell', code });

    expect(result.stdout).toBe('no ../\nno hard link\n');
    expect((result.files as { path: string }[]).map((file) => file.path)).toEqual(['kept.txt']);
    const notKept = Object.fromEntries(
      (result.notKept as { path: string; reason: string }[]).map((entry) => [
        entry.path,
        entry.reason,
      ]),
    );
    const link = 'a symbolic link: only regular files are kept';
    expect(notKept).toEqual({
      leak: link,
      shadow: link,
      parent: link,
      root: link,
      'sub/up': link,
      'mine.txt': link,
      pipe: 'not a regular file',
    });
    expect(await storedPaths(userId, workspace)).toEqual(['kept.txt']);
    const { rows } = await db.pool.query<{ path: string }>(
      `SELECT path FROM tools.workspace_files
       WHERE position('root:'::bytea in content) > 0 OR position('sandbox:x'::bytea in content) > 0`,
    );
    expect(rows).toEqual([]);
  }, 30_000);

  it('keeps no file over the file limit or the quota, and says which and why', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    const result = await runCode(
      { userId, conversationId },
      { fileMaxBytes: 2_000, quotaBytes: 3_000 },
    )({
      language: 'python',
      code: [
        "open('a.bin', 'wb').write(b'a' * 1500)",
        "open('b.bin', 'wb').write(b'b' * 1600)",
        "open('huge.bin', 'wb').write(b'h' * 2001)",
      ].join('\n'),
    });
    expect((result.files as { path: string }[]).map((file) => file.path)).toEqual(['a.bin']);
    expect(result.notKept).toEqual([
      { path: 'b.bin', reason: "the user's workspace quota of 3000 bytes is full" },
      { path: 'huge.bin', reason: 'larger than the limit of 2000 bytes for one file' },
    ]);
  }, 30_000);

  it('lists at most 50 files and says how many more it kept', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    const result = await runCode({ userId, conversationId })({
      language: 'shell',
      code: 'for i in $(seq 10 69); do echo $i > f$i.txt; done',
    });
    expect((result.files as unknown[]).length).toBe(50);
    expect(result.filesNotListed).toBe(10);
    expect(await storedPaths(userId, { kind: 'conversation', id: conversationId })).toHaveLength(
      60,
    );
  }, 30_000);

  it('names the limit that stopped a run, and still keeps what it wrote before', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    const result = await runCode({ userId, conversationId })({
      language: 'shell',
      code: 'echo partial > partial.txt; sleep 60',
    });
    expect(result).toMatchObject({ limit: 'wall' });
    expect((result.files as { path: string }[]).map((file) => file.path)).toEqual(['partial.txt']);
  }, 30_000);

  it('writes nothing back when the call is given up mid-run', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    const timedOut = new Error('run_code did not finish within 1000 ms');
    const controller = new AbortController();
    setTimeout(() => controller.abort(timedOut), 1_000);
    const call = runCode({ userId, conversationId, signal: controller.signal })({
      language: 'shell',
      code: 'echo early > early.txt; sleep 30',
    });
    await expect(call).rejects.toBe(timedOut);
    expect(await storedPaths(userId, { kind: 'conversation', id: conversationId })).toEqual([]);
  }, 30_000);
});

describe('cutMiddle', () => {
  it('keeps a short text whole and the two ends of a long one', () => {
    expect(cutMiddle('abcdef', 6)).toBe('abcdef');
    expect(cutMiddle('abcdefghij', 4)).toBe('ab\n[... 6 characters left out ...]\nij');
  });
});

import { execFileSync } from 'node:child_process';
import { chmod, lchown, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '@jarvis/telemetry';
import { runBox, type SandboxResult } from './box-run';
import {
  BOX_GROUP,
  BOX_PASSWD,
  boxShell,
  bwrapArguments,
  CODE_FILE,
  type HostUser,
  hostCommand,
  interpreterCommand,
  type RunDirLayout,
  type SandboxLanguage,
  type SandboxLimits,
} from './bwrap-command';
import { createRunSlots } from './run-slots';

export type { SandboxLimit, SandboxResult } from './box-run';
export type { SandboxLanguage, SandboxLimits } from './bwrap-command';

export type SandboxSettings = {
  bwrap: string;
  rootDir: string;
  user: string;
  limits: SandboxLimits;
  maxConcurrent: number;
  logger: Logger;
};

export type SandboxRunRequest = { language: SandboxLanguage; code: string; signal?: AbortSignal };

export type SandboxRunDir = {
  // Host path bound read-write at /workspace; the caller fills it before run() and reads it after.
  workspaceDir: string;
  run(request: SandboxRunRequest): Promise<SandboxResult>;
  // Removes the whole run directory.
  dispose(): Promise<void>;
};

export type Sandbox = { open(): Promise<SandboxRunDir> };

const TRIAL_TIMEOUT_MS = 10_000;

// As root, bwrap is run as this user (chromium's sandbox and bwrap alike refuse to be root's).
function resolveHostUser(user: string): HostUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) =>
    Number(execFileSync('id', [flag, user], { encoding: 'utf8' }).trim());
  const hostUser = { uid: id('-u'), gid: id('-g') };
  if (hostUser.uid === 0) throw new Error(`SANDBOX_USER ${user} is root`);
  return hostUser;
}

// Every entry, so that files the caller wrote as root into the workspace are the box's to change.
async function chownTree(dir: string, owner: HostUser): Promise<void> {
  await lchown(dir, owner.uid, owner.gid);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await chownTree(path, owner);
    else await lchown(path, owner.uid, owner.gid);
  }
}

// A run may leave directories without permissions; their owner (the service, when it is not
// root) must give itself the right to empty them before they can be removed.
async function allowRemoval(dir: string): Promise<void> {
  await chmod(dir, 0o700).catch(() => undefined);
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) if (entry.isDirectory()) await allowRemoval(join(dir, entry.name));
}

async function removeRunDir(runDir: string): Promise<void> {
  try {
    await rm(runDir, { recursive: true, force: true });
  } catch {
    await allowRemoval(runDir);
    await rm(runDir, { recursive: true, force: true });
  }
}

// Run directories left by a service that died mid-run. Only old ones: another service (or test
// file) may be sharing the directory with runs of its own, and no run lasts this long.
const STALE_RUN_DIR_MS = 6 * 60 * 60 * 1000;

async function removeStaleRunDirs(rootDir: string): Promise<void> {
  for (const name of await readdir(rootDir)) {
    const runDir = join(rootDir, name);
    const stats = await stat(runDir).catch(() => undefined);
    const isStale = stats && Date.now() - stats.mtimeMs > STALE_RUN_DIR_MS;
    if (name.startsWith('run-') && isStale) await removeRunDir(runDir);
  }
}

async function makeRunDir(rootDir: string, hostUser: HostUser | undefined) {
  const runDir = await mkdtemp(join(rootDir, 'run-'));
  const layout: RunDirLayout = {
    workspaceDir: join(runDir, 'workspace'),
    scratchDir: join(runDir, 'tmp'),
    codeDir: join(runDir, 'code'),
    etcDir: join(runDir, 'etc'),
  };
  for (const dir of Object.values(layout)) await mkdir(dir, { mode: 0o755 });
  await writeFile(join(layout.etcDir, 'passwd'), BOX_PASSWD, { mode: 0o644 });
  await writeFile(join(layout.etcDir, 'group'), BOX_GROUP, { mode: 0o644 });
  // bwrap, run as the sandbox user, must enter the run directory; code and etc stay the
  // service's, readable but not writable from the box.
  if (hostUser) await lchown(runDir, hostUser.uid, hostUser.gid);
  return { runDir, layout };
}

export async function createSandbox(settings: SandboxSettings): Promise<Sandbox> {
  const { limits, logger } = settings;
  const hostUser = resolveHostUser(settings.user);
  const shell = boxShell();
  const slots = createRunSlots(settings.maxConcurrent);
  // Traversable, not listable: the sandbox user must reach its run directory, and nobody else
  // needs to see which runs there are.
  await mkdir(settings.rootDir, { recursive: true });
  await chmod(settings.rootDir, 0o711);
  await removeStaleRunDirs(settings.rootDir);

  const runInBox = async (runDir: string, layout: RunDirLayout, request: SandboxRunRequest) => {
    await writeFile(join(layout.codeDir, CODE_FILE[request.language]), request.code, {
      mode: 0o644,
    });
    if (hostUser) {
      await chownTree(layout.workspaceDir, hostUser);
      await chownTree(layout.scratchDir, hostUser);
    }
    const command = interpreterCommand(request.language, limits.memoryBytes, shell);
    const host = hostCommand(settings.bwrap, hostUser, bwrapArguments(layout, limits, command));
    const result = await runBox({ ...host, runDir, limits, signal: request.signal });
    logger.debug(
      { language: request.language, exitCode: result.exitCode, limit: result.limit },
      'sandbox run ended',
    );
    return result;
  };

  const sandbox: Sandbox = {
    async open() {
      const { runDir, layout } = await makeRunDir(settings.rootDir, hostUser);
      return {
        workspaceDir: layout.workspaceDir,
        async run(request) {
          const release = await slots.acquire(request.signal);
          try {
            return await runInBox(runDir, layout, request);
          } finally {
            release();
          }
        },
        dispose: () => removeRunDir(runDir),
      };
    },
  };
  await checkSandbox(sandbox);
  logger.info(
    { rootDir: settings.rootDir, user: hostUser ? settings.user : undefined },
    'sandbox ready',
  );
  return sandbox;
}

// One trial run, so that a machine where bwrap is missing or may not make its namespaces
// (user namespaces off, a seccomp profile refusing unshare) has no run_code rather than one
// that can only fail.
async function checkSandbox(sandbox: Sandbox): Promise<void> {
  const runDir = await sandbox.open();
  try {
    const result = await runDir.run({
      language: 'shell',
      code: 'echo ok',
      signal: AbortSignal.timeout(TRIAL_TIMEOUT_MS),
    });
    if (result.exitCode !== 0 || result.stdout !== 'ok\n') {
      throw new Error(`bwrap cannot make the sandbox here: ${result.stderr.trim()}`);
    }
  } finally {
    await runDir.dispose();
  }
}

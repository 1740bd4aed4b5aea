import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@jarvis/telemetry';
import {
  createSandbox,
  type Sandbox,
  type SandboxLimits,
  type SandboxResult,
  type SandboxRunRequest,
} from './sandbox';

// Limits small enough that each limit test ends in a few seconds on a shared 2-CPU machine.
export const TEST_LIMITS: SandboxLimits = {
  cpuSeconds: 2,
  wallMs: 6_000,
  memoryBytes: 256 * 1_048_576,
  processes: 64,
  outputBytes: 1_048_576,
  diskBytes: 64 * 1_048_576,
};

export function startTestSandbox(
  options: { limits?: Partial<SandboxLimits>; maxConcurrent?: number; bwrap?: string } = {},
): Promise<Sandbox> {
  return createSandbox({
    bwrap: options.bwrap ?? 'bwrap',
    rootDir: join(tmpdir(), 'jarvis-sandbox-test'),
    user: 'nobody',
    limits: { ...TEST_LIMITS, ...options.limits },
    maxConcurrent: options.maxConcurrent ?? 4,
    logger: createLogger('sandbox-test', 'silent'),
  });
}

// One run in a run directory of its own, removed afterwards; `prepare` fills its workspace.
export async function runOnce(
  sandbox: Sandbox,
  request: SandboxRunRequest,
  prepare?: (workspaceDir: string) => Promise<void> | void,
): Promise<SandboxResult> {
  const runDir = await sandbox.open();
  try {
    await prepare?.(runDir.workspaceDir);
    return await runDir.run(request);
  } finally {
    await runDir.dispose();
  }
}

// Host processes whose command line contains `marker` (seen from the host's /proc).
export function hostProcessesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const commandLine = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (commandLine.includes(marker)) pids.push(Number(entry));
    } catch {
      // ended meanwhile
    }
  }
  return pids;
}

export function isProcessAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { Readable } from 'node:stream';
import { directoryBytes } from './box-processes';
import { createBoxKiller, type SandboxLimit, watchBox } from './box-watchdog';
import type { SandboxLimits } from './bwrap-command';

export type { SandboxLimit } from './box-watchdog';

export type SandboxResult = {
  stdout: string;
  stderr: string;
  exitCode: number;
  signal?: string;
  limit?: SandboxLimit;
  durationMs: number;
  firstOutputMs?: number;
};

export type BoxRunRequest = {
  file: string;
  args: string[];
  runDir: string;
  limits: SandboxLimits;
  signal?: AbortSignal;
};

// bwrap's init inside the box keeps the environment bwrap was started with, and the box can
// read it at /proc/1/environ: so bwrap gets no variable of the service, only a PATH to find it.
const HOST_ENV = { PATH: '/usr/local/bin:/usr/bin:/bin' };

// What interpreters print when an allocation failed, and when a fork or thread was refused.
const MEMORY_FAILURE =
  /MemoryError|JavaScript heap out of memory|Cannot allocate memory|allocation failed|std::bad_alloc|out of memory/i;
const PROCESS_FAILURE =
  /Resource temporarily unavailable|Cannot fork|can't fork|spawn EAGAIN|uv_thread_create/i;
// Interpreters print their allocation or fork failure last; earlier text is the program's own.
const STDERR_TAIL_CHARS = 4_000;

type StopReason = SandboxLimit | 'aborted';

// bwrap as spawned: stdin is /dev/null, stdout and stderr are pipes.
type BwrapProcess = ChildProcessByStdio<null, Readable, Readable>;

type Ending = { code: number | null; signal: NodeJS.Signals | null; endedAt: number };

function signalName(number: number): string | undefined {
  return Object.entries(constants.signals).find(([, value]) => value === number)?.[0];
}

// stdout and stderr together up to the output limit; past it `onOverflow` stops the box.
function captureOutput(child: BwrapProcess, limitBytes: number, onOverflow: () => void) {
  const chunks = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  let total = 0;
  let firstOutputAt: number | undefined;
  const take = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
    firstOutputAt ??= performance.now();
    const room = limitBytes - total;
    if (room > 0) chunks[stream].push(chunk.subarray(0, room));
    total += chunk.length;
    if (total > limitBytes) onOverflow();
  };
  child.stdout.on('data', take('stdout'));
  child.stderr.on('data', take('stderr'));
  return {
    text: (stream: 'stdout' | 'stderr') => Buffer.concat(chunks[stream]).toString('utf8'),
    firstOutputAt: () => firstOutputAt,
  };
}

// Settles once bwrap has exited and every holder of its pipes is gone.
function endingOf(child: BwrapProcess): Promise<Ending> {
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, endedAt: performance.now() }));
  });
}

// Spawns one box and watches it until it has ended, every process in it included.
export async function runBox(request: BoxRunRequest): Promise<SandboxResult> {
  const { limits } = request;
  const baselineBytes = await directoryBytes(request.runDir);
  const startedAt = performance.now();
  const child = spawn(request.file, request.args, {
    cwd: request.runDir,
    env: HOST_ENV,
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, so that the last-resort kill reaches bwrap and not the service.
    detached: true,
  });
  const rootPid = child.pid;
  if (rootPid === undefined) {
    throw await new Promise<Error>((resolve) => child.once('error', resolve));
  }
  let hasExited = false;
  child.once('exit', () => {
    hasExited = true;
  });
  const killer = createBoxKiller(rootPid, () => hasExited);
  let stopReason: StopReason | undefined;
  const stop = (reason: StopReason) => {
    if (stopReason || hasExited) return;
    stopReason = reason;
    killer.kill();
  };
  const output = captureOutput(child, limits.outputBytes, () => stop('output'));
  const watchdog = watchBox({
    rootPid,
    runDir: request.runDir,
    limits,
    baselineBytes,
    hasExited: () => hasExited,
    onLimit: stop,
  });
  const wallTimer = setTimeout(() => stop('wall'), limits.wallMs);
  const onAbort = () => stop('aborted');
  request.signal?.addEventListener('abort', onAbort);
  if (request.signal?.aborted) onAbort();

  try {
    const ending = await endingOf(child);
    if (stopReason === 'aborted') throw request.signal?.reason;
    const exitCode = ending.code ?? 128 + (ending.signal ? constants.signals[ending.signal] : 0);
    // bwrap reports a command killed by a signal as 128 + its number, as shells do.
    const signal = ending.signal ?? (exitCode > 128 ? signalName(exitCode - 128) : undefined);
    const stderr = output.text('stderr');
    const limit =
      stopReason ??
      limitFromExit({ exitCode, signal, stderr, ...watchdog.seen }, limits.cpuSeconds);
    const firstOutputAt = output.firstOutputAt();
    return {
      stdout: output.text('stdout'),
      stderr,
      exitCode,
      ...(signal && { signal }),
      ...(limit && { limit }),
      durationMs: Math.round(ending.endedAt - startedAt),
      ...(firstOutputAt !== undefined && {
        firstOutputMs: Math.round(firstOutputAt - startedAt),
      }),
    };
  } finally {
    watchdog.close();
    killer.dispose();
    clearTimeout(wallTimer);
    request.signal?.removeEventListener('abort', onAbort);
  }
}

type RunEnd = {
  exitCode: number;
  signal: string | undefined;
  stderr: string;
  maxCpuSeconds: number;
  hasReachedProcessCeiling: boolean;
};

// The limit that ended a run the service did not stop itself: RLIMIT_CPU's SIGXCPU (or its
// SIGKILL a second later), or an allocation or fork the kernel refused, as the interpreter said.
// A refused fork counts even when the run then exited 0: a fork bomb's first shell often does,
// and its PID namespace takes the rest of the bomb with it.
function limitFromExit(end: RunEnd, cpuSeconds: number): SandboxLimit | undefined {
  const tail = end.stderr.slice(-STDERR_TAIL_CHARS);
  if (PROCESS_FAILURE.test(tail)) return 'processes';
  if (end.exitCode === 0) return undefined;
  if (end.hasReachedProcessCeiling) return 'processes';
  const isCpuKill = end.signal === 'SIGKILL' && end.maxCpuSeconds >= cpuSeconds;
  if (end.signal === 'SIGXCPU' || isCpuKill) return 'cpu';
  if (MEMORY_FAILURE.test(tail)) return 'memory';
  return undefined;
}

import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { directoryBytes, sampleBox } from './box-processes';
import type { SandboxLimits } from './bwrap-command';

export type SandboxLimit = 'cpu' | 'wall' | 'memory' | 'processes' | 'output';

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

const PROCESS_POLL_MS = 100;
const DISK_POLL_MS = 500;
// A box held at its process ceiling this long is a fork bomb (or failing like one: every fork
// it tries is refused); it is stopped rather than left to burn the CPU until the wall time.
const PROCESS_CEILING_MS = 1_000;
// After the box's processes were killed, bwrap exits by itself once its PID namespace is gone;
// this is how long it gets before it is killed too.
const BWRAP_EXIT_GRACE_MS = 2_000;

// What interpreters print when an allocation failed, and when a fork or thread was refused.
const MEMORY_FAILURE =
  /MemoryError|JavaScript heap out of memory|Cannot allocate memory|allocation failed|std::bad_alloc|out of memory/i;
const PROCESS_FAILURE =
  /Resource temporarily unavailable|Cannot fork|can't fork|spawn EAGAIN|uv_thread_create/i;
// Interpreters print their allocation or fork failure last; earlier text is the program's own.
const STDERR_TAIL_CHARS = 4_000;

type StopReason = SandboxLimit | 'aborted';

function signalName(number: number): string | undefined {
  return Object.entries(constants.signals).find(([, value]) => value === number)?.[0];
}

function createOutputCapture(limitBytes: number, onOverflow: () => void) {
  const chunks = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  let total = 0;
  let firstOutputAt: number | undefined;
  return {
    take(stream: 'stdout' | 'stderr', chunk: Buffer) {
      firstOutputAt ??= performance.now();
      const room = limitBytes - total;
      if (room > 0) chunks[stream].push(chunk.subarray(0, room));
      total += chunk.length;
      if (total > limitBytes) onOverflow();
    },
    text: (stream: 'stdout' | 'stderr') => Buffer.concat(chunks[stream]).toString('utf8'),
    firstOutputAt: () => firstOutputAt,
  };
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
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
  // Once bwrap has been reaped its pid may be reused: nothing is killed by it from then on.
  let hasExited = false;
  child.once('exit', () => {
    hasExited = true;
  });
  let stopReason: StopReason | undefined;
  let maxCpuSeconds = 0;
  let ceilingSince: number | undefined;
  let hasReachedProcessCeiling = false;
  let fallbackKill: NodeJS.Timeout | undefined;

  // Killing bwrap's init (PID 1 of the box) makes the kernel kill everything else in its PID
  // namespace, and bwrap then exits on its own; only if it does not is bwrap itself killed.
  const killBwrap = () => {
    if (!hasExited) killQuietly(-rootPid);
  };
  const stop = (reason: StopReason) => {
    if (stopReason || hasExited) return;
    stopReason = reason;
    const boxPids = sampleBox(rootPid).pids.filter((pid) => pid !== rootPid);
    for (const pid of boxPids) killQuietly(pid);
    // Before bwrap has made the box there is nothing of it to kill but bwrap.
    if (boxPids.length === 0) killBwrap();
    else fallbackKill = setTimeout(killBwrap, BWRAP_EXIT_GRACE_MS);
  };

  const output = createOutputCapture(limits.outputBytes, () => stop('output'));
  child.stdout.on('data', (chunk: Buffer) => output.take('stdout', chunk));
  child.stderr.on('data', (chunk: Buffer) => output.take('stderr', chunk));

  const watchProcesses = () => {
    if (hasExited) return;
    const sample = sampleBox(rootPid);
    maxCpuSeconds = Math.max(maxCpuSeconds, sample.maxCpuSeconds);
    if (sample.memoryBytes > limits.memoryBytes) return stop('memory');
    // bwrap outside the box is one task the box's own limit does not count.
    if (sample.tasks - 1 < limits.processes) {
      ceilingSince = undefined;
      return;
    }
    hasReachedProcessCeiling = true;
    ceilingSince ??= performance.now();
    if (performance.now() - ceilingSince >= PROCESS_CEILING_MS) stop('processes');
  };
  // The disk budget has no limit name of its own: what a run writes is output like its stdout.
  let isDiskCheckRunning = false;
  const watchDisk = () => {
    if (isDiskCheckRunning) return;
    isDiskCheckRunning = true;
    const budget = baselineBytes + limits.diskBytes;
    void directoryBytes(request.runDir, budget).then((bytes) => {
      isDiskCheckRunning = false;
      if (bytes > budget) stop('output');
    });
  };
  const timers = [
    setInterval(watchProcesses, PROCESS_POLL_MS),
    setInterval(watchDisk, DISK_POLL_MS),
  ];
  const wallTimer = setTimeout(() => stop('wall'), limits.wallMs);
  const onAbort = () => stop('aborted');
  request.signal?.addEventListener('abort', onAbort);
  if (request.signal?.aborted) onAbort();

  try {
    const { code, signal } = await new Promise<{ code: number | null; signal: string | null }>(
      (resolve, reject) => {
        child.once('error', reject);
        child.once('close', (code, signal) => resolve({ code, signal }));
      },
    );
    if (stopReason === 'aborted') throw request.signal?.reason;
    const exitCode = code ?? 128 + (constants.signals[signal as NodeJS.Signals] ?? 9);
    const stderr = output.text('stderr');
    const firstOutputAt = output.firstOutputAt();
    const result: SandboxResult = {
      stdout: output.text('stdout'),
      stderr,
      exitCode,
      durationMs: Math.round(performance.now() - startedAt),
    };
    // bwrap reports a command killed by a signal as 128 + its number, as shells do.
    const killedBy = signal ?? (exitCode > 128 ? signalName(exitCode - 128) : undefined);
    if (killedBy) result.signal = killedBy;
    const limit =
      stopReason ??
      limitFromExit(
        { exitCode, signal: killedBy, stderr, maxCpuSeconds, hasReachedProcessCeiling },
        limits.cpuSeconds,
      );
    if (limit) result.limit = limit;
    if (firstOutputAt !== undefined) result.firstOutputMs = Math.round(firstOutputAt - startedAt);
    return result;
  } finally {
    for (const timer of timers) clearInterval(timer);
    clearTimeout(wallTimer);
    clearTimeout(fallbackKill);
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

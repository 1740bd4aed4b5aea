import { directoryBytes, sampleBox } from './box-processes';
import type { SandboxLimits } from './bwrap-command';

export type SandboxLimit = 'cpu' | 'wall' | 'memory' | 'processes' | 'output';

const PROCESS_POLL_MS = 100;
const DISK_POLL_MS = 500;
// A box held at its process ceiling this long is a fork bomb (or failing like one: every fork
// it tries is refused); it is stopped rather than left to burn the CPU until the wall time.
const PROCESS_CEILING_MS = 1_000;
// After the box's processes were killed, bwrap exits by itself once its PID namespace is gone;
// this is how long it gets before it is killed too.
const BWRAP_EXIT_GRACE_MS = 2_000;

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

// Killing bwrap's init (PID 1 of the box) makes the kernel kill everything else in its PID
// namespace, and bwrap then exits on its own; only if it does not is bwrap itself killed.
// `hasExited` guards every kill: once bwrap has been reaped its pid may be another process's.
export function createBoxKiller(rootPid: number, hasExited: () => boolean) {
  let fallback: NodeJS.Timeout | undefined;
  const killBwrap = () => {
    if (!hasExited()) killQuietly(-rootPid);
  };
  return {
    kill() {
      if (hasExited()) return;
      const boxPids = sampleBox(rootPid).pids.filter((pid) => pid !== rootPid);
      for (const pid of boxPids) killQuietly(pid);
      // Before bwrap has made the box there is nothing of it to kill but bwrap.
      if (boxPids.length === 0) killBwrap();
      else fallback = setTimeout(killBwrap, BWRAP_EXIT_GRACE_MS);
    },
    dispose: () => clearTimeout(fallback),
  };
}

export type BoxWatch = {
  rootPid: number;
  runDir: string;
  limits: SandboxLimits;
  // Bytes in the run directory before the run: the disk budget is what the run adds.
  baselineBytes: number;
  hasExited: () => boolean;
  onLimit: (limit: SandboxLimit) => void;
};

// Polls the box from outside for what rlimits cannot bound: the memory of all its processes
// together, a process count pinned at its ceiling, and the bytes it writes over all its files.
export function watchBox(watch: BoxWatch) {
  const seen = { maxCpuSeconds: 0, hasReachedProcessCeiling: false };
  let ceilingSince: number | undefined;
  let isDiskCheckRunning = false;

  const checkProcesses = () => {
    if (watch.hasExited()) return;
    const sample = sampleBox(watch.rootPid);
    seen.maxCpuSeconds = Math.max(seen.maxCpuSeconds, sample.maxCpuSeconds);
    if (sample.memoryBytes > watch.limits.memoryBytes) return watch.onLimit('memory');
    // bwrap outside the box is one task the box's own limit does not count.
    if (sample.tasks - 1 < watch.limits.processes) {
      ceilingSince = undefined;
      return;
    }
    seen.hasReachedProcessCeiling = true;
    ceilingSince ??= performance.now();
    if (performance.now() - ceilingSince >= PROCESS_CEILING_MS) watch.onLimit('processes');
  };

  // The disk budget has no limit name of its own: what a run writes is output like its stdout.
  const checkDisk = () => {
    if (isDiskCheckRunning) return;
    isDiskCheckRunning = true;
    const budget = watch.baselineBytes + watch.limits.diskBytes;
    void directoryBytes(watch.runDir, budget).then((bytes) => {
      isDiskCheckRunning = false;
      if (bytes > budget) watch.onLimit('output');
    });
  };

  const timers = [
    setInterval(checkProcesses, PROCESS_POLL_MS),
    setInterval(checkDisk, DISK_POLL_MS),
  ];
  return {
    seen,
    close: () => {
      for (const timer of timers) clearInterval(timer);
    },
  };
}

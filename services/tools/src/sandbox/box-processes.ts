import { readdirSync, readFileSync } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

// What a box uses at one moment, summed over bwrap and every process below it.
export type BoxSample = {
  pids: number[];
  // Anonymous and shared-memory pages resident: what the box itself costs. File-backed pages
  // (the interpreter, numpy's libraries) are page cache shared by every process that maps them,
  // so summing VmRSS would count them once per process and stop a harmless pool of workers.
  memoryBytes: number;
  // Threads, which RLIMIT_NPROC counts as it counts processes.
  tasks: number;
  // The most CPU time any one process has used (RLIMIT_CPU is per process).
  maxCpuSeconds: number;
};

// USER_HZ, the unit of /proc/<pid>/stat's times: 100 on every architecture Linux exports it for.
const CLOCK_TICKS_PER_SECOND = 100;

type ProcessStat = { pid: number; ppid: number; cpuSeconds: number };

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return undefined; // the process ended between listing and reading
  }
}

// The fields after the command name, which may itself contain spaces and parentheses.
function parseStat(pid: number, text: string): ProcessStat {
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { pid, ppid: Number(fields[1]), cpuSeconds: ticks / CLOCK_TICKS_PER_SECOND };
}

function listProcesses(): ProcessStat[] {
  const processes: ProcessStat[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const text = readText(`/proc/${pid}/stat`);
    if (text) processes.push(parseStat(pid, text));
  }
  return processes;
}

function descendantsOf(rootPid: number, processes: ProcessStat[]): ProcessStat[] {
  const children = new Map<number, ProcessStat[]>();
  for (const process of processes) {
    const siblings = children.get(process.ppid) ?? [];
    siblings.push(process);
    children.set(process.ppid, siblings);
  }
  const root = processes.find((process) => process.pid === rootPid);
  const tree = root ? [root] : [];
  for (let index = 0; index < tree.length; index += 1) {
    tree.push(...(children.get(tree[index]?.pid ?? -1) ?? []));
  }
  return tree;
}

function statusKilobytes(status: string, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status);
  return match ? Number(match[1]) : 0;
}

// Orphans inside the box are re-parented to bwrap's init (PID 1 of the box), so every process
// of the box stays below the bwrap process the service started.
export function sampleBox(rootPid: number): BoxSample {
  const sample: BoxSample = { pids: [], memoryBytes: 0, tasks: 0, maxCpuSeconds: 0 };
  for (const process of descendantsOf(rootPid, listProcesses())) {
    const status = readText(`/proc/${process.pid}/status`);
    if (!status) continue;
    sample.pids.push(process.pid);
    const kilobytes = statusKilobytes(status, 'RssAnon') + statusKilobytes(status, 'RssShmem');
    sample.memoryBytes += kilobytes * 1024;
    sample.tasks += statusKilobytes(status, 'Threads');
    sample.maxCpuSeconds = Math.max(sample.maxCpuSeconds, process.cpuSeconds);
  }
  return sample;
}

// Each entry counts at least one 4 KiB block, so that a run making millions of empty files
// passes the disk budget like one writing a large file (and the walk stays bounded).
const ENTRY_MIN_BYTES = 4096;

// Bytes under a directory, symlinks not followed; stops early once past `stopAt`.
export async function directoryBytes(dir: string, stopAt = Number.POSITIVE_INFINITY) {
  let total = 0;
  const pending = [dir];
  while (pending.length > 0 && total <= stopAt) {
    const current = pending.pop() ?? dir;
    const entries = await readdir(current).catch(() => []);
    for (const name of entries) {
      const path = join(current, name);
      const stats = await lstat(path).catch(() => undefined);
      if (!stats) continue;
      total += Math.max(stats.size, stats.blocks * 512, ENTRY_MIN_BYTES);
      if (stats.isDirectory()) pending.push(path);
    }
  }
  return total;
}

import { readdir, readFile } from 'node:fs/promises';

// What /proc (Linux) tells of the processes a bench runs on: resident memory, and CPU time,
// which shows where the work goes, background work included, as latency alone does not on two
// shared cores. Each process counts its own CPU time and that of its children that have ended,
// so Postgres' figure includes backends and autovacuum workers that came and went.

// Resident memory (VmRSS) of a process in MB; NaN when it is not there.
export async function residentMb(pid: number | undefined): Promise<number> {
  if (pid === undefined) return Number.NaN;
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kilobytes = Number(status.match(/VmRSS:\s+(\d+)/)?.[1]);
  return Math.round((kilobytes / 1024) * 10) / 10;
}

// /proc/<pid>/stat counts in clock ticks of USER_HZ, 100 a second on Linux.
const TICKS_PER_SECOND = 100;

// Servers of the machine that are not the stack's own processes: the name each is reported by,
// by its command name.
const SERVERS = { postgres: 'postgres', 'nats-server': 'nats', 'redis-server': 'redis' } as const;
export type MachineServer = keyof typeof SERVERS;

async function cpuSecondsOf(pid: string): Promise<{ command: string; seconds: number } | null> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (stat === null) return null;
  // The command name is in parentheses and may hold spaces; the numbers follow its last ')'.
  const command = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime, stime, cutime, cstime: fields 14-17 of the line, 12-15 after the command.
  const ticks = [11, 12, 13, 14].reduce((sum, index) => sum + Number(fields[index] ?? 0), 0);
  return { command, seconds: ticks / TICKS_PER_SECOND };
}

// CPU seconds used so far by each named process (`pids`: the stack's), by the machine's servers
// the bench uses (all of their processes), and by the bench itself (`bench`). Only the bench's
// own where /proc is not there.
export async function readCpuSeconds(
  pids: Record<string, number | undefined>,
  servers: MachineServer[],
): Promise<Record<string, number>> {
  const entries = await readdir('/proc').catch(() => [] as string[]);
  const named = new Map(
    Object.entries(pids).flatMap(([name, pid]) => (pid === undefined ? [] : [[String(pid), name]])),
  );
  const { user, system } = process.cpuUsage();
  const totals: Record<string, number> = { bench: (user + system) / 1_000_000 };
  await Promise.all(
    entries
      .filter((entry) => /^\d+$/.test(entry))
      .map(async (pid) => {
        const usage = await cpuSecondsOf(pid);
        const server = servers.find((command) => command === usage?.command);
        const name = named.get(pid) ?? (server && SERVERS[server]);
        if (!usage || !name) return;
        totals[name] = (totals[name] ?? 0) + usage.seconds;
      }),
  );
  return totals;
}

// Milliseconds of CPU per turn of each process between two readings, most first.
export function cpuMsPerTurn(
  from: Record<string, number> | undefined,
  to: Record<string, number> | undefined,
  turns: number,
): Record<string, number> {
  if (!from || !to || turns <= 0) return {};
  const perTurn = Object.entries(to).map(([name, seconds]) => {
    const used = seconds - (from[name] ?? 0);
    return [name, Math.round((used * 10_000) / turns) / 10] as const;
  });
  return Object.fromEntries(perTurn.sort((a, b) => b[1] - a[1]));
}

// Busy time of all cores in ms, from /proc/stat (user, nice, system, irq, softirq; not steal).
export async function machineCpuMs(): Promise<number> {
  const stat = await readFile('/proc/stat', 'utf8').catch(() => '');
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0] = (stat.split('\n')[0] ?? '')
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return (user + nice + system + irq + softirq) * (1_000 / TICKS_PER_SECOND);
}

// CPU seconds of a process' main thread, the one that runs a Node process' event loop (the
// others collect garbage, compile, and serve libuv's pool); NaN without /proc.
export async function mainThreadCpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/task/${pid}/stat`, 'utf8').catch(() => null);
  if (stat === null) return Number.NaN;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime: fields 14 and 15 of the line.
  return (Number(fields[11] ?? 0) + Number(fields[12] ?? 0)) / TICKS_PER_SECOND;
}

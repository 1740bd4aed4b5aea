import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

// How overhead.ts talks to the fake model server's process over Node's IPC channel: one command
// at a time, each answered by one report. Nothing crosses it while a block of requests is being
// timed.

// Process CPU time (user + system) so far, to charge each block of requests with what it cost.
const CpuCommand = z.object({ type: z.literal('cpu') });

export const FakeCommand = z.discriminatedUnion('type', [
  CpuCommand,
  // How long, on average, the fake holds each answer from now on; also forgets the requests it
  // has recorded.
  z.object({ type: z.literal('configure'), delayMs: z.number().int().min(0) }),
]);

export const Report = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready'), openaiBaseUrl: z.string() }),
  // CPU time (all threads) since the process started.
  z.object({ type: z.literal('cpu'), micros: z.number() }),
  z.object({ type: z.literal('configured') }),
]);
export type Report = z.infer<typeof Report>;

export function cpuReport(): Report {
  const { user, system } = process.cpuUsage();
  return { type: 'cpu', micros: user + system };
}

// Child side: answers the bench's commands, and shuts down when the bench lets go of the
// channel (or dies), so no child outlives a bench run.
export function serveCommands<C extends z.ZodType>(
  schema: C,
  handle: (command: z.output<C>) => Report | Promise<Report>,
  stop: () => Promise<void>,
): void {
  const send = process.send?.bind(process);
  if (!send) throw new Error('started without an IPC channel: run overhead.ts instead');
  process.on('message', (message: unknown) => {
    const command = schema.safeParse(message);
    if (!command.success) return;
    Promise.resolve(handle(command.data)).then(
      (report) => send(report),
      (error: unknown) => {
        process.stderr.write(`bench command failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  });
  process.once('disconnect', () => {
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`bench child did not stop cleanly: ${String(error)}\n`);
        process.exit(1);
      },
    );
  });
}

export function reportReady(report: Report): void {
  process.send?.(report);
}

// Commands are plain objects, which is what the IPC channel carries.
export type BenchChild<C extends z.ZodType<object, object>> = {
  ready: Report;
  ask(command: z.input<C>): Promise<Report>;
  stop(): Promise<void>;
};

// Bench side: forks a child script with this process's exec arguments (tsx's loader, so the
// child runs TypeScript too), and waits for its ready report.
export async function startChild<C extends z.ZodType<object, object>>(
  name: string,
  script: URL,
  options: { env: Record<string, string | undefined> },
): Promise<BenchChild<C>> {
  const child = fork(fileURLToPath(script), [], {
    env: options.env,
    execArgv: process.execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
  });
  const ready = await nextReport(name, child);
  return {
    ready,
    ask(command) {
      const reply = nextReport(name, child);
      child.send(command);
      return reply;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.disconnect();
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

function nextReport(name: string, child: ChildProcess): Promise<Report> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: unknown) => {
      const report = Report.safeParse(message);
      if (!report.success) return;
      settle();
      resolve(report.data);
    };
    const onExit = (code: number | null) => {
      settle();
      reject(new Error(`the ${name} process exited (${code}) before it answered`));
    };
    const settle = () => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

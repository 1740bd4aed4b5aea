import { type ChildProcess, spawn } from 'node:child_process';

export type ManagedProcess = {
  name: string;
  child: ChildProcess;
  // Everything the process printed so far (stdout and stderr), for assertions and post-mortems.
  output(): string;
  exited: Promise<number | null>;
  // SIGTERM, then SIGKILL if it has not exited within graceMs.
  stop(graceMs?: number): Promise<number | null>;
  kill(): Promise<number | null>;
};

export type StartProcessOptions = {
  name: string;
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string | undefined>;
  // Called with each line the process prints, e.g. to prefix and echo it.
  onLine?: (line: string) => void;
};

const MAX_OUTPUT_CHARS = 2_000_000;

export function startProcess(options: StartProcessOptions): ManagedProcess {
  const child = spawn(options.command, options.args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let partial = '';
  const collect = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    output = (output + text).slice(-MAX_OUTPUT_CHARS);
    if (!options.onLine) return;
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) options.onLine(line);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? (signal ? null : 0)));
  });
  const isRunning = () => child.exitCode === null && child.signalCode === null;
  return {
    name: options.name,
    child,
    output: () => output,
    exited,
    async stop(graceMs = 10_000) {
      if (!isRunning()) return exited;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
    async kill() {
      if (isRunning()) child.kill('SIGKILL');
      return exited;
    },
  };
}

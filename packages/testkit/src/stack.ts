import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { embeddedPostgresUrl } from '@jarvis/db';
import { waitFor } from './infra';
import { type ManagedProcess, startProcess } from './process';

export const SERVICE_NAMES = [
  'memory',
  'model-gateway',
  'tools',
  'scheduler',
  'orchestrator',
  'gateway',
] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

const ROOT_DIR = fileURLToPath(new URL('../../../', import.meta.url));

export type StackOptions = {
  // Settings given to every service (NATS_NAMESPACE, OPENAI_BASE_URL, ...).
  env: Record<string, string>;
  // Folder of the embedded Postgres; needed, and used, only without databaseUrl.
  dataDir?: string;
  // A database on a PostgreSQL server, which the stack uses but does not own (it cannot stop
  // it); without it the stack runs the embedded one as its own process.
  databaseUrl?: string;
  // Fixed ports (make dev); without them free ports are picked (tests).
  ports?: Partial<Record<ServiceName | 'postgres', number>>;
  onLine?: (name: string, line: string) => void;
  readyTimeoutMs?: number;
  // Options for every service's node (benches: `--cpu-prof`, which NODE_OPTIONS refuses).
  nodeArgs?: string[];
  // The services start() runs, all six unless given: a service's own tests start the others it
  // talks to (only memory, say) and run its own code in the test process.
  services?: readonly ServiceName[];
  // 'build' runs a service from its tsup bundle, dist/main.js, as its image does, when that
  // bundle is newer than every file it was built from, and from its TypeScript under tsx
  // otherwise: a bundle starts on a third less CPU. 'source' (make dev, and the default unless
  // JARVIS_STACK_RUN_FROM=build, which the end-to-end tests set) always runs the TypeScript: a
  // build that turbo is writing at that moment (beside another package's tests) is never read.
  runFrom?: 'build' | 'source';
};

// The six services (or some of them) and the embedded Postgres as separate processes, run from
// their fresh builds or their TypeScript sources: what `make dev` runs, what the end-to-end tests
// start, stop and kill, and the other services a service's tests talk to over the bus.
export class Stack {
  private readonly options: StackOptions;
  private readonly processes = new Map<ServiceName | 'postgres', ManagedProcess>();
  private readonly ports = new Map<ServiceName | 'postgres', number>();
  // The tools service's key for channel secrets when the env names none (neither
  // JARVIS_SECRET_KEY nor its file): one per stack, so that a restarted tools service still
  // opens what it sealed, and no stack shares a key file with make dev's or another stack's.
  private readonly secretKey = randomBytes(32).toString('base64');

  constructor(options: StackOptions) {
    this.options = options;
  }

  get gatewayUrl(): string {
    return `http://127.0.0.1:${this.port('gateway')}`;
  }

  // A service's own HTTP server: /healthz, /readyz and /metrics (and the gateway's API).
  serviceUrl(name: ServiceName): string {
    return `http://127.0.0.1:${this.port(name)}`;
  }

  get databaseUrl(): string {
    return this.options.databaseUrl ?? embeddedPostgresUrl('127.0.0.1', this.port('postgres'));
  }

  process(name: ServiceName | 'postgres'): ManagedProcess | undefined {
    return this.processes.get(name);
  }

  async start(): Promise<void> {
    for (const name of [...SERVICE_NAMES, 'postgres'] as const) {
      const port = this.options.ports?.[name];
      if (port !== undefined) this.ports.set(name, port);
    }
    try {
      if (!this.options.databaseUrl) await this.startDatabase();
      // allSettled: one service failing to start must not leave the others starting unwatched.
      const started = await Promise.allSettled(
        (this.options.services ?? SERVICE_NAMES).map((name) => this.startService(name)),
      );
      const failure = started.find((result) => result.status === 'rejected');
      if (failure) throw failure.reason;
    } catch (error) {
      // A stack that did not come up is stopped whole: nobody else holds its processes, so
      // they would outlive the test run and load the machine.
      await this.stop();
      throw error;
    }
  }

  // A process started for the first time without a fixed port listens on port 0 and says which
  // port the OS gave it; a port picked beforehand could be taken by another process before it
  // binds, and readiness would then be asked of that other process. A restart keeps the port,
  // as the other services hold it (Postgres') and tests hold the gateway's URL.
  async startDatabase(): Promise<void> {
    const { databaseUrl, dataDir } = this.options;
    if (databaseUrl) {
      throw new Error('this stack uses the database at databaseUrl and runs none of its own');
    }
    if (!dataDir) throw new Error('a stack without databaseUrl needs a dataDir for its Postgres');
    const managed = this.launch('postgres', 'packages/db/src/embedded-cli.ts', {
      EMBEDDED_PG_DIR: dataDir,
      EMBEDDED_PG_PORT: String(this.ports.get('postgres') ?? 0),
    });
    const ready = await waitFor(() => loggedLine(managed.output(), 'embedded postgres ready'), {
      timeoutMs: this.options.readyTimeoutMs ?? 60_000,
      what: 'embedded postgres',
      giveUpIf: () => exitError(managed),
    });
    this.ports.set('postgres', Number(new URL(String(ready.url)).port));
  }

  // `env` adds to the stack's settings for this start only (a crash test's fault point).
  async startService(name: ServiceName, env: Record<string, string> = {}): Promise<void> {
    const port = String(this.ports.get(name) ?? 0);
    const hasKey =
      'JARVIS_SECRET_KEY' in this.options.env || 'JARVIS_SECRET_KEY_FILE' in this.options.env;
    const runFrom = this.options.runFrom ?? process.env.JARVIS_STACK_RUN_FROM;
    const bundle = runFrom === 'build' ? freshBundle(name) : undefined;
    const managed = this.launch(name, bundle ?? `services/${name}/src/main.ts`, {
      ...(name === 'tools' && !hasKey ? { JARVIS_SECRET_KEY: this.secretKey } : {}),
      // The bundle cannot find infra/models.json from dist/ (its image names the file the same way).
      ...(name === 'model-gateway' && bundle ? { MODEL_CONFIG_FILE: MODELS_FILE } : {}),
      ...this.options.env,
      ...env,
      DATABASE_URL: this.databaseUrl,
      ...(name === 'gateway' ? { GATEWAY_PORT: port } : { HTTP_PORT: port }),
    });
    this.ports.set(name, await waitUntilReady(managed, this.options.readyTimeoutMs));
  }

  async stopService(name: ServiceName | 'postgres'): Promise<number | null> {
    const managed = this.processes.get(name);
    return managed ? managed.stop() : null;
  }

  async killService(name: ServiceName | 'postgres'): Promise<number | null> {
    const managed = this.processes.get(name);
    return managed ? managed.kill() : null;
  }

  // Services first, then the database they write to.
  async stop(): Promise<void> {
    await Promise.all(SERVICE_NAMES.map((name) => this.stopService(name)));
    await this.stopService('postgres');
  }

  output(name: ServiceName | 'postgres'): string {
    return this.processes.get(name)?.output() ?? '';
  }

  private port(name: ServiceName | 'postgres'): number {
    const port = this.ports.get(name);
    if (port === undefined) throw new Error('stack not started');
    return port;
  }

  private launch(
    name: ServiceName | 'postgres',
    entry: string,
    env: Record<string, string>,
  ): ManagedProcess {
    const onLine = this.options.onLine;
    const managed = startProcess({
      name,
      command: process.execPath,
      args: [
        ...(this.options.nodeArgs ?? []),
        // A bundle's source map keeps stack traces pointing at the sources.
        ...(entry.endsWith('.js')
          ? ['--enable-source-maps', '--import', RESOLVE_FROM_WORKSPACE]
          : ['--import', 'tsx']),
        entry,
      ],
      cwd: ROOT_DIR,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      ...(onLine ? { onLine: (line: string) => onLine(name, line) } : {}),
    });
    this.processes.set(name, managed);
    return managed;
  }
}

const MODELS_FILE = join(ROOT_DIR, 'infra/models.json');

// Resolves, in a service run from its bundle, the npm packages services/<name>/ cannot reach,
// as the image's flat node_modules does (bundle-resolve/hooks.mjs says how, and why).
const RESOLVE_FROM_WORKSPACE = fileURLToPath(
  new URL('./bundle-resolve/register.mjs', import.meta.url),
);

// A service's dist/main.js when it was built after the last change to any file it bundles (the
// source maps of dist/ list them all), so that a test never runs code older than the tree: an
// edit without a build falls back to the sources. turbo builds the services before the
// end-to-end tests (turbo.json); a test run by hand after an edit runs the TypeScript.
function freshBundle(name: ServiceName): string | undefined {
  const dist = join(ROOT_DIR, 'services', name, 'dist');
  try {
    const maps = readdirSync(dist).filter((file) => file.endsWith('.js.map'));
    if (!maps.includes('main.js.map')) return undefined;
    for (const file of maps) {
      const builtAt = statSync(join(dist, file.slice(0, -'.map'.length))).mtimeMs;
      for (const source of mapSources(join(dist, file))) {
        if (statSync(resolve(dist, source)).mtimeMs > builtAt) return undefined;
      }
    }
    return join(dist, 'main.js');
  } catch {
    // No build, or a file it was built from is gone: the sources are what is current.
    return undefined;
  }
}

function mapSources(file: string): string[] {
  const map: unknown = JSON.parse(readFileSync(file, 'utf8'));
  const sources = typeof map === 'object' && map !== null && 'sources' in map ? map.sources : [];
  if (!Array.isArray(sources) || !sources.every((source) => typeof source === 'string')) {
    throw new Error(`${file} lists no sources`);
  }
  return sources;
}

// Waits until a service process says which port it listens on and answers ready there, and
// returns that port.
export async function waitUntilReady(managed: ManagedProcess, timeoutMs = 60_000): Promise<number> {
  return waitFor(
    async () => {
      const port = loggedLine(managed.output(), 'listening')?.port;
      if (typeof port !== 'number') return undefined;
      const response = await fetch(`http://127.0.0.1:${port}/readyz`);
      return response.ok ? port : undefined;
    },
    { timeoutMs, what: `${managed.name} to be ready`, giveUpIf: () => exitError(managed) },
  );
}

function exitError(managed: ManagedProcess): Error | undefined {
  const exitCode = managed.child.exitCode;
  if (exitCode === null) return undefined;
  return new Error(`${managed.name} exited with ${exitCode}:\n${managed.output().slice(-4_000)}`);
}

// The first JSON line of a process' output with this message (services log JSON lines).
function loggedLine(output: string, message: string): Record<string, unknown> | undefined {
  for (const line of output.split('\n')) {
    if (!line.includes(message)) continue;
    try {
      const parsed: unknown = JSON.parse(line);
      if (typeof parsed === 'object' && parsed && 'msg' in parsed && parsed.msg === message) {
        return parsed as Record<string, unknown>;
      }
    } catch {
      // Not a log line: something the process printed.
    }
  }
  return undefined;
}

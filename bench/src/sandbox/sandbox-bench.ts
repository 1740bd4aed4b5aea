import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { toolsInvoke, toolsList } from '@jarvis/contracts';
import { createLogger } from '@jarvis/telemetry';
import { waitFor } from '@jarvis/testkit';
import { z } from 'zod';
import {
  createSandbox,
  type Sandbox,
  type SandboxLanguage,
} from '../../../services/tools/src/sandbox/sandbox';
import { prepareBenchStack } from '../bench-stack';
import { RESULTS_DIR } from '../paths';
import { percentiles } from '../percentiles';

// `make bench` (sandbox): how soon code run by run_code starts answering, and what a whole
// run_code call costs. Two parts:
// - Start to first output, single and 4 at once, for shell, Python and JavaScript. tools.invoke's
//   answer carries no timing, so this part imports the tools service's sandbox module from its
//   source and drives it as run_code does (production's limits; as `nobody` when the bench runs
//   as root): from asking for a box (its run directory made) to the first byte the code wrote to
//   stdout, which the sandbox times as it reads the pipe (to the millisecond). Each code prints
//   at once.
// - The whole run_code call, through tools.invoke as the orchestrator asks it, with the tools
//   service as its own process (its main.ts): the request over NATS, the conversation's
//   workspace loaded from Postgres into the run directory, the box, the files it wrote stored
//   back, the answer. For shell and Python printing, and for a matplotlib chart saved to
//   /workspace (what a chart costs the user).

const Settings = z.object({
  // A PostgreSQL server for the tools service's own tables; the bench makes a database of its
  // own there and drops it at the end. Without it, the embedded one.
  DATABASE_URL: z.string().url().optional(),
  // Runs measured in each first-output series (4 at once: this many in rounds of 4), after
  // BENCH_WARM_UP unmeasured ones.
  BENCH_RUNS: z.coerce.number().int().min(1).default(50),
  BENCH_WARM_UP: z.coerce.number().int().min(0).default(5),
  // run_code calls measured in each tools.invoke series.
  BENCH_CALLS: z.coerce.number().int().min(1).default(20),
});
const settings = Settings.parse(process.env);
const RESULTS = resolve(RESULTS_DIR, 'sandbox.json');
const AT_ONCE = 4;
// The defaults of the tools service's SANDBOX_* settings.
const LIMITS = {
  cpuSeconds: 30,
  wallMs: 60_000,
  memoryBytes: 512 * 1024 * 1024,
  processes: 64,
  outputBytes: 1024 * 1024,
  diskBytes: 256 * 1024 * 1024,
};
const PRINT_AT_ONCE: Record<SandboxLanguage, string> = {
  shell: 'echo ready',
  python: "print('ready')",
  javascript: "console.log('ready')",
};
const CHART = `import matplotlib.pyplot as plt
plt.plot([1, 2, 3, 4], [12, 30, 21, 44])
plt.savefig('/workspace/chart.png')
print('ready')`;

const round = (value: number) => Math.round(value * 10) / 10;
const figures = (values: number[]) => ({ ...percentiles(values, round), runs: values.length });

// From asking for a box to the code's first output, in ms; the box is removed after.
async function firstOutput(sandbox: Sandbox, language: SandboxLanguage): Promise<number> {
  const asked = performance.now();
  const box = await sandbox.open();
  try {
    const result = await box.run({ language, code: PRINT_AT_ONCE[language] });
    const ended = performance.now();
    if (
      result.stdout !== 'ready\n' ||
      result.exitCode !== 0 ||
      result.firstOutputMs === undefined
    ) {
      throw new Error(`${language} did not print: ${JSON.stringify(result).slice(0, 500)}`);
    }
    // The sandbox times the first output from the box's spawn, and the run's duration up to its
    // end; what came before the spawn (the code written, the run directory handed to the box's
    // user) is counted on the bench's clock, as the run's end less its duration.
    return ended - result.durationMs - asked + result.firstOutputMs;
  } finally {
    await box.dispose();
  }
}

async function firstOutputSeries(sandbox: Sandbox, language: SandboxLanguage) {
  for (let index = 0; index < settings.BENCH_WARM_UP; index += 1) {
    await firstOutput(sandbox, language);
  }
  const single: number[] = [];
  for (let index = 0; index < settings.BENCH_RUNS; index += 1) {
    single.push(await firstOutput(sandbox, language));
  }
  const atOnce: number[] = [];
  for (let index = 0; index < Math.ceil(settings.BENCH_RUNS / AT_ONCE); index += 1) {
    const batch = Array.from({ length: AT_ONCE }, () => firstOutput(sandbox, language));
    atOnce.push(...(await Promise.all(batch)));
  }
  return { single: figures(single), [`${AT_ONCE}AtOnce`]: figures(atOnce) };
}

async function measureFirstOutput() {
  // Traversable by the user the box runs as, as the service's SANDBOX_DIR is.
  const rootDir = join(tmpdir(), `jarvis-sandbox-bench-${process.pid}`);
  await mkdir(rootDir, { recursive: true, mode: 0o711 });
  try {
    const sandbox = await createSandbox({
      bwrap: 'bwrap',
      rootDir,
      user: 'nobody',
      limits: LIMITS,
      maxConcurrent: AT_ONCE,
      logger: createLogger('bench-sandbox', 'warn'),
    });
    return {
      shell: await firstOutputSeries(sandbox, 'shell'),
      python: await firstOutputSeries(sandbox, 'python'),
      javascript: await firstOutputSeries(sandbox, 'javascript'),
    };
  } finally {
    await rm(rootDir, { recursive: true, force: true });
  }
}

// The tools service offers run_code once its sandbox passed its trial run at start.
async function waitForRunCode(bus: Bus): Promise<void> {
  await waitFor(
    async () => {
      const { tools } = await bus.request(toolsList, {}, { timeoutMs: 5_000 });
      return tools.some((tool) => tool.name === 'run_code');
    },
    { timeoutMs: 60_000, intervalMs: 500, what: 'the tools service to offer run_code' },
  );
}

async function measureRunCodeCalls(bus: Bus) {
  const userId = randomUUID();
  const call = async (conversationId: string, language: SandboxLanguage, code: string) => {
    const started = performance.now();
    const { result } = await bus.request(
      toolsInvoke,
      {
        userId,
        runId: randomUUID(),
        conversationId,
        name: 'run_code',
        arguments: { language, code },
        timeoutMs: 75_000,
      },
      { timeoutMs: 80_000 },
    );
    const elapsed = performance.now() - started;
    const answer = z.object({ stdout: z.string(), exitCode: z.number() }).safeParse(result);
    if (!answer.success || answer.data.stdout !== 'ready\n' || answer.data.exitCode !== 0) {
      throw new Error(`run_code did not print: ${JSON.stringify(result).slice(0, 500)}`);
    }
    return elapsed;
  };
  const series = async (language: SandboxLanguage, code: string) => {
    const conversationId = randomUUID();
    for (let index = 0; index < settings.BENCH_WARM_UP; index += 1) {
      await call(conversationId, language, code);
    }
    const times: number[] = [];
    for (let index = 0; index < settings.BENCH_CALLS; index += 1) {
      times.push(await call(conversationId, language, code));
    }
    return figures(times);
  };
  return {
    shell: await series('shell', PRINT_AT_ONCE.shell),
    python: await series('python', PRINT_AT_ONCE.python),
    pythonChart: await series('python', CHART),
  };
}

const loadAtStart = loadavg().map((value) => Math.round(value * 100) / 100);
const firstOutputMs = await measureFirstOutput();

const { database, namespace, stack } = await prepareBenchStack('bench-sandbox', ['tools']);
let bus: Bus | undefined;
try {
  await stack.start();
  bus = await connectTestBus(namespace);
  await waitForRunCode(bus);
  const runCodeCallMs = await measureRunCodeCalls(bus);

  const report = {
    date: new Date().toISOString(),
    loadAverageAtStart: loadAtStart,
    loadAverageAtEnd: loadavg().map((value) => Math.round(value * 100) / 100),
    targets: { shellSingleP95Ms: 150, pythonSingleP95Ms: 500 },
    firstOutputMs,
    runCodeCallMs,
  };
  const line = (name: string, value: { p50: number; p95: number; runs: number }) =>
    `${name} (${value.runs}): p50 ${value.p50} ms, p95 ${value.p95} ms`;
  const lines = Object.entries(firstOutputMs).flatMap(([language, byMode]) =>
    Object.entries(byMode).map(([mode, value]) =>
      line(`start to first output, ${language}, ${mode}`, value),
    ),
  );
  for (const [name, value] of Object.entries(runCodeCallMs)) {
    lines.push(line(`run_code through tools.invoke, ${name}`, value));
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  await mkdir(RESULTS_DIR, { recursive: true });
  await writeFile(RESULTS, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`written to ${RESULTS}\n`);
} finally {
  await bus?.close();
  await stack.stop();
  await database.stop();
}

import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ChatResponse } from '@jarvis/contracts';
import {
  type FakeLlmRequest,
  isTurnRequest,
  type OtlpReceiver,
  SERVICE_NAMES,
  type ServiceName,
  type StackFixture,
  sentMessages,
  startOtlpReceiver,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import { z } from 'zod';
import { scrape } from '../model-gateway/prometheus';
import { RESULTS_DIR } from '../paths';

// `make bench` (tracing): what exporting traces costs the services. The same turns run through
// two stacks in one run: one exports nothing (no OTEL_EXPORTER_OTLP_ENDPOINT, as an install
// without the observability stack), the other exports every span over OTLP/HTTP to a receiver in
// this process (the test kit's, as the traces test uses). The stacks start one after the other,
// then take turns, turn by turn. Each turn is a chat turn in which the fake model asks for one
// tool, web_fetch of a page served here, then answers. Each service's CPU is its own
// process_cpu_seconds_total on /metrics, read before the measured turns and again once the
// exporters' batches of the last turns have gone out.

const Settings = z.object({
  // A PostgreSQL server; each stack makes a database of its own there and drops it at the end.
  // Without it, each stack runs the embedded Postgres.
  DATABASE_URL: z.string().url().optional(),
  // Turns measured on each stack, after the warm-up's.
  BENCH_TURNS: z.coerce.number().int().min(1).default(100),
  BENCH_WARM_UP: z.coerce.number().int().min(0).default(10),
  // Rounds, each with a fresh pair of stacks: how far apart two pairs' figures are.
  BENCH_ROUNDS: z.coerce.number().int().min(1).default(2),
});
const settings = Settings.parse(process.env);
const RESULTS = resolve(RESULTS_DIR, 'tracing.json');
// Longer than the SDK's batch span processor waits before it exports (5 s), so the spans of the
// last turns are sent, and paid for, before the second reading.
const SETTLE_MS = 7_000;
// The overhead the issue allows.
const TARGET = 0.05;

type CpuReading = Record<ServiceName, number>;

async function readCpu(fixture: StackFixture): Promise<CpuReading> {
  const entries = await Promise.all(
    SERVICE_NAMES.map(async (name) => {
      const samples = await scrape(`${fixture.stack.serviceUrl(name)}/metrics`);
      const cpu = samples.find((sample) => sample.name === 'process_cpu_seconds_total');
      if (!cpu) throw new Error(`${name} has no process_cpu_seconds_total`);
      return [name, cpu.value] as const;
    }),
  );
  return Object.fromEntries(entries) as CpuReading;
}

function offeredTools(request: FakeLlmRequest | undefined): string[] {
  const body = request?.body;
  if (typeof body !== 'object' || body === null || !('tools' in body)) return [];
  if (!Array.isArray(body.tools)) return [];
  return body.tools.map((tool: { function?: { name?: string } }) => tool.function?.name ?? '');
}

type StackFigures = {
  // CPU milliseconds per turn, by service, and their sum.
  cpuMsPerTurn: Record<ServiceName | 'total', number>;
  turnMs: { p50: number; p95: number };
  spans?: { perTurn: number; exportBytesPerTurn: number };
};

const round = (value: number, places = 2) => Math.round(value * 10 ** places) / 10 ** places;

type Mode = 'off' | 'on';

type BenchStack = {
  mode: Mode;
  fixture: StackFixture;
  turn(index: number): Promise<void>;
  durations: number[];
};

async function startBenchStack(
  mode: Mode,
  pageUrl: string,
  receiver: OtlpReceiver,
): Promise<BenchStack> {
  const fixture = await startStackFixture(
    {
      USER_REQUESTS_PER_MINUTE: '0',
      RATE_LIMIT_PER_MINUTE: '0',
      CHAT_RATE_LIMIT_PER_MINUTE: '0',
      USER_DAILY_COST_LIMIT_USD: '0',
      ...(mode === 'on'
        ? { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }
        : {}),
    },
    { databaseUrl: settings.DATABASE_URL },
  );
  try {
    const { apiKey } = await fixture.createUser('bench');
    // One tool call per turn: web_fetch of the page, then the answer. Other requests (fact
    // extraction's) get an empty list of operations.
    fixture.fake.onChat((request) => {
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      const results = sentMessages(request).filter((message) => message.role === 'tool').length;
      return results === 0
        ? { toolCalls: [{ name: 'web_fetch', arguments: { url: pageUrl } }] }
        : { content: 'The ferry leaves at 9.' };
    });
    const stack: BenchStack = {
      mode,
      fixture,
      durations: [],
      async turn(index) {
        const started = performance.now();
        const response = await fixture.chat(apiKey, { message: `turn ${index}: the ferry?` });
        if (response.status !== 200) throw new Error(`turn ${index} answered ${response.status}`);
        const { reply } = ChatResponse.parse(await response.json());
        if (!reply.content.includes('ferry')) throw new Error(`turn ${index} answered otherwise`);
        if (index >= 0) stack.durations.push(performance.now() - started);
      },
    };
    // The orchestrator reads the tools service's list on a later try when both start at once.
    await waitFor(
      async () => {
        await fixture.chat(apiKey, { message: 'Are you there?' }).then((r) => r.body?.cancel());
        const last = fixture.fake.chatRequests().filter(isTurnRequest).at(-1);
        return offeredTools(last).includes('web_fetch');
      },
      { timeoutMs: 60_000, intervalMs: 500, what: 'web_fetch to be offered to the model' },
    );
    for (let index = 0; index < settings.BENCH_WARM_UP; index++) await stack.turn(-1 - index);
    return stack;
  } catch (error) {
    await fixture.close();
    throw error;
  }
}

// One round: a stack without export and one exporting, started one after the other and then
// running side by side, their turns taken in turn (off-on, then on-off, ...): both meet the same
// moments of the machine's other load, and both see the same pace of turns, which the services'
// background work (fact extraction, indexing) batches by.
// Which starts first alternates from round to round.
async function measureRound(
  pageUrl: string,
  receiver: OtlpReceiver,
  first: Mode,
): Promise<Record<Mode, StackFigures>> {
  const stacks: BenchStack[] = [];
  try {
    for (const mode of first === 'off' ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
      stacks.push(await startBenchStack(mode, pageUrl, receiver));
    }
    await sleep(SETTLE_MS);
    const spansBefore = receiver.spans().length;
    const bytesBefore = receiver.receivedBytes();
    const before = await Promise.all(stacks.map((stack) => readCpu(stack.fixture)));
    for (let index = 0; index < settings.BENCH_TURNS; index++) {
      const order = index % 2 === 0 ? stacks : [...stacks].reverse();
      for (const stack of order) await stack.turn(index);
    }
    await sleep(SETTLE_MS);
    const after = await Promise.all(stacks.map((stack) => readCpu(stack.fixture)));

    const perTurn = (seconds: number) => round((seconds * 1000) / settings.BENCH_TURNS);
    const figuresOf = (mode: Mode): StackFigures => {
      const index = stacks.findIndex((stack) => stack.mode === mode);
      const [start, end, stack] = [before[index], after[index], stacks[index]];
      if (!start || !end || !stack) throw new Error('a stack went missing');
      const byService = Object.fromEntries(
        SERVICE_NAMES.map((name) => [name, perTurn(end[name] - start[name])]),
      ) as Record<ServiceName, number>;
      const total = perTurn(SERVICE_NAMES.reduce((sum, name) => sum + end[name] - start[name], 0));
      const sorted = [...stack.durations].sort((a, b) => a - b);
      const at = (p: number) =>
        round(sorted[Math.ceil((p / 100) * sorted.length) - 1] ?? Number.NaN);
      return { cpuMsPerTurn: { ...byService, total }, turnMs: { p50: at(50), p95: at(95) } };
    };
    const spans = receiver.spans().length - spansBefore;
    // An export that failed would make tracing look free.
    if (spans < settings.BENCH_TURNS) {
      throw new Error(`only ${spans} spans arrived for ${settings.BENCH_TURNS} turns`);
    }
    return {
      off: figuresOf('off'),
      on: {
        ...figuresOf('on'),
        spans: {
          perTurn: round(spans / settings.BENCH_TURNS, 1),
          exportBytesPerTurn: Math.round(
            (receiver.receivedBytes() - bytesBefore) / settings.BENCH_TURNS,
          ),
        },
      },
    };
  } finally {
    await Promise.all(stacks.map((stack) => stack.fixture.close()));
  }
}

// The page web_fetch reads on every turn.
const page = createServer((_request, response) => {
  response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  response.end(
    '<html><head><title>Ferry</title></head><body><p>The ferry leaves at 9.</p></body></html>',
  );
});
await new Promise<void>((ready) => page.listen(0, '127.0.0.1', ready));
const pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}/ferry`;
const receiver = await startOtlpReceiver();
try {
  const loadBefore = loadavg()[0] ?? Number.NaN;
  const stacks: Array<{ export: Mode; round: number } & StackFigures> = [];
  for (let round = 0; round < settings.BENCH_ROUNDS; round++) {
    const figures = await measureRound(pageUrl, receiver, round % 2 === 0 ? 'off' : 'on');
    for (const mode of ['off', 'on'] as const) {
      stacks.push({ export: mode, round: round + 1, ...figures[mode] });
    }
    process.stdout.write(
      `  round ${round + 1}: ${figures.off.cpuMsPerTurn.total} ms of CPU per turn without export, ${figures.on.cpuMsPerTurn.total} with\n`,
    );
  }
  // Each service's CPU per turn, the mean over the stacks of one side.
  const mean = (mode: Mode) => {
    const side = stacks.filter((stack) => stack.export === mode);
    return Object.fromEntries(
      [...SERVICE_NAMES, 'total' as const].map((name) => [
        name,
        round(side.reduce((sum, stack) => sum + stack.cpuMsPerTurn[name], 0) / side.length),
      ]),
    ) as Record<ServiceName | 'total', number>;
  };
  const off = mean('off');
  const on = mean('on');
  const overhead = (on.total - off.total) / off.total;
  const exported = stacks.find((stack) => stack.spans)?.spans;
  const result = {
    date: new Date().toISOString(),
    turns: settings.BENCH_TURNS,
    warmUp: settings.BENCH_WARM_UP,
    rounds: settings.BENCH_ROUNDS,
    database: settings.DATABASE_URL ? 'postgres' : 'embedded',
    protocol: 'http/json',
    // The machine's load (1-minute average) before and after: other work on shared cores shows.
    load: [round(loadBefore), round(loadavg()[0] ?? Number.NaN)],
    cpuMsPerTurn: { exportOff: off, exportOn: on },
    overhead: round(overhead, 4),
    target: TARGET,
    spans: exported,
    stacks,
  };
  await mkdir(RESULTS_DIR, { recursive: true });
  await writeFile(RESULTS, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(
    `tracing: ${settings.BENCH_TURNS} chat turns with one tool call each per stack, ${settings.BENCH_ROUNDS} rounds of a stack without export beside one exporting (OTLP/HTTP ${result.protocol} to a receiver in the bench), turns taken in turn, ${result.database} Postgres, load ${result.load.join(' -> ')}\n`,
  );
  process.stdout.write('CPU per turn (ms)      off      on\n');
  for (const name of [...SERVICE_NAMES, 'total'] as const) {
    process.stdout.write(
      `  ${name.padEnd(18)} ${String(off[name]).padStart(6)}  ${String(on[name]).padStart(6)}\n`,
    );
  }
  const turnTimes = (mode: Mode) =>
    stacks
      .filter((stack) => stack.export === mode)
      .map((stack) => `${stack.turnMs.p50}/${stack.turnMs.p95}`)
      .join(', ');
  process.stdout.write(`turn p50/p95 (ms): off ${turnTimes('off')}; on ${turnTimes('on')}\n`);
  process.stdout.write(
    `spans per turn ${exported?.perTurn}, exported ${exported?.exportBytesPerTurn} bytes per turn\n`,
  );
  process.stdout.write(
    `overhead ${round(overhead * 100, 1)} % of the services' CPU per turn (target under ${TARGET * 100} %): ${overhead < TARGET ? 'met' : 'NOT met'}\n`,
  );
  process.stdout.write(`written to ${RESULTS}\n`);
} finally {
  await receiver.close();
  page.closeAllConnections();
  await new Promise((done) => page.close(done));
}

import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import {
  type ChatMessage,
  MODEL_USAGE_STREAM,
  ModelChatChunk,
  type ModelChatRequest,
  modelChat,
} from '@jarvis/contracts';
import { createPool, type Pool } from '@jarvis/db';
import { startTelemetry } from '@jarvis/telemetry';
import { makeTempDir, NATS_URL, REDIS_URL, Stack, uniqueNamespace } from '@jarvis/testkit';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { RESULTS_DIR, ROOT_DIR } from '../paths';
import { mainThreadCpuSeconds, readCpuSeconds } from '../proc';
import { type BenchChild, type FakeCommand, type Report, startChild } from './ipc';
import { type Histogram, histogramOf, observedSince, quantile, scrape } from './prometheus';

// `make bench` (model-gateway): the gateway's own overhead on a chat call, against a target of
// a p95 under 5 ms with 50 concurrent requesters on a 2-core machine.
//
// Three processes, as in production: the requesters (this one), model-gateway (its own main.ts,
// started by the test kit's Stack, its usage rollup into Postgres included) and the model, here
// the test kit's fake OpenAI-compatible server (fake-llm-process.ts), which answers at once unless
// a scenario delays it. The fake gets a process of its own so that its work is not charged to the
// gateway's event loop, nor the gateway's to the requesters'. NATS and Redis are this machine's
// servers; Postgres is DATABASE_URL's, or else the embedded one, which the Stack runs in a fourth
// process, as `make dev` runs it. Everything shares the machine's two cores, as a deployment on
// it would.
//
// Every scenario sends the same chat request (shaped like the orchestrator's: a system message
// with profile, summary and memories, six messages of history, about 2 KB) two ways, in
// alternating blocks so drift in the machine's load touches both alike:
// - direct: the `openai` SDK straight to the fake, at the same concurrency: the baseline;
// - gateway: `bus.request` (or `bus.requestStreaming`) to model-gateway.chat, with a user id (so
//   budget admission and usage recording run, with the default limits) unless the scenario says
//   otherwise.
// The overhead is model-gateway's own figure, from its /metrics: each chat call's time in the
// gateway less its waits on the provider (model_gateway_call_overhead_seconds), and the times of
// budget admission, the cooldown check and usage recording (model_gateway_stage_seconds), read
// before and after a scenario's gateway blocks. Their percentiles are estimated from the
// histograms' buckets (each a quarter wider than the last), their means are exact. As a
// cross-check that includes what the gateway's figure leaves out (the NATS hops, the bus's
// validation on both sides), the overhead is also given as the gateway's percentile minus the
// direct one's.
// With 50 requesters and a model that answers at once, both ways are saturated (closed loop:
// each requester sends its next request when its last is answered), so latency is then mostly
// queueing. The scenarios whose model takes 50-150 ms or 250-750 ms keep 50 calls in flight at
// rates below saturation (a few hundred and about a hundred a second), as slow real models do.
// Their requesters start spread over one mean model time, as if they had been running: started
// all at once, each block would open with a burst of 50 simultaneous arrivals, a tenth of the
// samples of the slow scenario, whose queue would be the p95: the bench would measure its own
// burst, not the gateway.
//
// Each block of gateway requests ends once the rollup has counted every one of its calls in
// Postgres, so the block's CPU figures include that work, and the next block does not run beside
// it; the run fails if usage goes missing.
//
// BENCH_REQUESTS (2000) and BENCH_WARM_UP (200) set the requests per scenario and way;
// BENCH_SCENARIOS (ids, comma-separated) runs only some; BENCH_CPU_PROF=<dir> writes CPU
// profiles of the gateway process (and of the embedded Postgres) there when the run ends.

const RESULTS = resolve(RESULTS_DIR, 'model-gateway-bench');
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2_000);
const WARM_UP = Number(process.env.BENCH_WARM_UP ?? 200);
// Direct and gateway blocks alternate this many times per scenario.
const ROUNDS = 4;
// Requests of one scenario are spread over these users, so no user gets near the default rate
// limit (120 chat calls a minute) while every call still goes through admission.
const USERS = Array.from({ length: 500 }, () => randomUUID());
const MODEL = 'fake-bench';
const TARGET_P95_MS = 5;
// How long a block waits for the rollup to count its calls before the run fails.
const ROLLUP_WAIT_MS = 30_000;
// model-gateway's histograms the figures come from.
const OVERHEAD_METRIC = 'model_gateway_call_overhead_seconds';
const STAGE_METRIC = 'model_gateway_stage_seconds';
const PROVIDER_METRIC = 'gen_ai_client_operation_duration_seconds';
// model-gateway's settings that change what a call costs, passed on when the bench is given them;
// the others are the service's defaults.
const FORWARDED_SETTINGS = [
  'USER_DAILY_TOKEN_LIMIT',
  'USER_DAILY_COST_LIMIT_USD',
  'USER_REQUESTS_PER_MINUTE',
  'MODEL_REDACTION',
  'LOG_LEVEL',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
] as const;

type Mode = 'unary' | 'stream';
type Scenario = {
  id: string;
  mode: Mode;
  concurrency: number;
  hasUser: boolean;
  // How long the fake holds each answer, on average (±50 %): 0 saturates the gateway; more keeps
  // many calls in flight at a rate the gateway can serve, as slow real models do.
  providerDelayMs: number;
};

const SCENARIOS: Scenario[] = [
  { id: 'unary-1', mode: 'unary', concurrency: 1, hasUser: true, providerDelayMs: 0 },
  { id: 'unary-50', mode: 'unary', concurrency: 50, hasUser: true, providerDelayMs: 0 },
  { id: 'stream-1', mode: 'stream', concurrency: 1, hasUser: true, providerDelayMs: 0 },
  { id: 'stream-50', mode: 'stream', concurrency: 50, hasUser: true, providerDelayMs: 0 },
  { id: 'unary-50-paced', mode: 'unary', concurrency: 50, hasUser: true, providerDelayMs: 100 },
  { id: 'unary-50-slow', mode: 'unary', concurrency: 50, hasUser: true, providerDelayMs: 500 },
  { id: 'unary-1-no-user', mode: 'unary', concurrency: 1, hasUser: false, providerDelayMs: 0 },
  { id: 'unary-50-no-user', mode: 'unary', concurrency: 50, hasUser: false, providerDelayMs: 0 },
];

const PROMPT: ChatMessage[] = [
  {
    role: 'system',
    content: [
      'You are Jarvis, a personal assistant in one long, continuous conversation with your user. ' +
        'Use what they told you earlier in the conversation. Be concise and direct.\n' +
        'Current date and time (UTC): 2025-03-14T09:30:00.000Z.',
      'What you know about the user:\n' +
        '- Lives in Lyon and works as a structural engineer.\n' +
        '- Has two children, Léa (9) and Tom (6), who go to school near Croix-Rousse.\n' +
        '- Is training for a half marathon in May; runs on Tuesdays, Thursdays and Sundays.\n' +
        '- Prefers short answers, in English, with metric units.\n' +
        '- Is allergic to peanuts.',
      'Earlier in this conversation, in summary:\n' +
        '(2025-03-01 to 2025-03-10) Planned a spring trip to Porto; compared train and plane; ' +
        'decided on the train on April 18, back on the 22nd. Discussed a running plan.',
      'Memories that may be relevant:\n' +
        '- [2025-03-02, fact] The hotel in Porto is near Ribeira, booked for four nights.\n' +
        '- [2025-03-05, event] Tom has a dentist appointment on March 20 at 16:30.\n' +
        '- [2025-03-08, fact] The long run on Sundays is currently 16 km.\n' +
        '- [2025-03-09, preference] Likes vegetarian restaurants when travelling.',
    ].join('\n\n'),
  },
  { role: 'user', content: 'Can you remind me what I have planned for next week?' },
  {
    role: 'assistant',
    content:
      'Tom has the dentist on Thursday, March 20 at 16:30, and your usual runs on Tuesday, ' +
      'Thursday and Sunday (16 km long run). Nothing else is noted.',
  },
  { role: 'user', content: 'Thursday clashes then. Can I move the run to the morning?' },
  {
    role: 'assistant',
    content:
      'Yes: an easy 8 km at 7:00 leaves the afternoon free. Keep it easy, since Sunday is the ' +
      'long run.',
  },
  { role: 'user', content: 'Good. And for Porto, what should we book for dinner on the 18th?' },
  {
    role: 'assistant',
    content:
      'Near Ribeira, a vegetarian place with a children’s menu would suit the first evening; ' +
      'ask about peanuts when booking. Shall I list three options?',
  },
];
const QUESTION =
  'Yes please, and check they are open on a Friday evening. Also, how long is the train ride ' +
  'from Lyon to Porto, roughly?';

type Target = 'direct' | 'gateway';
type Sample = { totalMs: number; firstChunkMs: number | undefined };
// CPU time of the bench's three processes and of Postgres, and of the whole machine (all cores,
// Linux only): busy, and stolen by the hypervisor; and of the gateway's main thread, which runs
// its event loop.
type Cpu = {
  requester: number;
  gateway: number;
  gatewayMainThread: number;
  fake: number;
  database: number;
  machine: number;
  steal: number;
};
// wallMs: the requests' time; cpuWallMs: the time the CPU figures cover, which for the gateway
// way adds the wait for the rollup.
type Block = { samples: Sample[]; wallMs: number; cpuWallMs: number; cpuMs: Cpu };
type Summary = { p50: number; p95: number; p99: number; mean: number; max: number };

type Context = {
  bus: Bus;
  openai: OpenAI;
  gateway: { pid: number; metricsUrl: string };
  fake: BenchChild<typeof FakeCommand>;
  database: Database;
};

// The Postgres the gateway rolls usage up in: the bench reads the rollup's counts from it, and its
// CPU time from the embedded one's process, or else from every process named postgres.
type Database = {
  pool: Pool;
  embeddedPid: number | undefined;
  // Calls of the bench's model counted before this run, and chat calls made through the gateway
  // since: the rollup has caught up when it has counted both.
  countedBefore: number;
  callsMade: number;
};

let sequence = 0;

const PROMPT_WITH_QUESTION: ChatMessage[] = [...PROMPT, { role: 'user', content: QUESTION }];

function gatewayRequest(userId: string | undefined): ModelChatRequest {
  return { purpose: 'chat', ...(userId ? { userId } : {}), messages: PROMPT_WITH_QUESTION };
}

// The body the gateway's provider sends for the same request: the system message first, then
// the conversation (the gateway adds stream_options when it streams, and so does this).
const DIRECT_BODY = {
  model: MODEL,
  messages: PROMPT_WITH_QUESTION.map((message) =>
    message.role === 'system'
      ? { role: 'system' as const, content: message.content }
      : {
          role: message.role === 'user' ? ('user' as const) : ('assistant' as const),
          content: message.content,
        },
  ),
};

async function callDirect(openai: OpenAI, mode: Mode): Promise<Sample> {
  const started = performance.now();
  if (mode === 'unary') {
    await openai.chat.completions.create({ ...DIRECT_BODY, stream: false });
    return { totalMs: performance.now() - started, firstChunkMs: undefined };
  }
  const stream = await openai.chat.completions.create({
    ...DIRECT_BODY,
    stream: true,
    stream_options: { include_usage: true },
  });
  let firstChunkMs: number | undefined;
  for await (const chunk of stream) {
    if (firstChunkMs === undefined && chunk.choices[0]?.delta.content) {
      firstChunkMs = performance.now() - started;
    }
  }
  return { totalMs: performance.now() - started, firstChunkMs };
}

async function callGateway(bus: Bus, mode: Mode, userId: string | undefined): Promise<Sample> {
  const request = gatewayRequest(userId);
  const started = performance.now();
  if (mode === 'unary') {
    await bus.request(modelChat, request);
    return { totalMs: performance.now() - started, firstChunkMs: undefined };
  }
  let firstChunkMs: number | undefined;
  await bus.requestStreaming(modelChat, request, ModelChatChunk, (chunk) => {
    if (firstChunkMs === undefined && chunk.type === 'delta') {
      firstChunkMs = performance.now() - started;
    }
  });
  return { totalMs: performance.now() - started, firstChunkMs };
}

async function fakeCpuMicros(fake: BenchChild<typeof FakeCommand>): Promise<number> {
  const report: Report = await fake.ask({ type: 'cpu' });
  if (report.type !== 'cpu') throw new Error(`asked for CPU time, got ${report.type}`);
  return report.micros;
}

// Busy and stolen time of all cores in µs, from /proc/stat (10 ms ticks); NaN without it.
async function machineMicros(): Promise<{ busy: number; steal: number }> {
  const stat = await readFile('/proc/stat', 'utf8').catch(() => '');
  if (!stat) return { busy: Number.NaN, steal: Number.NaN };
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = (
    stat.split('\n')[0] ?? ''
  )
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return { busy: (user + nice + system + irq + softirq) * 10_000, steal: steal * 10_000 };
}

async function countedCalls(pool: Pool): Promise<number> {
  const { rows } = await pool.query<{ requests: string }>(
    'SELECT coalesce(sum(requests), 0) AS requests FROM model_gateway.usage_daily WHERE model = $1',
    [MODEL],
  );
  return Number(rows[0]?.requests ?? 0);
}

// Until the rollup has counted every chat call made through the gateway so far.
async function waitForRollup(database: Database): Promise<void> {
  const deadline = Date.now() + ROLLUP_WAIT_MS;
  for (;;) {
    const behind =
      database.callsMade - ((await countedCalls(database.pool)) - database.countedBefore);
    if (behind === 0) return;
    if (behind < 0) throw new Error(`the rollup counted ${-behind} calls more than were made`);
    if (Date.now() > deadline) {
      throw new Error(
        `the usage rollup is still ${behind} calls behind after ${ROLLUP_WAIT_MS} ms`,
      );
    }
    await sleep(10);
  }
}

// The gateway's and the embedded Postgres' processes from /proc, or every process named
// postgres when the database is DATABASE_URL's (ended backends included); NaN without /proc.
async function cpuNow(context: Context): Promise<Cpu> {
  const { gateway, database } = context;
  const pids = { gateway: gateway.pid, database: database.embeddedPid };
  const seconds = await readCpuSeconds(pids, database.embeddedPid ? [] : ['postgres']);
  const micros = (value: number | undefined) => (value ?? Number.NaN) * 1_000_000;
  const { user, system } = process.cpuUsage();
  const machine = await machineMicros();
  return {
    requester: user + system,
    gateway: micros(seconds.gateway),
    gatewayMainThread: micros(await mainThreadCpuSeconds(gateway.pid)),
    fake: await fakeCpuMicros(context.fake),
    database: micros(database.embeddedPid ? seconds.database : seconds.postgres),
    machine: machine.busy,
    steal: machine.steal,
  };
}

// `count` requests one way, `concurrency` at a time (each requester sends its next request as
// soon as its last one is answered).
async function runBlock(
  context: Context,
  scenario: Scenario,
  target: Target,
  count: number,
): Promise<Block> {
  const samples: Sample[] = [];
  const before = await cpuNow(context);
  let next = 0;
  const started = performance.now();
  const stagger = scenario.providerDelayMs / scenario.concurrency;
  const requester = async (index: number) => {
    if (stagger > 0) await sleep(index * stagger);
    while (next < count) {
      next += 1;
      sequence += 1;
      const userId = scenario.hasUser ? USERS[sequence % USERS.length] : undefined;
      if (target === 'direct') {
        samples.push(await callDirect(context.openai, scenario.mode));
      } else {
        samples.push(await callGateway(context.bus, scenario.mode, userId));
        context.database.callsMade += 1;
      }
    }
  };
  await Promise.all(
    Array.from({ length: Math.min(scenario.concurrency, count) }, (_, index) => requester(index)),
  );
  const wallMs = performance.now() - started;
  if (target === 'gateway') await waitForRollup(context.database);
  const cpuWallMs = performance.now() - started;
  const after = await cpuNow(context);
  const cpuMs = {
    requester: (after.requester - before.requester) / 1_000,
    gateway: (after.gateway - before.gateway) / 1_000,
    gatewayMainThread: (after.gatewayMainThread - before.gatewayMainThread) / 1_000,
    fake: (after.fake - before.fake) / 1_000,
    database: (after.database - before.database) / 1_000,
    machine: (after.machine - before.machine) / 1_000,
    steal: (after.steal - before.steal) / 1_000,
  };
  return { samples, wallMs, cpuWallMs, cpuMs };
}

function round(value: number, digits = 2): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

function percentile(sorted: number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.max(Math.ceil((p / 100) * sorted.length) - 1, 0));
  return sorted[index] ?? Number.NaN;
}

function summarize(values: number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, value) => sum + value, 0) / sorted.length;
  return {
    p50: round(percentile(sorted, 50)),
    p95: round(percentile(sorted, 95)),
    p99: round(percentile(sorted, 99)),
    mean: round(mean),
    max: round(percentile(sorted, 100)),
  };
}

// What a histogram of seconds observed, in ms: its mean is exact, its percentiles are estimated
// within its buckets.
type HistogramSummary = { p50: number; p95: number; p99: number; mean: number };

function summarizeHistogram(histogram: Histogram): HistogramSummary {
  const ms = (seconds: number) => round(seconds * 1_000, 3);
  return {
    p50: ms(quantile(histogram, 0.5)),
    p95: ms(quantile(histogram, 0.95)),
    p99: ms(quantile(histogram, 0.99)),
    mean: ms(histogram.sum / histogram.count),
  };
}

function difference(a: Summary, b: Summary) {
  return { p50: round(a.p50 - b.p50), p95: round(a.p95 - b.p95), p99: round(a.p99 - b.p99) };
}

function merge(blocks: Block[]) {
  const samples = blocks.flatMap((block) => block.samples);
  const wallMs = blocks.reduce((sum, block) => sum + block.wallMs, 0);
  const cpuWallMs = blocks.reduce((sum, block) => sum + block.cpuWallMs, 0);
  const total = (key: keyof Cpu) => blocks.reduce((sum, block) => sum + block.cpuMs[key], 0);
  const perRequest = (key: keyof Cpu) => round(total(key) / samples.length, 3);
  const ours = total('requester') + total('gateway') + total('fake') + total('database');
  return {
    samples,
    requestsPerSecond: Math.round((samples.length / wallMs) * 1_000),
    // Cores kept busy by everything else: NATS, Redis, and whatever else runs on the machine.
    otherCores: round((total('machine') - ours) / cpuWallMs),
    stealCores: round(total('steal') / cpuWallMs),
    gatewayMainThreadBusy: round(total('gatewayMainThread') / cpuWallMs),
    cpuMsPerRequest: {
      requester: perRequest('requester'),
      gateway: perRequest('gateway'),
      fake: perRequest('fake'),
      database: perRequest('database'),
    },
  };
}

function firstChunks(samples: Sample[]): number[] {
  return samples.map((sample) => {
    if (sample.firstChunkMs === undefined) throw new Error('a streamed answer had no text chunk');
    return sample.firstChunkMs;
  });
}

async function runScenarioWarmUp(context: Context, scenario: Scenario): Promise<void> {
  await context.fake.ask({ type: 'configure', delayMs: scenario.providerDelayMs });
  await runBlock(context, scenario, 'direct', WARM_UP);
  await runBlock(context, scenario, 'gateway', WARM_UP);
}

async function runScenario(context: Context, scenario: Scenario) {
  await runScenarioWarmUp(context, scenario);
  // Only the gateway blocks call the gateway, and each ends once its usage is recorded and rolled
  // up: what the histograms gain from here to the end is theirs.
  const before = await scrape(context.gateway.metricsUrl);
  const directBlocks: Block[] = [];
  const gatewayBlocks: Block[] = [];
  const perRound = Math.ceil(REQUESTS / ROUNDS);
  for (let index = 0; index < ROUNDS; index++) {
    directBlocks.push(await runBlock(context, scenario, 'direct', perRound));
    gatewayBlocks.push(await runBlock(context, scenario, 'gateway', perRound));
  }
  const after = await scrape(context.gateway.metricsUrl);
  const observed = (name: string, labels: Record<string, string> = {}) =>
    observedSince(histogramOf(after, name, labels), histogramOf(before, name, labels));
  const direct = merge(directBlocks);
  const gateway = merge(gatewayBlocks);
  const overheadObserved = observed(OVERHEAD_METRIC);
  if (overheadObserved.count !== gateway.samples.length) {
    throw new Error(
      `model-gateway timed ${overheadObserved.count} chat calls; the bench made ${gateway.samples.length}`,
    );
  }
  const overhead = summarizeHistogram(overheadObserved);
  const stage = (name: string) => summarizeHistogram(observed(STAGE_METRIC, { stage: name }));
  const admit = stage('budget_admission');
  const cooldownCheck = stage('cooldown_check');
  const record = stage('usage_recording');
  // Its buckets start at 10 ms: only the mean says something here.
  const provider = observed(PROVIDER_METRIC, { gen_ai_request_model: MODEL });
  const providerMeanMs = round((provider.sum / provider.count) * 1_000, 3);

  const isStream = scenario.mode === 'stream';
  // The figure compared with the direct way: the whole round trip, or the first text chunk.
  const directSummary = summarize(
    isStream ? firstChunks(direct.samples) : direct.samples.map((s) => s.totalMs),
  );
  const gatewaySummary = summarize(
    isStream ? firstChunks(gateway.samples) : gateway.samples.map((s) => s.totalMs),
  );
  const roundTrip = summarize(gateway.samples.map((s) => s.totalMs));
  return {
    id: scenario.id,
    mode: scenario.mode,
    concurrency: scenario.concurrency,
    hasUser: scenario.hasUser,
    providerDelayMs: scenario.providerDelayMs,
    requests: gateway.samples.length,
    metric: isStream ? 'time to first text chunk' : 'round trip',
    direct: {
      ms: directSummary,
      roundTripMs: summarize(direct.samples.map((s) => s.totalMs)),
      requestsPerSecond: direct.requestsPerSecond,
      cpuMsPerRequest: {
        requester: direct.cpuMsPerRequest.requester,
        fake: direct.cpuMsPerRequest.fake,
      },
      otherCores: direct.otherCores,
      stealCores: direct.stealCores,
    },
    gateway: {
      ms: gatewaySummary,
      roundTripMs: roundTrip,
      providerMeanMs,
      requestsPerSecond: gateway.requestsPerSecond,
      cpuMsPerRequest: gateway.cpuMsPerRequest,
      otherCores: gateway.otherCores,
      stealCores: gateway.stealCores,
      // Share of the time the gateway's main thread, its event loop's, was running.
      mainThreadBusy: gateway.gatewayMainThreadBusy,
      // The gateway's own network steps, each call. Admission and the cooldown check run side by
      // side before the provider call (the cooldown read mostly from its cache), so "rest" is the
      // mean overhead after admission; the usage recording runs after the reply. "Outside" is
      // the round trip's mean beyond the gateway's figure and the provider's: the NATS hops, the
      // bus's validation and encoding on both sides, and waits before the handler starts.
      stagesMs: {
        admit,
        cooldownCheck,
        record,
        restMean: round(overhead.mean - admit.mean, 3),
        outsideMean: round(roundTrip.mean - providerMeanMs - overhead.mean, 3),
      },
    },
    overheadMs: { inGateway: overhead, vsDirect: difference(gatewaySummary, directSummary) },
  };
}

type ScenarioResult = Awaited<ReturnType<typeof runScenario>>;

function describeScenario(result: ScenarioResult): string {
  const parts = [
    result.mode === 'stream' ? 'streaming, first chunk' : 'unary',
    `${result.concurrency} requester${result.concurrency === 1 ? '' : 's'}`,
  ];
  if (result.providerDelayMs > 0) {
    parts.push(`model takes ${result.providerDelayMs / 2}-${(result.providerDelayMs * 3) / 2} ms`);
  }
  if (!result.hasUser) parts.push('no user id');
  return parts.join(', ');
}

function triple(summary: Pick<Summary, 'p50' | 'p95' | 'p99'>): string {
  return `${summary.p50} / ${summary.p95} / ${summary.p99}`;
}

type Table = { columns: string[]; rows: string[][] };

function resultsTable(results: ScenarioResult[]): Table {
  return {
    columns: [
      'scenario',
      'gateway ms p50/p95/p99',
      'direct ms p50/p95/p99',
      'overhead in the gateway p50/p95/p99',
      'overhead vs direct p50/p95/p99',
      'req/s gateway / direct',
      'gateway CPU ms/req',
    ],
    rows: results.map((result) => [
      describeScenario(result),
      triple(result.gateway.ms),
      triple(result.direct.ms),
      triple(result.overheadMs.inGateway),
      triple(result.overheadMs.vsDirect),
      `${result.gateway.requestsPerSecond} / ${result.direct.requestsPerSecond}`,
      String(result.gateway.cpuMsPerRequest.gateway),
    ]),
  };
}

function stagesTable(results: ScenarioResult[]): Table {
  const both = (summary: HistogramSummary) => `${summary.mean} / ${summary.p95}`;
  return {
    columns: [
      'scenario',
      'overhead in the gateway mean / p95',
      'budget admission (Redis)',
      'cooldown check (Redis)',
      'rest of the mean',
      'usage recording, after the reply (Redis + JetStream ack)',
      'outside the gateway, mean (NATS, the bus)',
    ],
    rows: results.map((result) => [
      describeScenario(result),
      both(result.overheadMs.inGateway),
      both(result.gateway.stagesMs.admit),
      both(result.gateway.stagesMs.cooldownCheck),
      String(result.gateway.stagesMs.restMean),
      `${both(result.gateway.stagesMs.record)}${result.mode === 'stream' ? ' (after the last chunk)' : ''}`,
      String(result.gateway.stagesMs.outsideMean),
    ]),
  };
}

function cpuTable(results: ScenarioResult[]): Table {
  return {
    columns: [
      'scenario',
      'gateway process',
      'requester, through the gateway',
      'requester, direct',
      'fake, through the gateway',
      'fake, direct',
      'Postgres (usage rollup)',
      'provider time in the gateway, mean',
      'gateway main thread busy',
      'other cores busy, gateway / direct',
      'stolen cores, gateway / direct',
    ],
    rows: results.map((result) => [
      describeScenario(result),
      String(result.gateway.cpuMsPerRequest.gateway),
      String(result.gateway.cpuMsPerRequest.requester),
      String(result.direct.cpuMsPerRequest.requester),
      String(result.gateway.cpuMsPerRequest.fake),
      String(result.direct.cpuMsPerRequest.fake),
      String(result.gateway.cpuMsPerRequest.database),
      String(result.gateway.providerMeanMs),
      `${Math.round(result.gateway.mainThreadBusy * 100)} %`,
      `${result.gateway.otherCores} / ${result.direct.otherCores}`,
      `${result.gateway.stealCores} / ${result.direct.stealCores}`,
    ]),
  };
}

function printTable({ columns, rows }: Table): void {
  const all = [columns, ...rows];
  const widths = columns.map((_, column) =>
    Math.max(...all.map((row) => (row[column] ?? '').length)),
  );
  for (const row of all) {
    const cells = row.map((cell, column) => cell.padEnd(widths[column] ?? 0));
    process.stdout.write(`${cells.join('  ').trimEnd()}\n`);
  }
}

function markdownTable({ columns, rows }: Table): string {
  return [
    `| ${columns.join(' | ')} |`,
    `|${columns.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n');
}

function verdictOf(results: ScenarioResult[]): string[] {
  const at50 = results.filter(
    (result) => result.mode === 'unary' && result.concurrency === 50 && result.hasUser,
  );
  return at50.map((result) => {
    const p95 = result.overheadMs.inGateway.p95;
    return (
      `${describeScenario(result)}: overhead p95 ${p95} ms in the gateway ` +
      `(${result.overheadMs.vsDirect.p95} ms over the direct p95) — target < ${TARGET_P95_MS} ms ` +
      `${p95 < TARGET_P95_MS ? 'met' : 'missed'}`
    );
  });
}

function markdownOf(report: ReturnType<typeof buildReport>): string {
  const { machine } = report;
  const verdict = [
    ...report.verdict.map((line) => `- **${line}**`),
    ...report.warnings.map((line) => `- Warning: ${line}.`),
  ].join('\n');
  return `# model-gateway overhead

${report.date} · gateway at ${machine.gatewayCode} · ${machine.cpus} × ${machine.cpuModel} · ${machine.memoryGb} GB · Node ${machine.node} · NATS ${machine.nats} · Redis ${machine.redis} · load average ${machine.loadAverageAtStart} at the start, ${report.loadAverageAtEnd} at the end

${verdict}
- For comparison: LiteLLM publishes an overhead of 2 ms p50 / 8 ms p95 on 4 instances of 4 CPUs
  at ~1,170 req/s, measured inside the proxy (its own time around the provider call), as the
  gateway's figure here is; the figure against the direct calls also has the hops.

${markdownTable(resultsTable(report.scenarios))}

All times in ms; ${report.requests} measured requests per scenario and way, after ${report.warmUp}
warm-up requests. The gateway and direct columns of streaming rows are the time to the first text
chunk, of the others the whole round trip; the overhead in the gateway is always the whole call's.
Its percentiles are estimated within the buckets of model-gateway's histogram (each a quarter
wider than the one below it), so they are good to about a tenth.

## Method

Three processes, as in production: the requesters (the bench), model-gateway (its own
\`main.ts\`, its usage rollup included) and the model: the test kit's fake OpenAI-compatible
server, in a process of its own, answering at once (or after the row's delay).
NATS and Redis are this machine's servers; Postgres: ${machine.database}. All of it shares the
same ${machine.cpus} cores, and other work on the machine shows in the figures: see the load
average above.

- **direct**: the \`openai\` SDK straight to the fake, same request body, same concurrency: the
  provider's time without a gateway.
- **gateway**: \`bus.request\` / \`bus.requestStreaming\` to \`model-gateway.chat\`, with a user id
  unless the row says otherwise. The request is shaped like the orchestrator's: a system message
  with profile, summary and memories, six messages of history and the question, about 2 KB.
- **overhead in the gateway**: model-gateway's own \`model_gateway_call_overhead_seconds\`, read
  from its \`/metrics\` before and after the row's gateway blocks: each chat call's time in the
  gateway's handler less its waits on the provider (the \`openai\` SDK's call to the same fake,
  less the gateway's relaying of streamed pieces, which happens inside it).
- **overhead vs direct**: the gateway's percentile minus the direct way's percentile, a
  cross-check that needs no stopwatch inside the gateway and includes what its figure leaves
  out. With 50 requesters and a model that
  answers at once both ways are saturated (the direct one by the SDK's CPU use in the bench
  process), so both overhead figures are then mostly queueing, against different queues.
- Direct and gateway blocks alternate ${report.rounds} times per scenario, so drift in the
  machine's load touches both alike; every way and scenario is warmed up first. Each of the 50
  requesters sends its next request as soon as its last one is answered (a closed loop): with a
  model that answers at once, that saturates the gateway's event loop, and a request's latency is
  mostly its wait behind the other 49. The rows whose model takes 50-150 ms or 250-750 ms keep
  50 calls in flight at rates the gateway can serve (a few hundred and about a hundred calls a
  second), closer to 50 live conversations; real models take longer still. Their requesters start
  spread over one mean model time, so each block begins as it goes on rather than with 50
  requests arriving at once.

What the overhead in the gateway includes: budget admission (a Redis script: the daily token and
cost budgets and the per-minute rate window; skipped without a user id), the provider cooldown
check (Redis MGET), redaction of the prompt, the GenAI span and metrics, relaying streamed pieces,
and waits for the event loop in between. What only the figure against the direct calls includes:
on the requester, request and reply validation (zod), JSON, trace headers and the NATS round trip
(two hops through the NATS server); in the gateway, the bus's envelope and request validation
before the handler and the reply's validation after it. Usage recording
(a Redis script per call and a JetStream publish, sent together for the calls of one turn of the
event loop) runs after the reply, but on the same event loop, so its cost shows in the others'.
The usage rollup (a JetStream consumer in the gateway's process that counts each batch of usage
events in Postgres in one statement) runs off the request path, but on the same event loop: each
block of gateway requests ends when the rollup has counted all its calls, so its CPU is in the
block's figures. Not included: the provider call itself (the provider's time); the health and
metrics HTTP server.

Settings in effect: ${report.settings}.

## Where the gateway's time goes

Mean / p95 in ms of the gateway's own network steps, from model-gateway's
\`model_gateway_stage_seconds\`, each from its call to the moment the gateway's code resumes (so
waits for a busy event loop count). Admission and the cooldown check run side by side before the
provider call (the cooldowns mostly come from a cache refreshed once a period); "rest of the mean"
is the mean overhead in the gateway left after admission: redaction, spans and waits for the event
loop. The usage recording runs after the reply is sent, batched: calls recorded within 20 ms of
the first are sent together, so it includes that wait. "Outside the gateway" is the mean round
trip at the requester less the gateway's overhead and the provider's time (means): the NATS hops,
the bus's validation and encoding on both sides, and waits before the gateway's handler starts.

${markdownTable(stagesTable(report.scenarios))}

## CPU per request (ms) and provider time

${markdownTable(cpuTable(report.scenarios))}

"Gateway main thread busy" is the share of the gateway way's time in which the gateway's main
thread, which runs its event loop, used the CPU (from \`/proc\`): near 100 % the loop is
saturated, and requests queue. "Provider time" is the mean of model-gateway's
\`gen_ai_client_operation_duration_seconds\` over the row's calls; CPU times are from \`/proc\`
(the fake's from the process itself). "Postgres (usage rollup)" is the database's CPU per gateway request: the embedded one's
process, or every process named postgres on the machine. "Other cores busy" is the machine's busy
time outside the bench's processes and Postgres, in cores, over each way's blocks: NATS and Redis
(busier through the gateway, which calls both), plus anything else running on the machine; a high
figure on the direct way means the run shared the machine. "Stolen cores" is CPU time the
hypervisor gave to other guests.
`;
}

// Other work on the machine while the direct way ran can only have come from outside the bench
// (the direct way does not touch NATS or Redis): its figures, and the gateway's, are then
// pessimistic.
const SHARED_MACHINE_CORES = 0.25;

function warningsOf(results: ScenarioResult[]): string[] {
  const shared = results.filter((result) => result.direct.otherCores > SHARED_MACHINE_CORES);
  const stolen = results.filter(
    (result) => Math.max(result.direct.stealCores, result.gateway.stealCores) > 0.1,
  );
  return [
    ...(shared.length > 0
      ? [
          `the machine was shared during ${shared.map((result) => result.id).join(', ')} ` +
            `(other processes kept up to ${Math.max(...shared.map((result) => result.direct.otherCores))} cores busy): run again on a quiet machine`,
        ]
      : []),
    ...(stolen.length > 0
      ? [`the hypervisor took CPU time during ${stolen.map((result) => result.id).join(', ')}`]
      : []),
  ];
}

function buildReport(
  results: ScenarioResult[],
  machine: Record<string, string | number>,
  settings: string,
) {
  return {
    date: new Date().toISOString(),
    machine,
    loadAverageAtEnd: loadAverage(),
    requests: REQUESTS,
    warmUp: WARM_UP,
    rounds: ROUNDS,
    settings,
    verdict: verdictOf(results),
    warnings: warningsOf(results),
    scenarios: results,
  };
}

function loadAverage(): string {
  return loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
}

// Which gateway code the figures are of: the commit, and whether the service's source had local
// changes.
async function gatewayVersion(): Promise<string> {
  const git = (...args: string[]) =>
    promisify(execFile)('git', args, { cwd: ROOT_DIR }).then(({ stdout }) => stdout.trim());
  try {
    const commit = await git('rev-parse', '--short', 'HEAD');
    const changes = await git('status', '--porcelain', '--', 'services/model-gateway');
    return changes ? `${commit} with local changes` : commit;
  } catch {
    return 'unknown';
  }
}

async function redisVersion(redis: Redis): Promise<string> {
  const info = await redis.info('server');
  return /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
}

const selected = process.env.BENCH_SCENARIOS?.split(',').map((id) => id.trim());
const scenarios = SCENARIOS.filter((scenario) => !selected || selected.includes(scenario.id));
const profileDir = process.env.BENCH_CPU_PROF;
const loadAverageAtStart = loadAverage();
const namespace = uniqueNamespace('gateway-bench');
// The requesters trace like the services that call the gateway do.
const telemetry = startTelemetry({ serviceName: 'model-gateway-bench', otlpEndpoint: undefined });
const redis = new Redis(REDIS_URL);
const bus = await connectTestBus(namespace);
const fake = await startChild<typeof FakeCommand>(
  'fake model',
  new URL('./fake-llm-process.ts', import.meta.url),
  { env: process.env },
);
if (fake.ready.type !== 'ready') {
  throw new Error('the fake model process did not say where it listens');
}
const openaiBaseUrl = fake.ready.openaiBaseUrl;
const externalDatabaseUrl = process.env.DATABASE_URL;
const dataDir = externalDatabaseUrl ? undefined : await makeTempDir('gateway-bench-pg');
const forwarded = Object.fromEntries(
  FORWARDED_SETTINGS.flatMap((key) => {
    const value = process.env[key];
    return value === undefined ? [] : [[key, value]];
  }),
);
const settings = [
  ...FORWARDED_SETTINGS.filter((key) => key !== 'OTEL_EXPORTER_OTLP_ENDPOINT').map((key) =>
    key in forwarded ? `${key}=${forwarded[key]}` : `${key} at its default`,
  ),
  `traces ${'OTEL_EXPORTER_OTLP_ENDPOINT' in forwarded ? 'exported' : 'made but not exported'}`,
].join(', ');
const stack = new Stack({
  services: ['model-gateway'],
  ...(dataDir ? { dataDir: dataDir.path } : { databaseUrl: externalDatabaseUrl }),
  ...(profileDir ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] } : {}),
  env: {
    ...forwarded,
    NATS_URL,
    REDIS_URL,
    NATS_NAMESPACE: namespace,
    OPENAI_API_KEY: 'bench-key',
    OPENAI_BASE_URL: openaiBaseUrl,
    MODEL_ROUTE_CHAT: `openai/${MODEL}`,
  },
});
await stack.start();
const gatewayPid = stack.process('model-gateway')?.child.pid;
if (gatewayPid === undefined) throw new Error('model-gateway has no process id');
const openai = new OpenAI({ apiKey: 'bench-key', baseURL: openaiBaseUrl, maxRetries: 0 });
// The gateway has migrated the database by now.
const pool = createPool({ url: stack.databaseUrl, applicationName: 'model-gateway-bench', max: 1 });

try {
  const embeddedPid = stack.process('postgres')?.child.pid;
  const database: Database = {
    pool,
    embeddedPid,
    countedBefore: await countedCalls(pool),
    callsMade: 0,
  };
  const context: Context = {
    bus,
    openai,
    gateway: { pid: gatewayPid, metricsUrl: `${stack.serviceUrl('model-gateway')}/metrics` },
    fake,
    database,
  };
  const machine = {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memoryGb: Math.round(totalmem() / 1024 ** 3),
    node: process.version,
    nats: bus.nc.info?.version ?? 'unknown',
    redis: await redisVersion(redis),
    gatewayCode: await gatewayVersion(),
    database: embeddedPid
      ? 'the embedded one (PGlite with pgvector) in a process of its own'
      : `PostgreSQL ${(await pool.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version ?? 'unknown'} at DATABASE_URL`,
    loadAverageAtStart,
  };
  // JIT and connection pools warm in every process before the first scenario, so that it is not
  // measured against colder code than the ones after it.
  for (const scenario of SCENARIOS.slice(0, 4)) await runScenarioWarmUp(context, scenario);
  const results: ScenarioResult[] = [];
  for (const scenario of scenarios) {
    const result = await runScenario(context, scenario);
    results.push(result);
    process.stdout.write(
      `${describeScenario(result)}: overhead in the gateway p50 ${result.overheadMs.inGateway.p50} ms, p95 ${result.overheadMs.inGateway.p95} ms\n`,
    );
  }
  const report = buildReport(results, machine, settings);
  process.stdout.write(
    `\nmodel-gateway overhead, ms (${REQUESTS} requests per scenario and way; ${machine.cpus} CPUs, ` +
      `Node ${machine.node}, load average ${loadAverageAtStart} -> ${report.loadAverageAtEnd}):\n`,
  );
  printTable(resultsTable(results));
  process.stdout.write('\nwhere the gateway spends it, mean / p95 ms:\n');
  printTable(stagesTable(results));
  process.stdout.write('\nCPU ms per request:\n');
  printTable(cpuTable(results));
  process.stdout.write(`\n${report.verdict.join('\n')}\n`);
  for (const warning of report.warnings) process.stdout.write(`warning: ${warning}\n`);
  await mkdir(RESULTS_DIR, { recursive: true });
  await writeFile(`${RESULTS}.json`, `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(`${RESULTS}.md`, markdownOf(report));
  process.stdout.write(`written to ${RESULTS}.md and .json\n`);
} finally {
  await stack.stopService('model-gateway');
  await fake.stop();
  // The rows of the bench's model; the markers of its events are pruned with the others. A
  // failure here must not hide the run's own.
  await pool
    .query('DELETE FROM model_gateway.usage_daily WHERE model = $1', [MODEL])
    .catch(() => undefined);
  await pool.end();
  await stack.stop();
  await dataDir?.remove();
  const jsm = await bus.nc.jetstreamManager();
  await jsm.streams.delete(bus.streamName(MODEL_USAGE_STREAM)).catch(() => false);
  for await (const keys of redis.scanStream({ match: `${namespace}:*`, count: 500 })) {
    if (keys.length > 0) await redis.del(...keys);
  }
  redis.disconnect();
  await bus.close();
  await telemetry.stop();
}

import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import {
  type ManagedProcess,
  NATS_URL,
  REDIS_URL,
  SERVICE_NAMES,
  type StackFixture,
  startProcess,
  startStackFixture,
  uniqueNamespace,
  waitUntilReady,
} from '@jarvis/testkit';
import autocannon from 'autocannon';
import { RESULTS_DIR, ROOT_DIR } from './paths';
import { machineCpuMs, readCpuSeconds } from './proc';

// `make bench` (gateway): the public API under load from autocannon, in this process, against the
// whole stack as six service processes with the embedded Postgres and the fake LLM (which answers
// at once, so a chat turn's figure is the stack's own cost).
// - An authenticated cheap route, GET /v1/keys (the key's lookup and one small read of the
//   user's keys, in the gateway alone), and POST /v1/chat, with rate limits off: requests per
//   second and latency at a few connection counts.
// - The rate limiter under load: two more gateway processes, replicas of the stack's gateway
//   (same database, NATS namespace and Redis) with RATE_LIMIT_PER_MINUTE=LIMIT, take a burst far
//   over the limit from many connections with the keys of two users (limits are per user), each
//   key's requests spread over both replicas. Each key must be admitted exactly LIMIT times (2xx
//   against 429 over the whole burst), whichever replica answered, without either user eating
//   into the other's budget.
//   The limiter's cost per request is the cheap route on a limited replica, under the limit,
//   against the same on the unlimited gateway, in alternating rounds.
// Every figure comes with each process's CPU per request and the CPU the rest of the machine used
// meanwhile: everything shares this machine's cores, the load generator included.

const CHEAP_ROUTE = '/v1/keys';
const CHEAP_CONNECTIONS = [1, 10, 50];
const CHAT_CONNECTIONS = [1, 10, 40];
const CHEAP_SECONDS = 6;
const CHAT_SECONDS = 8;
// Unmeasured, before each run: JIT, connection pools and sockets warm.
const WARM_UP_SECONDS = 2;
const LIMIT = 1_000;
// Per key, over both replicas: 2.5 times the limit.
const BURST_PER_KEY = 2_500;
// Per key and replica: 100 connections in all.
const BURST_CONNECTIONS = 25;
const LIMITER_COST_CONNECTIONS = 10;
const LIMITER_COST_ROUNDS = 3;
const LIMITER_COST_SECONDS = 3;
// The limiter's cost is measured under the limit: requests go round the keys of this many users,
// whose budgets (20,000 a minute) are more than the limited replica can answer in the run and its
// warm-up.
const ROTATION_KEYS = 20;
// A share of a core the rest of the machine may take before the figures get a warning.
const QUIET_CORES = 0.25;

type Load = {
  url: string;
  method: 'GET' | 'POST';
  connections: number;
  // Either a duration or a number of requests.
  seconds?: number;
  amount?: number;
  keys: string[];
  // request: requests go round the keys; connection: each connection keeps one of them.
  keyPer: 'request' | 'connection';
  body?: string;
};

type Responses = {
  latenciesMs: number[];
  statuses: Record<string, number>;
  // Connection errors and timeouts.
  errors: number;
  seconds: number;
};

type Figures = {
  connections: number;
  requests: number;
  seconds: number;
  perSecond: number;
  latencyMs: { p50: number; p95: number; p99: number; max: number };
  statuses: Record<string, number>;
  errors: number;
  // CPU ms per request of each process that spent at least 0.01 ms.
  cpuMsPerRequest: Record<string, number>;
  // Cores the machine was busy outside the stack and this bench, on average over the run.
  otherCoresBusy: number;
  loadAverageAtEnd: number;
};

async function fire(load: Load): Promise<Responses> {
  const responses: Responses = {
    latenciesMs: [],
    statuses: {},
    errors: 0,
    seconds: 0,
  };
  let sent = 0;
  let connected = 0;
  const authorization = (index: number) => `Bearer ${load.keys[index % load.keys.length]}`;
  const started = performance.now();
  // The callback form: only it returns the instance, whose events carry each response.
  const result = await new Promise<autocannon.Result>((done, fail) => {
    const instance = autocannon(
      {
        url: load.url,
        method: load.method,
        connections: load.connections,
        ...(load.amount === undefined ? { duration: load.seconds ?? 1 } : { amount: load.amount }),
        timeout: 30,
        headers: { 'content-type': 'application/json' },
        ...(load.body === undefined ? {} : { body: load.body }),
        ...(load.keyPer === 'connection'
          ? {
              setupClient: (client: autocannon.Client) => {
                client.setHeaders({
                  'content-type': 'application/json',
                  authorization: authorization(connected++),
                });
              },
            }
          : {
              requests: [
                {
                  setupRequest: (request: autocannon.Request) => ({
                    ...request,
                    headers: { ...request.headers, authorization: authorization(sent++) },
                  }),
                },
              ],
            }),
      },
      (error, finished) => (error ? fail(error) : done(finished)),
    );
    instance.on('response', (_client, status, _bytes, responseTimeMs) => {
      responses.latenciesMs.push(responseTimeMs);
      responses.statuses[status] = (responses.statuses[status] ?? 0) + 1;
    });
  });
  responses.seconds = (performance.now() - started) / 1_000;
  // autocannon counts timeouts among the errors.
  responses.errors = result.errors;
  return responses;
}

function percentile(sorted: number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return round(sorted[Math.max(index, 0)] ?? Number.NaN);
}

function round(value: number, digits = 2): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

// CPU time (user and system) of the processes whose figures are reported, and of the machine.
type CpuSample = { processesMs: Record<string, number>; machineMs: number };

// The stack's processes by name; the machine's NATS and Redis are found by readCpuSeconds.
type Observed = Record<string, number | undefined>;

async function sampleCpu(observed: Observed): Promise<CpuSample> {
  const seconds = await readCpuSeconds(observed, ['nats-server', 'redis-server']);
  return {
    processesMs: Object.fromEntries(
      Object.entries(seconds).map(([name, used]) => [name, used * 1_000]),
    ),
    machineMs: await machineCpuMs(),
  };
}

// What one or more runs of a load got, and the CPU each process and the machine spent on them.
type Spent = { responses: Responses; cpuMs: Record<string, number>; machineMs: number };

async function fireObserved(load: Load, observed: Observed): Promise<Spent> {
  const before = await sampleCpu(observed);
  const responses = await fire(load);
  const after = await sampleCpu(observed);
  const cpuMs: Record<string, number> = {};
  for (const [name, ms] of Object.entries(after.processesMs)) {
    const spent = ms - (before.processesMs[name] ?? Number.NaN);
    if (Number.isFinite(spent)) cpuMs[name] = spent;
  }
  return { responses, cpuMs, machineMs: after.machineMs - before.machineMs };
}

function combine(runs: Spent[]): Spent {
  const combined: Spent = {
    responses: { latenciesMs: [], statuses: {}, errors: 0, seconds: 0 },
    cpuMs: {},
    machineMs: 0,
  };
  for (const run of runs) {
    const { responses } = combined;
    responses.latenciesMs.push(...run.responses.latenciesMs);
    for (const [status, times] of Object.entries(run.responses.statuses)) {
      responses.statuses[status] = (responses.statuses[status] ?? 0) + times;
    }
    responses.errors += run.responses.errors;
    responses.seconds += run.responses.seconds;
    for (const [name, ms] of Object.entries(run.cpuMs)) {
      combined.cpuMs[name] = (combined.cpuMs[name] ?? 0) + ms;
    }
    combined.machineMs += run.machineMs;
  }
  return combined;
}

async function measure(load: Load, observed: Observed): Promise<Figures> {
  await fire({ ...load, seconds: WARM_UP_SECONDS });
  return summarise(load.connections, await fireObserved(load, observed));
}

function summarise(connections: number, spent: Spent): Figures {
  const { responses } = spent;
  const requests = responses.latenciesMs.length;
  const sorted = [...responses.latenciesMs].sort((a, b) => a - b);
  const cpuMsPerRequest: Record<string, number> = {};
  let oursMs = 0;
  for (const [name, ms] of Object.entries(spent.cpuMs)) {
    oursMs += ms;
    if (ms / requests >= 0.01) cpuMsPerRequest[name] = round(ms / requests, 3);
  }
  return {
    connections,
    requests,
    seconds: round(responses.seconds),
    perSecond: Math.round(requests / responses.seconds),
    latencyMs: {
      p50: percentile(sorted, 50),
      p95: percentile(sorted, 95),
      p99: percentile(sorted, 99),
      max: percentile(sorted, 100),
    },
    statuses: responses.statuses,
    errors: responses.errors,
    cpuMsPerRequest,
    otherCoresBusy: round(Math.max(spent.machineMs - oursMs, 0) / (responses.seconds * 1_000)),
    loadAverageAtEnd: round(loadavg()[0] ?? Number.NaN, 1),
  };
}

// The same load on the unlimited gateway and on a limited replica, in alternating rounds so
// that a change in the machine's other load falls on both alike.
async function measureLimiterCost(
  off: Load,
  on: Load,
  observed: Observed,
): Promise<{ off: Figures; on: Figures }> {
  await fire({ ...off, seconds: WARM_UP_SECONDS });
  await fire({ ...on, seconds: WARM_UP_SECONDS });
  const offRuns: Spent[] = [];
  const onRuns: Spent[] = [];
  for (let round = 0; round < LIMITER_COST_ROUNDS; round++) {
    offRuns.push(await fireObserved(off, observed));
    onRuns.push(await fireObserved(on, observed));
  }
  return {
    off: summarise(off.connections, combine(offRuns)),
    on: summarise(on.connections, combine(onRuns)),
  };
}

function count(statuses: Record<string, number>, isCounted: (status: number) => boolean): number {
  return Object.entries(statuses)
    .filter(([status]) => isCounted(Number(status)))
    .reduce((sum, [, times]) => sum + times, 0);
}

// A replica of the stack's gateway: same code, database, NATS namespace and Redis; its own port
// and rate limits.
async function startReplica(
  name: string,
  env: Record<string, string>,
): Promise<{ process: ManagedProcess; url: string }> {
  const managed = startProcess({
    name,
    command: process.execPath,
    args: ['--import', 'tsx', 'services/gateway/src/main.ts'],
    cwd: ROOT_DIR,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env, GATEWAY_PORT: '0' },
  });
  const url = `http://127.0.0.1:${await waitUntilReady(managed)}`;
  return { process: managed, url };
}

type KeyVerdict = {
  key: string;
  requests: number;
  admitted: number;
  refused: number;
  other: number;
  // Admitted per replica: both took their share.
  admittedByReplica: number[];
};

type Accuracy = {
  limitPerMinute: number;
  replicas: number;
  connections: number;
  seconds: number;
  perSecond: number;
  keys: KeyVerdict[];
  // A further request of the first key once the burst is over.
  afterBurst: { status: number; retryAfterS: number; remaining: string | null };
  isExact: boolean;
};

// Both keys at once, each over both replicas: four autocannon runs side by side.
async function burst(replicaUrls: string[], keys: Record<string, string>): Promise<Accuracy> {
  const runs = Object.entries(keys).flatMap(([label, key]) =>
    replicaUrls.map((url) => ({ label, key, url })),
  );
  const started = performance.now();
  const results = await Promise.all(
    runs.map((run) =>
      fire({
        url: `${run.url}${CHEAP_ROUTE}`,
        method: 'GET',
        connections: BURST_CONNECTIONS,
        amount: BURST_PER_KEY / replicaUrls.length,
        keys: [run.key],
        keyPer: 'request',
      }),
    ),
  );
  const seconds = (performance.now() - started) / 1_000;
  const verdicts = Object.keys(keys).map((label): KeyVerdict => {
    const own = runs.flatMap((run, index) => (run.label === label ? [results[index]] : []));
    const statuses = own.map((responses) => responses?.statuses ?? {});
    const requests = own.reduce((sum, responses) => sum + (responses?.latenciesMs.length ?? 0), 0);
    const admitted = statuses.reduce((sum, s) => sum + count(s, (status) => status < 300), 0);
    const refused = statuses.reduce((sum, s) => sum + count(s, (status) => status === 429), 0);
    const errors = own.reduce((sum, responses) => sum + (responses?.errors ?? 0), 0);
    return {
      key: label,
      requests,
      admitted,
      refused,
      other: requests - admitted - refused + errors,
      admittedByReplica: statuses.map((s) => count(s, (status) => status < 300)),
    };
  });
  const [firstUrl] = replicaUrls;
  const [firstKey] = Object.values(keys);
  const after = await fetch(`${firstUrl}${CHEAP_ROUTE}`, {
    headers: { authorization: `Bearer ${firstKey}` },
  });
  await after.body?.cancel();
  const total = verdicts.reduce((sum, verdict) => sum + verdict.requests, 0);
  return {
    limitPerMinute: LIMIT,
    replicas: replicaUrls.length,
    connections: runs.length * BURST_CONNECTIONS,
    seconds: round(seconds),
    perSecond: Math.round(total / seconds),
    keys: verdicts,
    afterBurst: {
      status: after.status,
      retryAfterS: Number(after.headers.get('retry-after')),
      remaining: after.headers.get('ratelimit-remaining'),
    },
    // Within one window: a burst longer than a minute may rightly admit more.
    isExact:
      seconds < 60 &&
      verdicts.every((verdict) => verdict.admitted === LIMIT && verdict.other === 0) &&
      after.status === 429,
  };
}

async function gatewayVersion(): Promise<string> {
  const git = async (...args: string[]) =>
    (await promisify(execFile)('git', args, { cwd: ROOT_DIR })).stdout.trim();
  try {
    const commit = await git('rev-parse', '--short', 'HEAD');
    const changes = await git('status', '--porcelain', '--', 'services/gateway');
    return changes ? `${commit} with local changes` : commit;
  } catch {
    return 'unknown';
  }
}

function describe(name: string, figures: Figures): string {
  const { latencyMs: ms } = figures;
  const cpu = cpuShares(figures);
  const refused = figures.requests - count(figures.statuses, (status) => status < 300);
  return [
    `  ${name}, ${figures.connections} conn: ${figures.perSecond} req/s,`,
    `p50/p95/p99 ${ms.p50}/${ms.p95}/${ms.p99} ms (${figures.requests} requests,`,
    `${refused + figures.errors} not 2xx); CPU ms/request: ${cpu};`,
    `other cores busy ${figures.otherCoresBusy}, load ${figures.loadAverageAtEnd}\n`,
  ].join(' ');
}

type Report = {
  date: string;
  machine: { cpus: number; cpuModel: string; node: string; gatewayCode: string };
  loadAverage: { atStart: number[]; atEnd: number[] };
  cheapRoute: { route: string; runs: Figures[] };
  chat: { route: string; runs: Figures[] };
  limiterCost: { route: string; off: Figures; on: Figures };
  accuracy: Accuracy;
  warnings: string[];
};

// gatewayProcess: the process that answered (the stack's gateway or a replica).
function row(name: string, figures: Figures, gatewayProcess = 'gateway'): string {
  const { latencyMs: ms, cpuMsPerRequest: cpu } = figures;
  const total = round(
    Object.values(cpu).reduce((sum, perRequest) => sum + perRequest, 0),
    3,
  );
  return `| ${name} | ${figures.connections} | ${figures.perSecond} | ${ms.p50} / ${ms.p95} / ${ms.p99} | ${cpu[gatewayProcess] ?? '-'} / ${cpu.postgres ?? '-'} / ${total} | ${figures.otherCoresBusy} |`;
}

// Where a request's CPU went, the costliest process first.
function cpuShares(figures: Figures): string {
  return Object.entries(figures.cpuMsPerRequest)
    .sort(([, a], [, b]) => b - a)
    .map(([process, perRequest]) => `${process} ${perRequest}`)
    .join(', ');
}

function renderMarkdown(report: Report): string {
  const { accuracy } = report;
  const load = (values: number[]) => values.map((value) => value.toFixed(2)).join(' ');
  return [
    '# gateway under load',
    '',
    `${report.date} · gateway at ${report.machine.gatewayCode} · ${report.machine.cpus} × ${report.machine.cpuModel} · Node ${report.machine.node} · load average ${load(report.loadAverage.atStart)} at the start, ${load(report.loadAverage.atEnd)} at the end`,
    '',
    ...report.warnings.map((warning) => `- Warning: ${warning}`),
    '',
    '| run | connections | req/s | ms p50 / p95 / p99 | CPU ms/req: gateway / Postgres / all | other cores busy |',
    '|---|---|---|---|---|---|',
    ...report.cheapRoute.runs.map((figures) => row(`GET ${CHEAP_ROUTE}`, figures)),
    ...report.chat.runs.map((figures) => row('POST /v1/chat, a user per connection', figures)),
    row(`GET ${CHEAP_ROUTE}, ${ROTATION_KEYS} keys, limits off`, report.limiterCost.off),
    row(`GET ${CHEAP_ROUTE}, ${ROTATION_KEYS} keys, limited`, report.limiterCost.on, 'replica 1'),
    '',
    ...report.chat.runs.map(
      (figures) =>
        `CPU ms per chat turn at ${figures.connections} connection(s): ${cpuShares(figures)}.`,
    ),
    `CPU ms per request on the limited replica: ${cpuShares(report.limiterCost.on)}.`,
    '',
    `Rate limiter: ${accuracy.limitPerMinute} requests per user per minute on ${accuracy.replicas} replicas; a burst of ${accuracy.connections} connections, ${accuracy.perSecond} req/s for ${accuracy.seconds} s:`,
    '',
    '| key | requests | admitted (limit) | per replica | 429 | other |',
    '|---|---|---|---|---|---|',
    ...accuracy.keys.map(
      (verdict) =>
        `| ${verdict.key} | ${verdict.requests} | ${verdict.admitted} (${accuracy.limitPerMinute}) | ${verdict.admittedByReplica.join(' + ')} | ${verdict.refused} | ${verdict.other} |`,
    ),
    '',
    `The next request of key A: ${accuracy.afterBurst.status}, Retry-After ${accuracy.afterBurst.retryAfterS} s. ${accuracy.isExact ? 'Exact: each key admitted its limit, no more, no less.' : 'NOT exact.'}`,
    '',
    'Everything runs on this machine: the load generator (autocannon) and the fake LLM in the bench',
    "process, six services and the embedded Postgres as processes of their own, the machine's NATS",
    'and Redis servers (their CPU includes whatever else used them meanwhile). "Other cores busy" is',
    "the machine's busy time outside all those processes during the run. The limited replica's rows",
    'are three alternating rounds against the unlimited gateway, with requests spread over',
    `${ROTATION_KEYS} keys so that none reaches its limit.`,
    '',
  ].join('\n');
}

const loadAverageAtStart = loadavg();
const namespace = uniqueNamespace('bench-gateway');
const fixture: StackFixture = await startStackFixture({
  NATS_NAMESPACE: namespace,
  RATE_LIMIT_PER_MINUTE: '0',
  CHAT_RATE_LIMIT_PER_MINUTE: '0',
  USER_REQUESTS_PER_MINUTE: '0',
  USER_DAILY_COST_LIMIT_USD: '0',
});
const replicas: ManagedProcess[] = [];
try {
  const gatewayUrl = fixture.stack.gatewayUrl;
  const { apiKey: keyA } = await fixture.createUser('bench');
  const { apiKey: keyB } = await fixture.createUser('bench other');
  const rotation: string[] = [];
  for (let user = 0; user < ROTATION_KEYS; user++) {
    rotation.push((await fixture.createUser(`bench rotation ${user}`)).apiKey);
  }

  const replicaEnv = {
    NATS_URL,
    REDIS_URL,
    NATS_NAMESPACE: namespace,
    DATABASE_URL: fixture.stack.databaseUrl,
    JARVIS_ADMIN_KEY: fixture.adminKey,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: String(LIMIT),
    CHAT_RATE_LIMIT_PER_MINUTE: '0',
  };
  const started = await Promise.all(
    ['replica 1', 'replica 2'].map((name) => startReplica(name, replicaEnv)),
  );
  replicas.push(...started.map((replica) => replica.process));
  const replicaUrls = started.map((replica) => replica.url);

  const observed: Observed = Object.fromEntries([
    ...[...SERVICE_NAMES, 'postgres' as const].map(
      (name) => [name, fixture.stack.process(name)?.child.pid] as const,
    ),
    ...replicas.map((replica) => [replica.name, replica.child.pid] as const),
  ]);

  process.stdout.write(`gateway under load (${cpus().length} cores; figures as they come):\n`);
  const cheapRuns: Figures[] = [];
  for (const connections of CHEAP_CONNECTIONS) {
    const figures = await measure(
      {
        url: `${gatewayUrl}${CHEAP_ROUTE}`,
        method: 'GET',
        connections,
        seconds: CHEAP_SECONDS,
        keys: [keyA],
        keyPer: 'request',
      },
      observed,
    );
    cheapRuns.push(figures);
    process.stdout.write(describe(`GET ${CHEAP_ROUTE}`, figures));
  }

  const costLoad = {
    method: 'GET' as const,
    connections: LIMITER_COST_CONNECTIONS,
    seconds: LIMITER_COST_SECONDS,
    keys: rotation,
    keyPer: 'request' as const,
  };
  const { off, on } = await measureLimiterCost(
    { ...costLoad, url: `${gatewayUrl}${CHEAP_ROUTE}` },
    { ...costLoad, url: `${replicaUrls[0]}${CHEAP_ROUTE}` },
    observed,
  );
  process.stdout.write(describe(`GET ${CHEAP_ROUTE}, ${ROTATION_KEYS} keys, limits off`, off));
  process.stdout.write(describe(`GET ${CHEAP_ROUTE}, ${ROTATION_KEYS} keys, limited`, on));

  const accuracy = await burst(replicaUrls, { A: keyA, B: keyB });
  process.stdout.write(
    `  rate limiter, ${LIMIT}/min per user, burst of ${accuracy.connections} connections over ` +
      `${accuracy.replicas} replicas (${accuracy.perSecond} req/s, ${accuracy.seconds} s):\n`,
  );
  for (const verdict of accuracy.keys) {
    process.stdout.write(
      `    key ${verdict.key}: ${verdict.admitted} admitted of ${verdict.requests} ` +
        `(${verdict.admittedByReplica.join(' + ')} by replica), ${verdict.refused} refused, ` +
        `${verdict.other} other\n`,
    );
  }
  process.stdout.write(
    `    next request of key A: ${accuracy.afterBurst.status}, Retry-After ` +
      `${accuracy.afterBurst.retryAfterS} s; ${accuracy.isExact ? 'exact' : 'NOT EXACT'}\n`,
  );
  for (const replica of replicas) await replica.stop();

  // Last: every turn leaves the memory service background work (indexing, fact extraction).
  // One user per connection: a user's turns without a conversationId all go to their default
  // conversation, where the orchestrator runs one turn at a time.
  const chatKeys: string[] = [];
  for (let user = 1; user <= Math.max(...CHAT_CONNECTIONS); user++) {
    chatKeys.push((await fixture.createUser(`bench chat ${user}`)).apiKey);
  }
  const chatRuns: Figures[] = [];
  for (const connections of CHAT_CONNECTIONS) {
    const figures = await measure(
      {
        url: `${gatewayUrl}/v1/chat`,
        method: 'POST',
        connections,
        seconds: CHAT_SECONDS,
        keys: chatKeys,
        keyPer: 'connection',
        body: JSON.stringify({ message: 'How are you today?' }),
      },
      observed,
    );
    chatRuns.push(figures);
    process.stdout.write(describe('POST /v1/chat', figures));
  }

  const all = [...cheapRuns, off, on, ...chatRuns];
  const warnings = [
    ...all
      .filter((figures) => figures.requests > count(figures.statuses, (status) => status < 300))
      .map((figures) => `a run at ${figures.connections} connections had answers other than 2xx`),
    ...(Math.max(...all.map((figures) => figures.otherCoresBusy)) > QUIET_CORES
      ? [
          `the machine was shared (other processes kept up to ${Math.max(...all.map((figures) => figures.otherCoresBusy))} cores busy): run again on a quiet machine`,
        ]
      : []),
    ...(accuracy.isExact ? [] : ['the rate limiter did not admit exactly its limit']),
  ];
  const report: Report = {
    date: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      node: process.version,
      gatewayCode: await gatewayVersion(),
    },
    loadAverage: { atStart: loadAverageAtStart, atEnd: loadavg() },
    cheapRoute: { route: `GET ${CHEAP_ROUTE}`, runs: cheapRuns },
    chat: { route: 'POST /v1/chat', runs: chatRuns },
    limiterCost: { route: `GET ${CHEAP_ROUTE}`, off, on },
    accuracy,
    warnings,
  };
  await mkdir(RESULTS_DIR, { recursive: true });
  await writeFile(resolve(RESULTS_DIR, 'gateway.json'), `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(resolve(RESULTS_DIR, 'gateway.md'), renderMarkdown(report));
  for (const warning of warnings) process.stdout.write(`warning: ${warning}\n`);
  process.stdout.write(`written to ${resolve(RESULTS_DIR, 'gateway.md')} and gateway.json\n`);
} finally {
  await Promise.all(replicas.map((replica) => replica.stop()));
  await fixture.close();
}

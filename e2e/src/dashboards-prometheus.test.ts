import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ScheduleResponse, SchedulesRunsResponse } from '@jarvis/contracts';
import {
  type FakeLlmRequest,
  type FakeReply,
  freePort,
  type HttpRecorder,
  isTurnRequest,
  type ManagedProcess,
  makeTempDir,
  REDIS_URL,
  SERVICE_NAMES,
  type StackFixture,
  sentMessages,
  startHttpRecorder,
  startProcess,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';

// The provisioned Grafana dashboards against a real Prometheus (Debian's 2.42) that scrapes a
// running stack with the project's own scrape configuration, after turns with tools, memory work
// and schedules: every PromQL query of every dashboard must be valid and return data through
// Prometheus's HTTP API. What cannot run here is on EXEMPT (its queries must still be valid).

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DASHBOARDS_DIR = join(ROOT, 'infra/grafana/dashboards');
const SCRAPE_CONFIG = join(ROOT, 'infra/observability/prometheus/prometheus.yml');
const PROMETHEUS = '/usr/bin/prometheus';
const POSTGRES_EXPORTER = '/usr/bin/prometheus-postgres-exporter';
const REDIS_EXPORTER = '/usr/bin/prometheus-redis-exporter';
// Short, so the test waits little for scrapes; as long as a scrape may take on a loaded machine
// (its timeout cannot be longer), so no target shows down for being slow.
const SCRAPE_INTERVAL_MS = 2_000;

// Panels whose data comes from something that does not run here, by dashboard uid and panel
// title. Their queries are still sent: Prometheus answers an unknown metric with success and no
// data, and a query that does not parse with an error.
const EXEMPT: Record<string, string> = {
  'jarvis-services / Calls between services':
    "Tempo's service graph: written by Tempo's metrics generator, and no Tempo runs here",
  'jarvis-services / Spans per second by name':
    "Tempo's span metrics: written by Tempo's metrics generator, and no Tempo runs here",
  'jarvis-services / Span latency p95 by name':
    "Tempo's span metrics: written by Tempo's metrics generator, and no Tempo runs here",
  'jarvis-services / Connections': 'prometheus-nats-exporter, which Debian does not package',
  'jarvis-services / Messages per second':
    'prometheus-nats-exporter, which Debian does not package',
  'jarvis-services / Server memory': 'prometheus-nats-exporter, which Debian does not package',
  'jarvis-services / Stream messages': 'prometheus-nats-exporter, which Debian does not package',
};

// Scrape jobs of the configuration whose target does not run here, and why; every other job
// must be one of the stack's services or an exporter this test runs.
const JOBS_NOT_RUN: Record<string, string> = {
  nats: 'prometheus-nats-exporter, which Debian does not package',
};

// Stand-ins for Grafana's variables, with the test's short scrape interval: a rate window that
// spans the whole run, and a time range longer than it.
const BUILT_IN_VARIABLES: Record<string, string> = {
  __rate_interval: '5m',
  __range: '1h',
  __range_s: '3600',
  __range_ms: '3600000',
  __interval_ms: '60000',
};
const DEFAULT_INTERVAL = '1m';

type Target = {
  refId?: string;
  expr?: string;
  exemplar?: boolean;
  interval?: string;
  datasource?: { type?: string; uid?: string };
};
type Panel = {
  title: string;
  type: string;
  interval?: string;
  datasource?: { type?: string; uid?: string };
  targets?: Target[];
  panels?: Panel[];
};
type Variable = {
  name: string;
  type: string;
  query?: string | { query?: string };
  definition?: string;
  allValue?: string;
  includeAll?: boolean;
  options?: { value: string }[];
  datasource?: { uid?: string };
};
type Dashboard = { uid: string; title: string; panels: Panel[]; templating: { list: Variable[] } };

type PromAnswer = {
  status: 'success' | 'error';
  error?: string;
  data?: { resultType: string; result: unknown[] } | string[];
};

// One PromQL query of a dashboard, with its variables filled in, and its panel's
// "<dashboard uid> / <panel title>".
type Query = { key: string; expr: string; hasExemplars: boolean };

describe('the Grafana dashboards against a real Prometheus', () => {
  let fixture: StackFixture;
  let webhook: HttpRecorder;
  let tempDir: Awaited<ReturnType<typeof makeTempDir>>;
  let prometheusUrl: string;
  let dashboards: Dashboard[];
  const processes: ManagedProcess[] = [];

  const api = async (key: string, method: string, path: string, body?: unknown) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? (JSON.parse(text) as unknown) : undefined };
  };

  const promGet = async (path: string, params: Record<string, string> = {}) => {
    const url = new URL(path, prometheusUrl);
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    return (await (await fetch(url)).json()) as PromAnswer;
  };

  // A process of this test; its address is what it logs it listens on, or the port given.
  const launch = (name: string, command: string, args: string[], env: Record<string, string>) => {
    const managed = startProcess({ name, command, args, cwd: tempDir.path, env });
    processes.push(managed);
    return managed;
  };
  const activeTargets = async () => {
    const answer = (await (await fetch(`${prometheusUrl}/api/v1/targets`)).json()) as {
      data: {
        activeTargets: {
          scrapePool: string;
          health: string;
          lastError: string;
          lastScrape: string;
        }[];
      };
    };
    return answer.data.activeTargets;
  };
  // Until Prometheus has scraped each of the jobs twice since a moment (a counter's rate needs
  // two samples). Its targets show up a few seconds after it starts.
  const waitForScrapes = (since: number, jobs: string[]) =>
    waitFor(
      async () => {
        const targets = await activeTargets();
        return jobs.every((job) =>
          targets.some(
            (target) =>
              target.scrapePool === job &&
              Date.parse(target.lastScrape) > since + SCRAPE_INTERVAL_MS,
          ),
        );
      },
      { timeoutMs: 30_000, what: `two scrapes of ${jobs.join(', ')}` },
    );
  const listeningOn = (managed: ManagedProcess) =>
    waitFor(
      () => {
        if (managed.child.exitCode !== null) {
          throw new Error(`${managed.name} exited:\n${managed.output().slice(-2_000)}`);
        }
        return managed.output().match(/msg="Listening on" address=([\d.]+:\d+)/)?.[1];
      },
      { timeoutMs: 20_000, what: `${managed.name} to listen` },
    );
  const answersMetrics = (managed: ManagedProcess, address: string) =>
    waitFor(
      async () => {
        if (managed.child.exitCode !== null) {
          throw new Error(`${managed.name} exited:\n${managed.output().slice(-2_000)}`);
        }
        return (await fetch(`http://${address}/metrics`)).ok;
      },
      { timeoutMs: 20_000, what: `${managed.name} to answer /metrics` },
    );

  // The project's scrape configuration, every job's target moved to where it runs here, scraped
  // every SCRAPE_INTERVAL_MS; job names, metrics paths and the rest as they are.
  const writeScrapeConfig = async (addresses: Record<string, string>) => {
    const config = parseYaml(await readFile(SCRAPE_CONFIG, 'utf8')) as {
      global?: Record<string, unknown>;
      scrape_configs: Record<string, unknown>[];
    };
    config.global = {
      ...config.global,
      scrape_interval: `${SCRAPE_INTERVAL_MS}ms`,
      scrape_timeout: `${SCRAPE_INTERVAL_MS}ms`,
      evaluation_interval: `${SCRAPE_INTERVAL_MS}ms`,
    };
    const unknown: string[] = [];
    config.scrape_configs = config.scrape_configs.flatMap((job) => {
      const name = String(job.job_name);
      if (name in JOBS_NOT_RUN) return [];
      const address = addresses[name];
      if (!address) {
        unknown.push(name);
        return [];
      }
      const { scrape_interval: _interval, scrape_timeout: _timeout, ...rest } = job;
      const labels = (job.static_configs as { labels?: Record<string, string> }[] | undefined)?.[0]
        ?.labels;
      return [{ ...rest, static_configs: [{ targets: [address], ...(labels ? { labels } : {}) }] }];
    });
    expect(unknown, 'scrape jobs this test does not run: add them here').toEqual([]);
    const path = join(tempDir.path, 'prometheus.yml');
    await writeFile(path, stringifyYaml(config));
    return path;
  };

  // A reply for every request the stack sends the fake model: turns by how many tool results
  // the model has seen, fact extraction with one fact to add, summaries as a summary.
  const replyToTurns = (turn: (toolResults: number) => FakeReply) =>
    fixture.fake.onChat((request: FakeLlmRequest): FakeReply => {
      const messages = sentMessages(request);
      // An assistant message with tool calls has no content (null, whatever its type says).
      const isSummary = messages.some(
        (message) =>
          typeof message.content === 'string' &&
          message.content.includes('Conversation to condense'),
      );
      if (isSummary) {
        return { content: 'SUMMARY: the user talked about the garden plan.' };
      }
      if (!isTurnRequest(request)) {
        const operations = [
          { op: 'add', content: 'The user plans raised beds.', category: 'fact', importance: 6 },
        ];
        return { content: JSON.stringify({ operations }) };
      }
      return turn(messages.filter((message) => message.role === 'tool').length);
    });

  beforeAll(async () => {
    for (const binary of [PROMETHEUS, POSTGRES_EXPORTER, REDIS_EXPORTER]) {
      if (!existsSync(binary)) {
        throw new Error(`${binary} is missing: apt-get install -y prometheus \
prometheus-postgres-exporter prometheus-redis-exporter (scripts/preflight.sh)`);
      }
    }
    dashboards = await Promise.all(
      (await readdir(DASHBOARDS_DIR))
        .filter((file) => file.endsWith('.json'))
        .sort()
        .map(async (file) => JSON.parse(await readFile(join(DASHBOARDS_DIR, file), 'utf8'))),
    );
    tempDir = await makeTempDir('prometheus');
    webhook = await startHttpRecorder();
    fixture = await startStackFixture({
      // Memory embeds with the fake's embed model, so embeddings calls are counted.
      MODEL_ROUTE_EMBED: 'openai/fake-embed',
      // A few turns make a long conversation, which is summarised.
      SUMMARY_TRIGGER_TOKENS: '600',
      SUMMARY_KEEP_TOKENS: '200',
      // A turn trips the step limit.
      MAX_STEPS_PER_TURN: '3',
      // An occurrence first seen over a second late was missed (the scheduler was down): with a
      // grace window of 0 minutes it is recorded missed. Catch-up runs start at once.
      SCHEDULER_MISSED_AFTER_MS: '1000',
      SCHEDULER_CATCH_UP_SPREAD_MS: '0',
    });

    const postgresExporter = launch(
      'postgres-exporter',
      POSTGRES_EXPORTER,
      ['--web.listen-address=127.0.0.1:0'],
      { DATA_SOURCE_NAME: withSslDisabled(fixture.stack.databaseUrl) },
    );
    // redis_exporter does not say which port it got for port 0: it is given one.
    const redisExporterAddress = `127.0.0.1:${await freePort()}`;
    const redisExporter = launch(
      'redis-exporter',
      REDIS_EXPORTER,
      ['-redis.addr', REDIS_URL, '-web.listen-address', redisExporterAddress],
      {},
    );
    const postgresExporterAddress = await listeningOn(postgresExporter);
    await answersMetrics(postgresExporter, postgresExporterAddress);
    await answersMetrics(redisExporter, redisExporterAddress);

    // Prometheus scrapes itself: its address is in its own configuration, so it is given a port.
    const prometheusAddress = `127.0.0.1:${await freePort()}`;
    const addresses: Record<string, string> = {
      postgres: postgresExporterAddress,
      redis: redisExporterAddress,
      prometheus: prometheusAddress,
    };
    for (const name of SERVICE_NAMES) {
      addresses[name] = new URL(fixture.stack.serviceUrl(name)).host;
    }
    const configPath = await writeScrapeConfig(addresses);
    // Started before the activity, so that most counters move between scrapes.
    const prometheus = launch(
      'prometheus',
      PROMETHEUS,
      [
        `--config.file=${configPath}`,
        `--storage.tsdb.path=${join(tempDir.path, 'data')}`,
        `--web.listen-address=${prometheusAddress}`,
        // As compose.observability.yaml runs it: Tempo's metrics generator writes in, and
        // histograms keep their exemplars' trace ids.
        '--web.enable-remote-write-receiver',
        '--enable-feature=exemplar-storage',
      ],
      {},
    );
    prometheusUrl = `http://${prometheusAddress}`;
    await listeningOn(prometheus);
    await waitFor(async () => (await fetch(`${prometheusUrl}/-/ready`)).ok, {
      timeoutMs: 20_000,
      what: 'prometheus to be ready',
    });

    await runActivity();

    // Two scrapes of every target after the activity, all of them successful.
    await waitForScrapes(Date.now(), Object.keys(addresses));
    const down = (await activeTargets()).filter((t) => t.health !== 'up');
    expect(
      down.map((t) => `${t.scrapePool}: ${t.lastError}`),
      'scrape targets down',
    ).toEqual([]);
  });

  // Turns (one with tools, one whose tool call fails, one stopped by the step limit), a long
  // conversation, a memory search, a reminder that fires (to a webhook) and one that is missed,
  // and a restart of the scheduler.
  async function runActivity(): Promise<void> {
    const { apiKey } = await fixture.createUser('grafana');
    const channel = await api(apiKey, 'PUT', '/v1/notifications/channels/webhook', {
      url: `${webhook.url}/jarvis`,
      secret: 'dashboards-test-secret',
    });
    expect(channel.status, JSON.stringify(channel.body)).toBe(200);
    // Two reminders due while the scheduler is down (stopped below): back, it sees both late.
    // The first is still within its grace window and fires; the second, with a window of 0
    // minutes, is missed.
    const dueAt = new Date(Date.now() + 5_000).toISOString();
    const fires = await api(apiKey, 'POST', '/v1/schedules', {
      kind: 'once',
      at: dueAt,
      action: { type: 'remind', text: 'Water the raised beds' },
    });
    const missed = await api(apiKey, 'POST', '/v1/schedules', {
      kind: 'once',
      at: dueAt,
      graceMinutes: 0,
      action: { type: 'remind', text: 'Only on the dot' },
    });
    expect([fires.status, missed.status], JSON.stringify([fires.body, missed.body])).toEqual([
      201, 201,
    ]);
    await fixture.stack.stopService('scheduler');
    expect(Date.now(), 'the scheduler stopped before the reminders were due').toBeLessThan(
      Date.parse(dueAt),
    );

    const filler = 'The garden plan has raised beds, a compost corner and a rain barrel. '.repeat(
      8,
    );
    const chat = async (message: string) => {
      const response = await fixture.chat(apiKey, { message });
      expect(response.status, await response.text()).toBe(200);
    };
    replyToTurns((results) =>
      results === 0
        ? {
            toolCalls: [
              { name: 'memory_write', arguments: { path: 'garden.md', content: filler } },
            ],
          }
        : { content: 'Saved.' },
    );
    await chat(`Note the garden plan: ${filler}`);
    replyToTurns((results) =>
      results === 0
        ? { toolCalls: [{ name: 'memory_read', arguments: { file: 'garden.md' } }] }
        : { content: 'That went wrong.' },
    );
    await chat(`Read my garden notes. ${filler}`);
    replyToTurns((results) => ({
      toolCalls: [{ name: 'memory_ls', arguments: { prefix: `round-${results}/` } }],
    }));
    await chat(`Look through everything. ${filler}`);
    replyToTurns(() => ({ content: 'Noted.' }));
    await chat(`One more thing about the garden. ${filler}`);
    const search = await api(apiKey, 'POST', '/v1/memory/search', { query: 'raised beds' });
    expect(search.status).toBe(200);

    const runsOf = async (body: unknown) => {
      const { id } = ScheduleResponse.parse(body).schedule;
      return SchedulesRunsResponse.parse(
        (await api(apiKey, 'GET', `/v1/schedules/${id}/runs`)).body,
      ).runs;
    };
    // Back over a second (SCHEDULER_MISSED_AFTER_MS) after the reminders were due.
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, Date.parse(dueAt) + 1_500 - Date.now())),
    );
    await fixture.stack.startService('scheduler');
    await waitFor(async () => (await runsOf(fires.body)).some((run) => run.status === 'fired'), {
      timeoutMs: 30_000,
      what: 'the reminder within its grace window to fire',
    });
    await waitFor(async () => (await runsOf(missed.body)).some((run) => run.status === 'missed'), {
      timeoutMs: 30_000,
      what: 'the reminder with no grace window to be missed',
    });
    await waitFor(() => webhook.requests.some((request) => request.path === '/jarvis'), {
      timeoutMs: 30_000,
      what: 'the reminder at the webhook',
    });
  }

  afterAll(async () => {
    await Promise.all(processes.map((managed) => managed.stop()));
    await fixture?.close();
    await webhook?.close();
    await tempDir?.remove();
  });

  it('has every PromQL query of every dashboard valid, and returning data unless exempt', async () => {
    const queries = dashboards.flatMap(prometheusQueries);
    expect(queries.length).toBeGreaterThan(40);
    const problems: string[] = [];
    for (const query of queries) {
      const answer = await promGet('/api/v1/query', { query: query.expr });
      if (answer.status !== 'success') {
        problems.push(`${query.key}: invalid: ${answer.error}\n  ${query.expr}`);
        continue;
      }
      const result = answer.data && !Array.isArray(answer.data) ? answer.data.result : [];
      if (result.length === 0 && !(query.key in EXEMPT)) {
        problems.push(`${query.key}: no data\n  ${query.expr}`);
      }
    }
    expect(problems).toEqual([]);
  });

  // A target that shows exemplars reads a metric that has them, with the trace id Grafana's
  // Prometheus datasource links to Tempo (scraped as OpenMetrics, stored by exemplar-storage).
  // Spans have real ids without an OTLP endpoint too, so no trace receiver is needed here.
  it('has exemplars with a trace id for every target that shows them', async () => {
    const queries = dashboards.flatMap(prometheusQueries).filter((query) => query.hasExemplars);
    expect(queries.length).toBeGreaterThan(0);
    const problems: string[] = [];
    for (const query of queries) {
      const answer = (await promGet('/api/v1/query_exemplars', {
        query: query.expr,
        start: String(Date.now() / 1_000 - 3_600),
        end: String(Date.now() / 1_000),
      })) as { status: string; data?: { exemplars: { labels: Record<string, string> }[] }[] };
      const exemplars = (answer.data ?? []).flatMap((series) => series.exemplars);
      if (!exemplars.some((exemplar) => /^[0-9a-f]{32}$/.test(exemplar.labels.trace_id ?? ''))) {
        problems.push(`${query.key}: no exemplar with a trace_id\n  ${query.expr}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('has every exemption name a panel that exists', () => {
    const keys = new Set(dashboards.flatMap(prometheusQueries).map((query) => query.key));
    expect(Object.keys(EXEMPT).filter((key) => !keys.has(key))).toEqual([]);
  });

  it("has every Prometheus variable's values", async () => {
    const problems: string[] = [];
    for (const dashboard of dashboards) {
      for (const variable of dashboard.templating.list) {
        if (variable.type !== 'query' || variable.datasource?.uid !== 'prometheus') continue;
        const definition = variable.definition ?? '';
        const match = definition.match(/^label_values\((.+),\s*(\w+)\)$/);
        if (!match) {
          problems.push(`${dashboard.uid} $${variable.name}: not label_values(metric, label)`);
          continue;
        }
        const [, selector = '', label = ''] = match;
        const answer = await promGet(`/api/v1/label/${label}/values`, { 'match[]': selector });
        if (
          answer.status !== 'success' ||
          !Array.isArray(answer.data) ||
          answer.data.length === 0
        ) {
          problems.push(`${dashboard.uid} $${variable.name}: no values for ${definition}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });
});

// Hand-maintained JSON: no panel overlaps another or runs past the 24 columns, and ids are unique.
describe("the dashboards' layout", () => {
  it('has every panel on its own part of the grid, with a unique id', async () => {
    const problems: string[] = [];
    for (const file of (await readdir(DASHBOARDS_DIR)).filter((name) => name.endsWith('.json'))) {
      const dashboard = JSON.parse(await readFile(join(DASHBOARDS_DIR, file), 'utf8')) as {
        panels: (Panel & { id: number; gridPos: { x: number; y: number; w: number; h: number } })[];
      };
      const cells = new Map<string, string>();
      const ids = new Set<number>();
      for (const panel of dashboard.panels) {
        if (ids.has(panel.id)) problems.push(`${file}: id ${panel.id} twice`);
        ids.add(panel.id);
        const { x, y, w, h } = panel.gridPos;
        if (x + w > 24) problems.push(`${file} / ${panel.title}: past column 24`);
        for (let row = y; row < y + h; row++) {
          for (let column = x; column < x + w; column++) {
            const other = cells.get(`${row},${column}`);
            if (other) problems.push(`${file} / ${panel.title}: overlaps ${other}`);
            cells.set(`${row},${column}`, panel.title);
          }
        }
      }
    }
    expect([...new Set(problems)]).toEqual([]);
  });
});

// Every target of every panel (rows' panels too) whose datasource is Prometheus, its variables
// filled in as Grafana would with "All" chosen.
function prometheusQueries(dashboard: Dashboard): Query[] {
  const panels = dashboard.panels.flatMap((panel) => [panel, ...(panel.panels ?? [])]);
  return panels.flatMap((panel) =>
    (panel.targets ?? [])
      .filter((target) => (target.datasource ?? panel.datasource)?.uid === 'prometheus')
      .map((target) => {
        const key = `${dashboard.uid} / ${panel.title}`;
        const interval = target.interval || panel.interval || DEFAULT_INTERVAL;
        const expr = fillVariables(String(target.expr), dashboard, interval);
        const left = expr.match(/\$\{?\w+/g);
        if (left) throw new Error(`${key}: variables left unfilled: ${left.join(', ')}`);
        return { key, expr, hasExemplars: target.exemplar === true };
      }),
  );
}

function fillVariables(expr: string, dashboard: Dashboard, interval: string): string {
  const values: Record<string, string> = { ...BUILT_IN_VARIABLES, __interval: interval };
  for (const variable of dashboard.templating.list) {
    values[variable.name] = variableValue(variable);
  }
  // $name, ${name} and ${name:format}, as Grafana reads them.
  return expr.replace(/\$\{(\w+)(?::\w+)?\}|\$(\w+)/g, (whole, braced, bare) => {
    const name = String(braced ?? bare);
    return values[name] ?? whole;
  });
}

// "All" where the variable has it, else its first value.
function variableValue(variable: Variable): string {
  if (variable.includeAll && variable.allValue) return variable.allValue;
  if (variable.type === 'textbox' || variable.type === 'constant') {
    return typeof variable.query === 'string' ? variable.query : '';
  }
  if (variable.type === 'custom' && typeof variable.query === 'string') {
    return variable.query.split(',')[0]?.trim() ?? '';
  }
  return variable.options?.[0]?.value ?? '';
}

// postgres-exporter's driver asks for TLS unless told not to; the test's server has none.
function withSslDisabled(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  if (!url.searchParams.has('sslmode')) url.searchParams.set('sslmode', 'disable');
  return url.toString();
}

import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { TurnEvent, toolsInvoke, turnEventSubject } from '@jarvis/contracts';
import { z } from 'zod';
import { prepareBenchStack } from '../bench-stack';
import { RESULTS_DIR } from '../paths';
import { percentiles } from '../percentiles';

// `make bench` (browser): how long browser_open takes on a local page, and how much memory the
// tools service holds with BROWSER_MAX_PAGES (4) pages open. The tools service runs as its own
// process from its main.ts with production's browser settings (Debian's Chromium, sandboxed, as
// `nobody` when the bench runs as root, every request through the guarded proxy); the bench asks
// tools.invoke as the orchestrator does, for a page it serves itself (OUTBOUND_ALLOWED_HOSTS lets
// the service reach 127.0.0.1), whose text its JavaScript writes. Two series: each call in a run
// of its own (a new context and page, then the load: a run's first browser_open), and calls in
// one run (the page reused: its later ones). Memory is the proportional set size (PSS: shared
// pages split between the processes that share them) of the service's node process and of every
// Chromium process under it, after four runs each opened the page at once and kept it.

const Settings = z.object({
  // A PostgreSQL server for the tools service's own tables; the bench makes a database of its
  // own there and drops it at the end. Without it, the embedded one.
  DATABASE_URL: z.string().url().optional(),
  // browser_open calls measured in each series, after BENCH_WARM_UP unmeasured ones.
  BENCH_OPENS: z.coerce.number().int().min(1).default(50),
  BENCH_WARM_UP: z.coerce.number().int().min(0).default(5),
});
const settings = Settings.parse(process.env);
const RESULTS = resolve(RESULTS_DIR, 'browser.json');
const PAGES_OPEN = 4;

// A small article whose text exists only once its script ran, with a few links and an image.
const PAGE = `<!doctype html><html><head><title>Loading</title></head><body><main id="main"></main>
  <img src="/pixel.svg" width="10" height="10"><script>
    document.title = 'Harbour news';
    const main = document.getElementById('main');
    for (let i = 1; i <= 20; i++) {
      const p = document.createElement('p');
      p.textContent = 'Paragraph ' + i + ': the ferry from Cais do Sodré runs every twenty minutes in the evening.';
      main.append(p);
      const a = document.createElement('a');
      a.href = '/article/' + i;
      a.textContent = 'Article ' + i;
      main.append(a);
    }
  </script></body></html>`;
const PIXEL =
  '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>';

// The percentiles and the mean, to a tenth of a millisecond.
function timeFigures(values: number[]) {
  const round = (value: number) => Math.round(value * 10) / 10;
  const mean = values.reduce((sum, value) => sum + value, 0) / Math.max(values.length, 1);
  return { ...percentiles(values, round), mean: round(mean) };
}

// The process and every process under it, from /proc's parent links.
async function processTree(root: number): Promise<{ pid: number; command: string }[]> {
  const entries = (await readdir('/proc')).filter((entry) => /^\d+$/.test(entry));
  const parents = new Map<number, { parent: number; command: string }>();
  await Promise.all(
    entries.map(async (entry) => {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => null);
      if (!stat) return;
      const command = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(entry), { parent, command });
    }),
  );
  const tree = [{ pid: root, command: parents.get(root)?.command ?? '?' }];
  for (let index = 0; index < tree.length; index += 1) {
    const pid = tree[index]?.pid;
    for (const [child, { parent, command }] of parents) {
      if (parent === pid) tree.push({ pid: child, command });
    }
  }
  return tree;
}

// PSS and RSS of one process in MB (smaps_rollup; the bench runs as root or as the same user).
async function memoryOf(pid: number): Promise<{ pss: number; rss: number }> {
  const text = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
  const field = (name: string) =>
    Number(text.match(new RegExp(`^${name}:\\s+(\\d+)`, 'm'))?.[1] ?? 0) / 1024;
  return { pss: field('Pss'), rss: field('Rss') };
}

async function memoryOfService(root: number) {
  const tree = await processTree(root);
  const rows = await Promise.all(
    tree.map(async (process) => ({ ...process, ...(await memoryOf(process.pid)) })),
  );
  const round = (value: number) => Math.round(value * 10) / 10;
  const sum = (list: typeof rows, key: 'pss' | 'rss') =>
    round(list.reduce((total, row) => total + row[key], 0));
  const node = rows.filter((row) => row.pid === root);
  const browser = rows.filter((row) => row.pid !== root);
  return {
    nodePssMb: sum(node, 'pss'),
    nodeRssMb: sum(node, 'rss'),
    browserPssMb: sum(browser, 'pss'),
    browserProcesses: browser.length,
    totalPssMb: round(sum(node, 'pss') + sum(browser, 'pss')),
  };
}

const site = createServer((request, response) => {
  if (request.url === '/pixel.svg') {
    response.writeHead(200, { 'content-type': 'image/svg+xml' });
    response.end(PIXEL);
    return;
  }
  response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  response.end(PAGE);
});
await new Promise<void>((done) => site.listen(0, '127.0.0.1', done));
const pageUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/news`;

const { database, namespace, stack } = await prepareBenchStack('bench-browser', ['tools'], {
  env: { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' },
});
let bus: Bus | undefined;

try {
  await stack.start();
  bus = await connectTestBus(namespace);
  const tools = stack.process('tools');
  const toolsPid = tools?.child.pid;
  if (toolsPid === undefined) throw new Error('the stack has no tools process');
  const connectedBus = bus;
  const userId = randomUUID();
  const open = async (runId: string) => {
    const started = performance.now();
    const { result } = await connectedBus.request(
      toolsInvoke,
      { userId, runId, name: 'browser_open', arguments: { url: pageUrl }, timeoutMs: 30_000 },
      { timeoutMs: 32_000 },
    );
    const elapsed = performance.now() - started;
    if (!JSON.stringify(result).includes('Paragraph 20: the ferry')) {
      throw new Error(
        `browser_open did not read the page's script-written text: ${JSON.stringify(result).slice(0, 300)}`,
      );
    }
    return elapsed;
  };

  const loadAtStart = loadavg().map((value) => Math.round(value * 100) / 100);
  const idle = await memoryOfService(toolsPid);
  // The first call launches Chromium.
  const firstCallMs = Math.round(await open(randomUUID()));
  for (let index = 0; index < settings.BENCH_WARM_UP; index += 1) await open(randomUUID());

  // Each run's turn then ends, as the orchestrator announces it, so its page closes and the next
  // run finds room rather than closing the least recently used page first.
  const endRun = (runId: string) =>
    connectedBus.publish(turnEventSubject(randomUUID()), TurnEvent, {
      type: 'done',
      turnId: randomUUID(),
      runId,
      conversationId: randomUUID(),
      reply: { id: randomUUID(), role: 'assistant', content: 'ok' },
      usage: { inputTokens: 1, outputTokens: 1 },
    });
  const newRun: number[] = [];
  for (let index = 0; index < settings.BENCH_OPENS; index += 1) {
    const runId = randomUUID();
    newRun.push(await open(runId));
    endRun(runId);
  }
  const sameRunId = randomUUID();
  await open(sameRunId);
  const sameRun: number[] = [];
  for (let index = 0; index < settings.BENCH_OPENS; index += 1) sameRun.push(await open(sameRunId));

  // Four runs open the page at once and keep it: the pool's limit, all of it in use.
  const runs = Array.from({ length: PAGES_OPEN }, () => randomUUID());
  await Promise.all(runs.map((runId) => open(runId)));
  const withPagesOpen = await memoryOfService(toolsPid);

  const report = {
    date: new Date().toISOString(),
    loadAverageAtStart: loadAtStart,
    page: 'local, 20 paragraphs and links written by its script, one image',
    firstCallMs,
    browserOpenMs: {
      newRun: timeFigures(newRun),
      sameRun: timeFigures(sameRun),
    },
    memory: { idle, [`${PAGES_OPEN}PagesOpen`]: withPagesOpen },
  };
  process.stdout.write(
    [
      `browser_open, new run each (${newRun.length}): p50 ${report.browserOpenMs.newRun.p50} ms, p95 ${report.browserOpenMs.newRun.p95} ms`,
      `browser_open, same run (${sameRun.length}): p50 ${report.browserOpenMs.sameRun.p50} ms, p95 ${report.browserOpenMs.sameRun.p95} ms`,
      `first call (Chromium launch): ${firstCallMs} ms`,
      `tools service PSS idle: ${idle.totalPssMb} MB (node ${idle.nodePssMb} MB)`,
      `tools service PSS with ${PAGES_OPEN} pages open: ${withPagesOpen.totalPssMb} MB (node ${withPagesOpen.nodePssMb} MB, RSS ${withPagesOpen.nodeRssMb} MB; Chromium ${withPagesOpen.browserPssMb} MB in ${withPagesOpen.browserProcesses} processes)`,
      '',
    ].join('\n'),
  );
  await mkdir(RESULTS_DIR, { recursive: true });
  await writeFile(RESULTS, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`written to ${RESULTS}\n`);
} finally {
  await bus?.close();
  await stack.stop();
  await database.stop();
  site.closeAllConnections();
  await new Promise((done) => site.close(done));
}

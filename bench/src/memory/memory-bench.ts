import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { memoryImport, memorySearch } from '@jarvis/contracts';
import { createPool, type Pool } from '@jarvis/db';
import {
  NATS_URL,
  startProcess,
  startTestDatabase,
  uniqueNamespace,
  waitUntilReady,
} from '@jarvis/testkit';
import { LOCOMO_DEV, RESULTS_DIR, ROOT_DIR } from '../paths';
import { createBm25 } from './bm25';
import { type LocomoConversation, loadLocomo } from './locomo';

// `make bench` (memory): LoCoMo retrieval against plain BM25, import throughput, and search
// latency at 10k and 100k items for one user. The memory service runs as its own process, from
// its main.ts, and the bench speaks only its bus contracts (memory.import, memory.search): what
// is ranked is what a turn's recall gets. Without model-gateway there is no embed route, so
// search is the built-in sparse embedder with full text, as the figures have always been.
// BENCH_SIZES overrides the sizes ("10000,100000"); DATABASE_URL runs against a real Postgres
// (an empty database: the service migrates its schema).

const RESULTS = resolve(RESULTS_DIR, 'memory.json');
const KS = [5, 10, 20] as const;
const IMPORT_BATCH = 1_000;
const QUERIES = 200;

type Recall = Record<`@${(typeof KS)[number]}`, number>;

// LoCoMo's question categories, as its questions read (category 5, adversarial questions about
// things never said, has no evidence to find and is left out).
const CATEGORIES: Record<number, string> = {
  1: 'multi-hop',
  2: 'temporal',
  3: 'open-domain',
  4: 'single-hop',
};

// Recall summed over questions, overall and per category, for one ranker.
type Tally = { questions: number; sums: Recall };

function emptyTally(): Tally {
  return { questions: 0, sums: { '@5': 0, '@10': 0, '@20': 0 } };
}

function averageOf(tally: Tally): Recall {
  const average = (sum: number) => Math.round((sum / Math.max(tally.questions, 1)) * 1000) / 1000;
  return {
    '@5': average(tally.sums['@5']),
    '@10': average(tally.sums['@10']),
    '@20': average(tally.sums['@20']),
  };
}

function shareFound(evidence: Set<string>, found: Set<string>): number {
  return [...evidence].filter((id) => found.has(id)).length / evidence.size;
}

async function importTurns(
  bus: Bus,
  userId: string,
  conversationId: string,
  turns: { text: string; createdAt: string; diaId?: string }[],
) {
  for (let start = 0; start < turns.length; start += IMPORT_BATCH) {
    const batch = turns.slice(start, start + IMPORT_BATCH);
    await bus.request(
      memoryImport,
      {
        userId,
        conversationId,
        batchKey: `bench:${conversationId}`,
        firstIndex: start,
        messages: batch.map((turn) => ({
          role: 'user' as const,
          content: turn.text,
          createdAt: turn.createdAt,
          ...(turn.diaId ? { metadata: { dia_id: turn.diaId } } : {}),
        })),
      },
      { timeoutMs: 600_000 },
    );
  }
}

async function benchRetrieval(bus: Bus, conversations: LocomoConversation[]) {
  const tallies = new Map<string, { memory: Tally; bm25: Tally }>();
  const tallyOf = (group: string) => {
    const existing = tallies.get(group);
    if (existing) return existing;
    const created = { memory: emptyTally(), bm25: emptyTally() };
    tallies.set(group, created);
    return created;
  };
  for (const conversation of conversations) {
    const userId = randomUUID();
    await importTurns(bus, userId, randomUUID(), conversation.turns);
    const rank = createBm25(conversation.turns.map((turn) => turn.text));
    for (const qa of conversation.questions) {
      const category = CATEGORIES[qa.category];
      if (!category) continue;
      const groups = [tallyOf('all'), tallyOf(category)];
      for (const group of groups) {
        group.memory.questions++;
        group.bm25.questions++;
      }
      const evidence = new Set(qa.evidence);
      for (const k of KS) {
        const { results } = await bus.request(memorySearch, {
          userId,
          query: qa.question,
          limit: k,
        });
        const found = shareFound(
          evidence,
          new Set(results.map((result) => String(result.metadata.dia_id))),
        );
        const baseline = shareFound(
          evidence,
          new Set(rank(qa.question, k).map((index) => conversation.turns[index]?.diaId ?? '')),
        );
        for (const group of groups) {
          group.memory.sums[`@${k}`] += found;
          group.bm25.sums[`@${k}`] += baseline;
        }
      }
    }
  }
  const all = tallyOf('all');
  return {
    questions: all.memory.questions,
    memory: averageOf(all.memory),
    bm25: averageOf(all.bm25),
    byCategory: Object.fromEntries(
      Object.values(CATEGORIES).map((category) => {
        const tally = tallyOf(category);
        return [
          category,
          {
            questions: tally.memory.questions,
            memory: averageOf(tally.memory),
            bm25: averageOf(tally.bm25),
          },
        ];
      }),
    ),
  };
}

function percentile(sorted: number[], p: number): number {
  const value =
    sorted[Math.min(sorted.length - 1, Math.max(Math.ceil((p / 100) * sorted.length) - 1, 0))];
  return Math.round((value ?? Number.NaN) * 100) / 100;
}

async function benchScale(bus: Bus, db: Pool, conversations: LocomoConversation[], size: number) {
  const userId = randomUUID();
  const lines = conversations.flatMap((conversation) => conversation.turns);
  const turns = Array.from({ length: size }, (_, index) => {
    const turn = lines[index % lines.length];
    const round = Math.floor(index / lines.length);
    return {
      text: round === 0 ? (turn?.text ?? '') : `${turn?.text ?? ''} (${round})`,
      createdAt: new Date(Date.UTC(2023, 0, 1) + index * 60_000).toISOString(),
    };
  });
  const started = performance.now();
  for (let start = 0; start < turns.length; start += 10_000) {
    await importTurns(bus, userId, randomUUID(), turns.slice(start, start + 10_000));
  }
  const importSeconds = (performance.now() - started) / 1000;
  // Planner statistics as the database's own upkeep would soon have them (autovacuum, or the
  // embedded Postgres' ANALYZE after a minute of use); a Postgres with autovacuum off (this
  // team's machines) would otherwise plan every search for empty tables.
  await db.query('ANALYZE');
  const questions = conversations.flatMap((conversation) =>
    conversation.questions.map((qa) => qa.question),
  );
  const latencies: number[] = [];
  for (let i = 0; i < QUERIES + 20; i++) {
    const query = questions[i % questions.length] ?? 'hello';
    const begin = performance.now();
    await bus.request(memorySearch, { userId, query, limit: 10 });
    if (i >= 20) latencies.push(performance.now() - begin);
  }
  latencies.sort((a, b) => a - b);
  return {
    items: size,
    importMessagesPerSecond: Math.round(size / importSeconds),
    searchMs: { p50: percentile(latencies, 50), p95: percentile(latencies, 95) },
  };
}

const conversations = loadLocomo(LOCOMO_DEV);
const sizes = (process.env.BENCH_SIZES ?? '10000,100000')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const external = process.env.DATABASE_URL;
const database = external ? undefined : await startTestDatabase();
const databaseUrl = external ?? database?.url ?? '';
const namespace = uniqueNamespace('bench');
const service = startProcess({
  name: 'memory',
  command: process.execPath,
  args: ['--import', 'tsx', 'services/memory/src/main.ts'],
  cwd: ROOT_DIR,
  env: {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NATS_URL,
    NATS_NAMESPACE: namespace,
    DATABASE_URL: databaseUrl,
    HTTP_PORT: '0',
  },
});
await waitUntilReady(service);
// The bench's own connection, for the planner statistics only.
const pool: Pool = createPool({ url: databaseUrl, applicationName: 'memory-bench', max: 1 });
const client = await connectTestBus(namespace);

try {
  const retrieval = await benchRetrieval(client, conversations);
  process.stdout.write(
    `LoCoMo retrieval (${retrieval.questions} questions, categories 1-4), recall:\n`,
  );
  for (const k of KS) {
    const key = `@${k}` as const;
    const gain =
      Math.round(((retrieval.memory[key] ?? 0) - (retrieval.bm25[key] ?? 0)) * 1000) / 1000;
    process.stdout.write(
      `  ${key.padEnd(4)} memory ${retrieval.memory[key]}  bm25 ${retrieval.bm25[key]}  (+${gain})\n`,
    );
  }
  for (const [category, recall] of Object.entries(retrieval.byCategory)) {
    const line = KS.map((k) => `@${k} ${recall.memory[`@${k}`]} (bm25 ${recall.bm25[`@${k}`]})`);
    process.stdout.write(`  ${category} (${recall.questions}): ${line.join('  ')}\n`);
  }
  const scale = [];
  for (const size of sizes) {
    const result = await benchScale(client, pool, conversations, size);
    scale.push(result);
    process.stdout.write(
      `${size} items: import ${result.importMessagesPerSecond} msg/s, search p50 ${result.searchMs.p50} ms, p95 ${result.searchMs.p95} ms\n`,
    );
  }
  const report = {
    date: new Date().toISOString(),
    database: external ? 'postgres' : 'embedded (PGlite)',
    retrieval,
    scale,
  };
  await mkdir(RESULTS_DIR, { recursive: true });
  await writeFile(RESULTS, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`written to ${RESULTS}\n`);
} finally {
  await client.close();
  await pool.end();
  await service.stop();
  await database?.stop();
}

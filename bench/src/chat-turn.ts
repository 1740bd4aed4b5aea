import { mkdir, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { setTimeout as wait } from 'node:timers/promises';
import { ChatResponse } from '@jarvis/contracts';
import { SERVICE_NAMES, startStackFixture } from '@jarvis/testkit';
import pg from 'pg';
import { z } from 'zod';
import { RESULTS_DIR } from './paths';
import { residentMb } from './proc';

// `make bench`: one chat turn through all six services with the fake LLM (which answers at
// once, so the figure is the stack's own cost), where its time goes, and each service's resident
// memory at idle.
const Settings = z.object({
  // A real Postgres with pgvector (an empty database: the services create their schemas);
  // without it the stack runs the embedded one, as tests and `make dev` do.
  DATABASE_URL: z.string().url().optional(),
  // A folder where each service writes a CPU profile (.cpuprofile) when the bench ends.
  BENCH_CPU_PROF: z.string().min(1).optional(),
  // The user's pause before each measured turn: 0 meets the previous turn's background work
  // (fact extraction, its episode file) head-on; a person typing leaves it time to finish, and
  // a pause of minutes leaves every connection idle.
  BENCH_PAUSE_MS: z.coerce.number().int().min(0).default(0),
  // Turns measured, after the warm-up's (which never pause).
  BENCH_TURNS: z.coerce.number().int().min(1).default(200),
});
const settings = Settings.parse(process.env);
const TURNS = settings.BENCH_TURNS;
const WARM_UP = 20;
const RESULTS = resolve(RESULTS_DIR, 'chat-turn.json');

async function measureMemory(
  fixture: Awaited<ReturnType<typeof startStackFixture>>,
): Promise<Record<string, number>> {
  const entries = await Promise.all(
    SERVICE_NAMES.map(
      async (name) => [name, await residentMb(fixture.stack.process(name)?.child.pid)] as const,
    ),
  );
  return Object.fromEntries(entries);
}

type TurnMark = { startedAt: number; endedAt: number; runId: string };

// Where one turn's time goes, from the timestamps the services stored (the user's and the
// reply's message, the run, its recall and model steps) between the client's send and receive.
// A row's created_at is its transaction's start, so a phase ending in a write includes that
// write's own transaction.
const PHASES = [
  'gateway and user message stored',
  'user message indexed, run recorded',
  'turn queued and picked up',
  'context budget and recall',
  'prompt built, model called',
  'model (gateway and fake)',
  'reply stored',
  'reply indexed, run completed',
  'outcome back to the client',
] as const;

async function turnPhases(db: pg.Client, mark: TurnMark): Promise<number[]> {
  const { rows } = await db.query<{
    user_at: Date;
    run_at: Date;
    started_at: Date;
    recall_at: Date;
    recall_ms: number;
    model_at: Date;
    model_ms: number;
    reply_at: Date;
    finished_at: Date;
  }>(
    `SELECT u.created_at AS user_at, r.created_at AS run_at, r.started_at,
            rs.started_at AS recall_at, rs.duration_ms AS recall_ms,
            ms.started_at AS model_at, ms.duration_ms AS model_ms,
            a.created_at AS reply_at, r.finished_at
     FROM orchestrator.runs r
     JOIN memory.messages u ON u.id = r.user_message_id
     JOIN memory.messages a ON a.id = r.reply_message_id
     JOIN orchestrator.run_steps rs ON rs.run_id = r.id AND rs.kind = 'recall'
     JOIN orchestrator.run_steps ms ON ms.run_id = r.id AND ms.kind = 'model'
     WHERE r.id = $1`,
    [mark.runId],
  );
  const row = rows[0];
  if (!row) throw new Error(`run ${mark.runId} has no record`);
  const at = (date: Date) => date.getTime();
  const modelEnd = at(row.model_at) + row.model_ms;
  return [
    at(row.user_at) - mark.startedAt,
    at(row.run_at) - at(row.user_at),
    at(row.started_at) - at(row.run_at),
    at(row.recall_at) + row.recall_ms - at(row.started_at),
    at(row.model_at) - at(row.recall_at) - row.recall_ms,
    row.model_ms,
    at(row.reply_at) - modelEnd,
    at(row.finished_at) - at(row.reply_at),
    mark.endedAt - at(row.finished_at),
  ];
}

function percentile(sorted: number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return Math.round((sorted[Math.max(index, 0)] ?? Number.NaN) * 100) / 100;
}

const fixture = await startStackFixture(
  {
    USER_REQUESTS_PER_MINUTE: '0',
    RATE_LIMIT_PER_MINUTE: '0',
    CHAT_RATE_LIMIT_PER_MINUTE: '0',
    USER_DAILY_COST_LIMIT_USD: '0',
  },
  { databaseUrl: settings.DATABASE_URL, cpuProfileDir: settings.BENCH_CPU_PROF },
);
const db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
await db.connect();
try {
  const { apiKey } = await fixture.createUser('bench');
  await wait(2_000);
  const idleBefore = await measureMemory(fixture);

  const durations: number[] = [];
  const marks: TurnMark[] = [];
  for (let turn = 0; turn < WARM_UP + TURNS; turn++) {
    if (turn >= WARM_UP && settings.BENCH_PAUSE_MS > 0) await wait(settings.BENCH_PAUSE_MS);
    const started = performance.now();
    const startedAt = Date.now();
    const response = await fixture.chat(apiKey, { message: `turn ${turn}: how are you?` });
    if (response.status !== 200) throw new Error(`turn ${turn} answered ${response.status}`);
    const { runId } = ChatResponse.parse(await response.json());
    if (turn < WARM_UP) continue;
    durations.push(performance.now() - started);
    marks.push({ startedAt, endedAt: Date.now(), runId });
  }
  const perTurn = await Promise.all(marks.map((mark) => turnPhases(db, mark)));
  const phasesMs = Object.fromEntries(
    PHASES.map((name, index) => {
      const sorted = perTurn.map((phases) => phases[index] ?? Number.NaN).sort((a, b) => a - b);
      return [name, { p50: percentile(sorted, 50), p95: percentile(sorted, 95) }];
    }),
  );
  await wait(2_000);
  const idleAfter = await measureMemory(fixture);

  const sorted = [...durations].sort((a, b) => a - b);
  const result = {
    date: new Date().toISOString(),
    turns: TURNS,
    pauseMs: settings.BENCH_PAUSE_MS,
    database: settings.DATABASE_URL ? 'postgres' : 'embedded',
    chatTurnMs: {
      p50: percentile(sorted, 50),
      p95: percentile(sorted, 95),
      max: percentile(sorted, 100),
    },
    phasesMs,
    residentMemoryMb: { idleBeforeTurns: idleBefore, idleAfterTurns: idleAfter },
  };
  await mkdir(RESULTS_DIR, { recursive: true });
  await writeFile(RESULTS, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(
    `chat turn through all services (fake LLM, ${TURNS} turns ${settings.BENCH_PAUSE_MS} ms apart, ${result.database} Postgres):\n`,
  );
  process.stdout.write(`  p50 ${result.chatTurnMs.p50} ms, p95 ${result.chatTurnMs.p95} ms\n`);
  process.stdout.write('where it goes (ms, p50 / p95):\n');
  for (const [name, spread] of Object.entries(phasesMs)) {
    process.stdout.write(`  ${name.padEnd(36)} ${spread.p50} / ${spread.p95}\n`);
  }
  process.stdout.write('resident memory at idle (MB), before -> after the turns:\n');
  for (const name of SERVICE_NAMES) {
    process.stdout.write(`  ${name.padEnd(14)} ${idleBefore[name]} -> ${idleAfter[name]}\n`);
  }
  process.stdout.write(`written to ${RESULTS}\n`);
} finally {
  await db.end();
  await fixture.close();
}

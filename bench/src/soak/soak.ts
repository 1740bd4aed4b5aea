import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { ChatResponse, ImportMessagesResponse } from '@jarvis/contracts';
import { SERVICE_NAMES, type StackFixture, startStackFixture } from '@jarvis/testkit';
import pg from 'pg';
import { z } from 'zod';
import { LOCOMO_DEV, RESULTS_DIR } from '../paths';
import { cpuMsPerTurn, type MachineServer, readCpuSeconds, residentMb } from '../proc';
import { composeMessage, loadChatLines, PLANTED_FACTS } from './corpus';
import { createSoakModel } from './model';
import {
  cpuLine,
  describeWindows,
  type FactCheck,
  growthPercent,
  locateInPrompt,
  renderMarkdown,
  type Sample,
  type SoakReport,
  sectionTokensAt,
  slopePer1000Turns,
  spread,
  type TurnRecord,
} from './report';

// `make bench` (soak): one conversation of SOAK_TURNS turns (10,000) through the whole stack, as
// six service processes and the embedded Postgres, with the fake LLM, for a user who already has
// SOAK_MEMORIES memories (100,000) stored. What it shows:
// - every turn's prompt stays within CONTEXT_TOKEN_BUDGET however long the conversation gets;
// - twenty facts said in the first 100 turns are in the prompt when asked about at the end;
// - the turn overhead (the round trip of POST /v1/chat less the fake model's own time) and its
//   drift, per window of 1,000 turns, with the recall and model steps the run recorded;
// - resident memory of the services and Postgres every 500 turns: flat after warm-up?
// The memories are imported (POST /v1/conversations/{id}/messages/import, dated over the two
// years before) into conversations short enough never to need a summary, so the soak measures a
// settled memory, not a summarisation backlog of the import. The soak's own turns all go
// through POST /v1/chat, one at a time like one user, with the summaries and fact extractions
// the memory service does after them answered by the fake (see bench-soak-model.ts).
// SOAK_TURNS=300 SOAK_MEMORIES=5000 is a quick run; the figures are never asserted.

const Settings = z.object({
  SOAK_TURNS: z.coerce.number().int().min(120).default(10_000),
  SOAK_MEMORIES: z.coerce.number().int().min(0).default(100_000),
  // The user's pause between turns; 0 sends each turn as soon as the last one is answered, so
  // it meets the previous turn's background work (fact extraction, summary) head-on.
  SOAK_PAUSE_MS: z.coerce.number().int().min(0).default(0),
  // A real Postgres with pgvector (an empty database: the services create their schemas);
  // without it the stack runs the embedded one, as tests and `make dev` do.
  DATABASE_URL: z.string().url().optional(),
  // A folder where each service writes a CPU profile (.cpuprofile) when the bench ends.
  BENCH_CPU_PROF: z.string().min(1).optional(),
});
const settings = Settings.parse(process.env);
const TURNS = settings.SOAK_TURNS;
const MEMORIES = settings.SOAK_MEMORIES;
const PAUSE_MS = settings.SOAK_PAUSE_MS;

const CONTEXT_TOKEN_BUDGET = 8_000;
const SUMMARY_TRIGGER_TOKENS = 6_000;
// Planted facts go into the first 100 turns, one every five.
const PLANT_EVERY = 5;
// Turns before the figures count: long enough for the first summaries and a warm JIT.
const WARM_UP_TURNS = Math.round(TURNS / 10);
const WINDOW = Math.min(1_000, WARM_UP_TURNS);
const SAMPLE_EVERY = Math.min(500, WINDOW);
const IMPORT_CALL_MAX = 5_000;
// An imported conversation stays below the summary threshold (estimated tokens).
const IMPORTED_CONVERSATION_TOKENS = SUMMARY_TRIGGER_TOKENS * 0.75;
const IMPORT_SPAN_MS = 2 * 365 * 24 * 3600_000;
const SETTLE_MS = 5_000;
const OVERHEAD_P95_TARGET_MS = 40;
const GROWTH_TARGET_PERCENT = 10;
const WATCHED = ['orchestrator', 'memory'] as const;
const PROCESSES = [...SERVICE_NAMES, 'postgres'] as const;
// The machine's servers whose CPU counts: Postgres too when the bench runs on a real one (then
// the stack's own 'postgres' process is not there).
const SERVERS: MachineServer[] = settings.DATABASE_URL
  ? ['postgres', 'nats-server', 'redis-server']
  : ['nats-server', 'redis-server'];

type ImportedMessage = { role: 'user' | 'assistant'; content: string; createdAt: string };

function wait(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

function loadAverage(): number {
  return Math.round((loadavg()[0] ?? 0) * 10) / 10;
}

// A user who has written instructions and a rule, as the prompt's standing tier is then in every
// turn's share of the budget (the report's per-section table).
async function setStandingInstructions(fixture: StackFixture, apiKey: string): Promise<void> {
  const send = async (method: string, path: string, body: unknown) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!response.ok)
      throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
  };
  await send('PUT', '/v1/me/instructions', {
    text: 'Answer briefly, in British English. Use metric units and the 24-hour clock.',
  });
  await send('POST', '/v1/memory/facts', {
    content: 'Never book a flight that leaves before 9 in the morning.',
    category: 'rule',
  });
}

// The memories: past chat, dated evenly over the two years before today, in conversations just
// short enough never to be summarised. One import call per conversation.
async function storeMemories(
  fixture: StackFixture,
  apiKey: string,
  lines: string[],
): Promise<{ conversations: number; seconds: number }> {
  const started = performance.now();
  const firstAt = Date.now() - IMPORT_SPAN_MS;
  let conversations = 0;
  let batch: ImportedMessage[] = [];
  let tokens = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const id = randomUUID();
    const response = await fetch(
      `${fixture.stack.gatewayUrl}/v1/conversations/${id}/messages/import`,
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${apiKey}`,
          'content-type': 'application/json',
          'idempotency-key': `soak-${id}`,
        },
        body: JSON.stringify({ messages: batch }),
      },
    );
    if (response.status !== 200) {
      throw new Error(`import answered ${response.status}: ${await response.text()}`);
    }
    ImportMessagesResponse.parse(await response.json());
    conversations++;
    batch = [];
    tokens = 0;
  };
  for (let index = 0; index < MEMORIES; index++) {
    const content = composeMessage(lines, index, 0);
    if (
      tokens + estimateTokens(content) > IMPORTED_CONVERSATION_TOKENS ||
      batch.length >= IMPORT_CALL_MAX
    ) {
      await flush();
    }
    batch.push({
      role: index % 2 === 0 ? 'user' : 'assistant',
      content,
      createdAt: new Date(firstAt + (index * IMPORT_SPAN_MS) / MEMORIES).toISOString(),
    });
    tokens += estimateTokens(content);
    if ((index + 1) % 10_000 === 0) {
      process.stdout.write(
        `  stored ${index + 1} memories (${Math.round((performance.now() - started) / 1000)} s)\n`,
      );
    }
  }
  await flush();
  return { conversations, seconds: Math.round((performance.now() - started) / 100) / 10 };
}

// A few counts, so a background backlog (summaries, fact extraction) shows beside the memory.
async function sample(
  fixture: StackFixture,
  db: pg.Client,
  turn: number,
  userId: string,
  conversationId: string | undefined,
): Promise<Sample> {
  const pids = Object.fromEntries(
    PROCESSES.map((name) => [name, fixture.stack.process(name)?.child.pid] as const),
  );
  const residentEntries = await Promise.all(
    PROCESSES.map(async (name) => [name, await residentMb(pids[name])] as const),
  );
  const cpuSeconds = await readCpuSeconds(pids, SERVERS);
  const { rows } = await db.query<{ summaries: string; extractions: string; facts: string }>(
    `SELECT (SELECT count(*) FROM memory.summaries WHERE conversation_id = $1::uuid) AS summaries,
            (SELECT count(*) FROM memory.extractions WHERE user_id = $2) AS extractions,
            (SELECT count(*) FROM memory.facts WHERE user_id = $2 AND valid_to IS NULL) AS facts`,
    [conversationId ?? '00000000-0000-0000-0000-000000000000', userId],
  );
  return {
    turn,
    takenAt: Date.now(),
    cpuSeconds,
    loadAverage: loadAverage(),
    residentMb: Object.fromEntries(residentEntries),
    summaries: Number(rows[0]?.summaries ?? 0),
    extractions: Number(rows[0]?.extractions ?? 0),
    facts: Number(rows[0]?.facts ?? 0),
  };
}

type RecordedSteps = {
  recallMs: number;
  modelMs: number;
  contextTokens: Record<string, number> | undefined;
};

// What the runs recorded: the recall and model steps of each turn, and the tokens of each part
// of its prompt (the recall step's output).
async function readSteps(
  db: pg.Client,
  conversationId: string,
): Promise<Map<string, RecordedSteps>> {
  const { rows } = await db.query<{
    id: string;
    recall_ms: string;
    model_ms: string;
    tokens: Record<string, number> | null;
  }>(
    `SELECT r.id,
            coalesce(sum(s.duration_ms) FILTER (WHERE s.kind = 'recall'), 0) AS recall_ms,
            coalesce(sum(s.duration_ms) FILTER (WHERE s.kind = 'model'), 0) AS model_ms,
            (array_agg(s.output -> 'tokens') FILTER (WHERE s.kind = 'recall'))[1] AS tokens
     FROM orchestrator.runs r LEFT JOIN orchestrator.run_steps s ON s.run_id = r.id
     WHERE r.conversation_id = $1 GROUP BY r.id`,
    [conversationId],
  );
  return new Map(
    rows.map((row) => [
      row.id,
      {
        recallMs: Number(row.recall_ms),
        modelMs: Number(row.model_ms),
        contextTokens: row.tokens ?? undefined,
      },
    ]),
  );
}

// What fact extraction made of the soak's turns: applied, skipped (and why) or failed.
async function readExtractions(db: pg.Client, userId: string): Promise<Record<string, number>> {
  const { rows } = await db.query<{ outcome: string; count: string }>(
    `SELECT status || coalesce(': ' || left(reason, 60), '') AS outcome, count(*) AS count
     FROM memory.extractions WHERE user_id = $1 GROUP BY 1 ORDER BY 2 DESC`,
    [userId],
  );
  return Object.fromEntries(rows.map((row) => [row.outcome, Number(row.count)]));
}

type Progress = {
  userId: string;
  stored: { conversations: number; seconds: number };
  turns: TurnRecord[];
  samples: Sample[];
  failures: SoakReport['failures'];
  // Empty until the questions at the end have been asked.
  facts: FactCheck[];
  questionTurns: TurnRecord[];
  conversationId: string | undefined;
  isComplete: boolean;
};

// The figures so far. Written after every window too, so a soak cut short (hours long on a
// shared machine) still leaves what it measured, marked as partial.
async function writeReport(db: pg.Client, progress: Progress): Promise<SoakReport> {
  const { turns, samples, facts } = progress;
  const steps = progress.conversationId
    ? await readSteps(db, progress.conversationId)
    : new Map<string, RecordedSteps>();
  for (const turn of turns) Object.assign(turn, steps.get(turn.runId) ?? {});
  const extractions = await readExtractions(db, progress.userId);
  const settled = turns.slice(WARM_UP_TURNS);
  const warmedUp = samples.find((taken) => taken.turn >= WARM_UP_TURNS);
  const last = samples.at(-1);
  const afterWarmUp = samples.filter((taken) => taken.turn >= WARM_UP_TURNS);
  // The last sample of the soak's own turns (the final one comes after the questions).
  const lastOfTurns = afterWarmUp.filter((taken) => taken.turn <= TURNS).at(-1);
  const cpuTurns = (lastOfTurns?.turn ?? 0) - (warmedUp?.turn ?? 0);
  const growth = Object.fromEntries(
    PROCESSES.map((name) => [name, growthPercent(warmedUp, last, name)]),
  );
  const trend = Object.fromEntries(
    PROCESSES.map((name) => [name, slopePer1000Turns(afterWarmUp, name)]),
  );
  const overhead = spread(settled.map((turn) => turn.overheadMs));
  const prompt = spread(turns.map((turn) => turn.promptTokens));
  const overBudget = turns.filter((turn) => turn.promptTokens > CONTEXT_TOKEN_BUDGET).length;
  const found = facts.filter((fact) => fact.places.length > 0).length;
  const watchedGrowth = WATCHED.map((name) => growth[name] ?? NaN);
  const loads = samples.map((taken) => taken.loadAverage);

  const report: SoakReport = {
    date: new Date().toISOString(),
    completedTurns: progress.isComplete ? TURNS : turns.length,
    method: [
      `The whole stack as processes (six services run from source with tsx, ${settings.DATABASE_URL ? 'a real Postgres with pgvector' : 'the embedded Postgres'}), the machine's NATS and Redis, and the fake LLM in the bench process; CONTEXT_TOKEN_BUDGET ${CONTEXT_TOKEN_BUDGET}, SUMMARY_TRIGGER_TOKENS ${SUMMARY_TRIGGER_TOKENS}, SUMMARY_KEEP_TOKENS 2000, no per-user rate or cost limit.`,
      `${MEMORIES} memories first: LoCoMo chat lines (and pairs of them), imported with POST /v1/conversations/{id}/messages/import into ${progress.stored.conversations} conversations of under ${IMPORTED_CONVERSATION_TOKENS} estimated tokens each (so none waits for a summary), dated over the two years before, in ${progress.stored.seconds} s; recall searches all of them.`,
      `Then ${TURNS} turns of one conversation through POST /v1/chat, one at a time (${PAUSE_MS} ms between them): pairs of LoCoMo lines, and the ${PLANTED_FACTS.length} planted facts at turns 2, 7, …, ${2 + (PLANTED_FACTS.length - 1) * PLANT_EVERY}; then one question per fact.`,
      'The fake answers a turn with two sentences, a summary request with the gist of each user line (at most 200 words), and a fact extraction with valid JSON: the planted fact, a fact for one filler turn in four, or no operations. Summaries and extractions thus run after the turns as they would with a real model.',
      "Turn overhead: the round trip of POST /v1/chat less the time the fake spent composing that turn's answer (well under a millisecond: what remains is the stack's own cost, including model-gateway's HTTP call to the fake). Recall and model step times are the ones each run recorded (orchestrator.run_steps).",
      "Prompt tokens: the fake's usage, a quarter of the characters of every message sent (the same estimate the memory service budgets with).",
      `A fact is in the context when its words are in the prompt the fake got for the question (the question itself aside). Resident memory (VmRSS) every ${SAMPLE_EVERY} turns; growth is from turn ${WARM_UP_TURNS} (the end of warm-up) to the last sample (at the end: after ${SETTLE_MS / 1000} s idle). Percentiles "after warm-up" leave out the first ${WARM_UP_TURNS} turns.`,
      `CPU per turn: each process's CPU time (/proc, with that of its ended children: Postgres' backends and autovacuum) from turn ${WARM_UP_TURNS} to the last turn's sample, over the turns between: the services, ${SERVERS.join(', ')} (all of the machine's processes of each), and the bench itself (the client and the fake model). It includes the ANALYZE the bench runs after each window, between turns.`,
    ],
    machine: {
      cpus: cpus().length,
      loadAverage: { start: loads[0] ?? NaN, max: Math.max(...loads), end: loads.at(-1) ?? NaN },
    },
    settings: {
      turns: TURNS,
      memories: MEMORIES,
      pauseMs: PAUSE_MS,
      contextTokenBudget: CONTEXT_TOKEN_BUDGET,
      summaryTriggerTokens: SUMMARY_TRIGGER_TOKENS,
      warmUpTurns: WARM_UP_TURNS,
      window: WINDOW,
    },
    memories: { stored: MEMORIES, ...progress.stored },
    overheadMs: {
      afterWarmUp: overhead,
      allTurns: spread(turns.map((turn) => turn.overheadMs)),
      questions: spread(progress.questionTurns.map((turn) => turn.overheadMs)),
    },
    breakdownAfterWarmUp: {
      recallMs: spread(settled.flatMap((turn) => turn.recallMs ?? [])),
      modelMs: spread(settled.flatMap((turn) => turn.modelMs ?? [])),
      restMs: spread(
        settled.map((turn) => turn.overheadMs - (turn.recallMs ?? 0) - (turn.modelMs ?? 0)),
      ),
    },
    cpuAfterWarmUp: {
      msPerTurn: cpuMsPerTurn(warmedUp?.cpuSeconds, lastOfTurns?.cpuSeconds, cpuTurns),
      wallMsPerTurn:
        cpuTurns > 0 && warmedUp && lastOfTurns
          ? Math.round(((lastOfTurns.takenAt - warmedUp.takenAt) * 10) / cpuTurns) / 10
          : NaN,
    },
    promptTokens: {
      ...prompt,
      budget: CONTEXT_TOKEN_BUDGET,
      overBudget,
      toolDefinitions: model.lastTurnToolTokens(),
    },
    sectionTokens: sectionTokensAt(turns, [10, 1_000, TURNS]),
    windows: describeWindows(turns, WINDOW),
    samples,
    growthAfterWarmUpPercent: growth,
    trendAfterWarmUpMbPer1000Turns: trend,
    facts,
    background: { ...model.counts },
    extractions,
    failures: progress.failures,
    targets: [
      {
        name: `turn overhead p95 with ${MEMORIES} memories`,
        target: `< ${OVERHEAD_P95_TARGET_MS} ms`,
        value: `${overhead.p95} ms`,
        isMet: overhead.p95 < OVERHEAD_P95_TARGET_MS,
      },
      {
        name: 'resident memory growth after warm-up (orchestrator, memory)',
        target: `< ${GROWTH_TARGET_PERCENT} %`,
        value: watchedGrowth.map((value) => `${value} %`).join(', '),
        isMet: watchedGrowth.every((value) => value < GROWTH_TARGET_PERCENT),
      },
      {
        name: 'prompt within CONTEXT_TOKEN_BUDGET',
        target: 'every turn',
        value: `max ${prompt.max} tokens, ${overBudget} turns over`,
        isMet: overBudget === 0,
      },
      {
        name: 'planted facts in the context at the end',
        target: `${PLANTED_FACTS.length} of ${PLANTED_FACTS.length}`,
        value: progress.isComplete ? `${found} of ${PLANTED_FACTS.length}` : 'not asked yet',
        isMet: found === PLANTED_FACTS.length,
      },
    ],
  };
  await mkdir(RESULTS_DIR, { recursive: true });
  await writeFile(resolve(RESULTS_DIR, 'soak.json'), `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(resolve(RESULTS_DIR, 'soak.md'), renderMarkdown(report, PROCESSES));
  return report;
}

const lines = await loadChatLines(LOCOMO_DEV);
const model = createSoakModel(PLANTED_FACTS);
const plantedAt = new Map(PLANTED_FACTS.map((fact, index) => [2 + index * PLANT_EVERY, fact]));

const fixture = await startStackFixture(
  {
    CONTEXT_TOKEN_BUDGET: String(CONTEXT_TOKEN_BUDGET),
    SUMMARY_TRIGGER_TOKENS: String(SUMMARY_TRIGGER_TOKENS),
    SUMMARY_KEEP_TOKENS: '2000',
    // Months of one user's chat pressed into minutes: the per-minute and daily limits of a user
    // would refuse most of it.
    USER_REQUESTS_PER_MINUTE: '0',
    RATE_LIMIT_PER_MINUTE: '0',
    CHAT_RATE_LIMIT_PER_MINUTE: '0',
    USER_DAILY_COST_LIMIT_USD: '0',
  },
  { databaseUrl: settings.DATABASE_URL, cpuProfileDir: settings.BENCH_CPU_PROF },
);
fixture.fake.onChat((request) => model.answer(request));
const db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
await db.connect();
try {
  const { apiKey, user } = await fixture.createUser('soak');
  process.stdout.write(`soak: storing ${MEMORIES} memories, then ${TURNS} turns\n`);
  const stored = await storeMemories(fixture, apiKey, lines);
  process.stdout.write(`  stored in ${stored.seconds} s\n`);
  await setStandingInstructions(fixture, apiKey);
  // Planner statistics as the database's own upkeep would soon have them (autovacuum, or the
  // embedded Postgres' ANALYZE after a minute of use): a soak of a few minutes would otherwise
  // run on the statistics of an empty database.
  await db.query('ANALYZE');
  await wait(SETTLE_MS);

  const progress: Progress = {
    userId: user.id,
    stored,
    turns: [],
    samples: [await sample(fixture, db, 0, user.id, undefined)],
    failures: [],
    facts: [],
    questionTurns: [],
    conversationId: undefined,
    isComplete: false,
  };
  let failedInARow = 0;

  // One turn: its overhead, prompt size and run, or undefined when it failed.
  const chat = async (turn: number, message: string): Promise<TurnRecord | undefined> => {
    const started = performance.now();
    const response = await fixture.chat(apiKey, { message });
    const text = await response.text();
    const overheadMs = performance.now() - started - model.takeTurnModelMs();
    // The fake keeps every request it got; a 10,000-turn soak would hold them all.
    fixture.fake.requests.splice(0);
    if (response.status !== 200) {
      if (progress.failures.length < 20) {
        progress.failures.push({ turn, status: response.status, body: text.slice(0, 300) });
      }
      if (++failedInARow >= 20) throw new Error(`20 turns in a row failed; the last: ${text}`);
      return undefined;
    }
    failedInARow = 0;
    const body = ChatResponse.parse(JSON.parse(text));
    progress.conversationId = body.conversationId;
    return { turn, overheadMs, promptTokens: body.usage.inputTokens, runId: body.runId };
  };

  for (let turn = 0; turn < TURNS; turn++) {
    const planted = plantedAt.get(turn);
    // Always two lines said together, paired unlike any imported memory: a message that only
    // repeats memories would be skipped by fact extraction as "nothing new".
    const filler = composeMessage(lines, lines.length + turn, 17);
    const record = await chat(turn, planted?.statement ?? filler);
    if (record) progress.turns.push(record);
    if (PAUSE_MS > 0) await wait(PAUSE_MS);
    if ((turn + 1) % SAMPLE_EVERY === 0) {
      progress.samples.push(await sample(fixture, db, turn + 1, user.id, progress.conversationId));
    }
    if ((turn + 1) % WINDOW === 0) {
      // Autovacuum would analyze a table once a tenth of it changed; a Postgres that runs
      // without it (or with 0 memories, the ANALYZE above saw empty tables) would otherwise plan
      // on ever staler statistics, and the turns drift slower over the run as the vector lookups
      // by item id come to read every one of the user's embeddings.
      await db.query('ANALYZE');
      const window = progress.turns.slice(-WINDOW);
      const recent = spread(window.map((t) => t.overheadMs));
      const last = progress.samples.at(-1);
      process.stdout.write(
        `  turns ${turn + 1 - WINDOW}-${turn}: overhead p50 ${recent.p50} ms, p95 ${recent.p95} ms; ` +
          `prompt max ${spread(window.map((t) => t.promptTokens)).max} tokens; ` +
          `rss orchestrator ${last?.residentMb.orchestrator} MB, memory ${last?.residentMb.memory} MB; load ${last?.loadAverage}\n`,
      );
      await writeReport(db, progress);
    }
  }

  for (const [index, fact] of PLANTED_FACTS.entries()) {
    const record = await chat(TURNS + index, fact.question);
    if (record) progress.questionTurns.push(record);
    progress.facts.push({
      needle: fact.needle,
      question: fact.question,
      places: record ? locateInPrompt(model.lastTurnPrompt(), fact.needle) : [],
    });
  }
  await wait(SETTLE_MS);
  progress.samples.push(
    await sample(fixture, db, TURNS + PLANTED_FACTS.length, user.id, progress.conversationId),
  );
  progress.isComplete = true;
  const report = await writeReport(db, progress);
  const load = report.machine.loadAverage;
  process.stdout.write(
    `soak of ${TURNS} turns with ${MEMORIES} memories (load average ${load.start} at the start, ${load.max} at most):\n`,
  );
  for (const target of report.targets) {
    process.stdout.write(
      `  ${target.isMet ? 'met   ' : 'MISSED'} ${target.name}: ${target.value} (target ${target.target})\n`,
    );
  }
  process.stdout.write(`  ${cpuLine(report.cpuAfterWarmUp)}\n`);
  process.stdout.write(`written to ${resolve(RESULTS_DIR, 'soak.md')} and soak.json\n`);
} finally {
  await db.end();
  await fixture.close();
}

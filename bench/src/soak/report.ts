import type { SentMessage } from '@jarvis/testkit';

// Figures and the Markdown page of the soak bench.

export type Spread = { p50: number; p95: number; max: number };

export type TurnRecord = {
  // The turn's number, from 0 (failed turns leave gaps in a list of records).
  turn: number;
  // Round trip of POST /v1/chat less the fake model's own time.
  overheadMs: number;
  // The fake's usage: a quarter of the characters of every message of the prompt.
  promptTokens: number;
  runId: string;
  // From the run's recorded steps (read once the soak is over).
  recallMs?: number;
  modelMs?: number;
  // The tokens of each part of the prompt, as the run recorded them (its recall step).
  contextTokens?: Record<string, number>;
};

export type Sample = {
  turn: number;
  // Wall clock (ms since the epoch) and each process's CPU time so far (the testkit's bench-proc.ts).
  takenAt: number;
  cpuSeconds: Record<string, number>;
  loadAverage: number;
  residentMb: Record<string, number>;
  summaries: number;
  extractions: number;
  facts: number;
};

export type FactCheck = { needle: string; question: string; places: string[] };

function round(value: number, digits = 1): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

export function spread(values: number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) =>
    round(
      sorted[Math.min(sorted.length - 1, Math.max(Math.ceil(p * sorted.length) - 1, 0))] ?? NaN,
    );
  return { p50: at(0.5), p95: at(0.95), max: at(1) };
}

export type WindowFigures = {
  from: number;
  to: number;
  overheadMs: Spread;
  recallMs: Spread;
  modelMs: Spread;
  promptTokens: Spread;
};

export function describeWindows(turns: TurnRecord[], size: number): WindowFigures[] {
  const windows: WindowFigures[] = [];
  for (let from = 0; from < turns.length; from += size) {
    const slice = turns.slice(from, from + size);
    windows.push({
      from,
      to: from + slice.length - 1,
      overheadMs: spread(slice.map((turn) => turn.overheadMs)),
      recallMs: spread(slice.flatMap((turn) => turn.recallMs ?? [])),
      modelMs: spread(slice.flatMap((turn) => turn.modelMs ?? [])),
      promptTokens: spread(slice.map((turn) => turn.promptTokens)),
    });
  }
  return windows;
}

// Relative change of each process's resident memory between two samples, in percent.
export function growthPercent(from: Sample | undefined, to: Sample | undefined, name: string) {
  const before = from?.residentMb[name];
  const after = to?.residentMb[name];
  if (before === undefined || after === undefined || before === 0) return NaN;
  return round(((after - before) / before) * 100);
}

// Least-squares slope of a process's resident memory over the samples: growth that one
// end-of-soak figure might hide behind a garbage collection, or show when it is only one.
export function slopePer1000Turns(samples: Sample[], name: string): number {
  const points = samples.flatMap((taken) => {
    const mb = taken.residentMb[name];
    return mb === undefined || Number.isNaN(mb) ? [] : [{ x: taken.turn, y: mb }];
  });
  if (points.length < 2) return NaN;
  const meanX = points.reduce((sum, p) => sum + p.x, 0) / points.length;
  const meanY = points.reduce((sum, p) => sum + p.y, 0) / points.length;
  const covariance = points.reduce((sum, p) => sum + (p.x - meanX) * (p.y - meanY), 0);
  const variance = points.reduce((sum, p) => sum + (p.x - meanX) ** 2, 0);
  return variance === 0 ? NaN : round((covariance / variance) * 1_000, 2);
}

// Where in the prompt the needle is: a section of the system message (the relevant memories by
// kind), or the recent messages. The last message is the question itself and does not count.
export function locateInPrompt(prompt: SentMessage[], needle: string): string[] {
  const has = (text: string) => text.toLowerCase().includes(needle.toLowerCase());
  const places = new Set<string>();
  for (const section of (prompt[0]?.content ?? '').split('\n\n')) {
    if (!has(section)) continue;
    if (section.startsWith('Standing instructions from the user')) places.add('instructions');
    else if (section.startsWith('What you know about the user:')) places.add('profile');
    else if (section.startsWith('Skills you can load')) places.add('skills');
    else if (section.startsWith('Current state:')) places.add('current state');
    else if (section.startsWith('Earlier in this conversation')) places.add('summary');
    else if (section.startsWith('Memories that may be relevant:')) {
      for (const line of section.split('\n').filter(has)) {
        places.add(`relevant ${/^- \[[^,\]]+, (\w+)\]/.exec(line)?.[1] ?? 'item'}`);
      }
    } else places.add('system');
  }
  if (prompt.slice(1, -1).some((message) => has(message.content))) places.add('recent messages');
  return [...places];
}

// The parts of a prompt as the orchestrator records them for each run (describeContext in
// services/orchestrator/src/services/context-budget.ts), in the prompt's order.
const PROMPT_SECTIONS: [string, string][] = [
  ['system', 'fixed text (persona, date, headings)'],
  ['instructions', 'standing instructions and rules'],
  ['profile', 'profile'],
  ['skills', 'skills index'],
  ['active', 'current state'],
  ['summaries', 'summaries'],
  ['relevant', 'recalled memories'],
  ['recent', 'recent messages'],
  ['message', 'the new message'],
  ['tools', 'tool definitions'],
];

export type SectionTokens = { turn: number; tokens: Record<string, number> };

// The recorded parts of the prompts of the given turns (counted from 1), of those that ran.
export function sectionTokensAt(turns: TurnRecord[], at: number[]): SectionTokens[] {
  return [...new Set(at)].flatMap((turn) => {
    const tokens = turns.find((record) => record.turn === turn - 1)?.contextTokens;
    return tokens ? [{ turn, tokens }] : [];
  });
}

function sectionTable(shares: SectionTokens[]): string {
  const totals = shares.map(({ tokens }) =>
    PROMPT_SECTIONS.reduce((sum, [key]) => sum + (tokens[key] ?? 0), 0),
  );
  const cell = (tokens: number, total: number) =>
    `${tokens} (${total > 0 ? round((tokens / total) * 100) : 0} %)`;
  return table(
    ['section', ...shares.map(({ turn }) => `turn ${turn}`)],
    [
      ...PROMPT_SECTIONS.map(([key, name]) => [
        name,
        ...shares.map(({ tokens }, index) => cell(tokens[key] ?? 0, totals[index] ?? 0)),
      ]),
      ['all', ...totals.map((total) => `${total}`)],
    ],
  );
}

export type SoakReport = {
  date: string;
  // Fewer than settings.turns when the run was cut short (the report is written as it goes).
  completedTurns: number;
  method: string[];
  machine: { cpus: number; loadAverage: { start: number; max: number; end: number } };
  settings: {
    turns: number;
    memories: number;
    pauseMs: number;
    contextTokenBudget: number;
    summaryTriggerTokens: number;
    warmUpTurns: number;
    window: number;
  };
  memories: { stored: number; conversations: number; seconds: number };
  overheadMs: { afterWarmUp: Spread; allTurns: Spread; questions: Spread };
  breakdownAfterWarmUp: { recallMs: Spread; modelMs: Spread; restMs: Spread };
  // Between the warm-up's end and the last turn's sample: each process's CPU per turn, and the
  // wall time a turn took (CPU per turn over it: the cores kept busy).
  cpuAfterWarmUp: { msPerTurn: Record<string, number>; wallMsPerTurn: number };
  promptTokens: Spread & { budget: number; overBudget: number; toolDefinitions: number };
  // Each section's tokens in the prompts of a few turns (the 10th, the 1,000th, the last).
  sectionTokens: SectionTokens[];
  windows: WindowFigures[];
  samples: Sample[];
  growthAfterWarmUpPercent: Record<string, number>;
  trendAfterWarmUpMbPer1000Turns: Record<string, number>;
  facts: FactCheck[];
  background: Record<string, number>;
  extractions: Record<string, number>;
  failures: { turn: number; status: number; body: string }[];
  targets: { name: string; target: string; value: string; isMet: boolean }[];
};

function table(head: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

export function renderMarkdown(report: SoakReport, processes: readonly string[]): string {
  const s = report.settings;
  return [
    '# Orchestrator soak',
    '',
    ...(report.completedTurns < s.turns
      ? [
          `**Partial: ${report.completedTurns} of ${s.turns} turns so far (written as the run goes; a run cut short stops here).**`,
          '',
        ]
      : []),
    `${report.date}; ${report.machine.cpus} CPUs, load average ${report.machine.loadAverage.start} at the start, ${report.machine.loadAverage.max} at most, ${report.machine.loadAverage.end} at the end (other work on the machine shares it).`,
    '',
    '## Method',
    '',
    ...report.method.map((line) => `- ${line}`),
    '',
    '## Targets',
    '',
    table(
      ['what', 'target', 'measured', ''],
      report.targets.map((t) => [t.name, t.target, t.value, t.isMet ? 'met' : 'missed']),
    ),
    '',
    '## Turn overhead (ms)',
    '',
    table(
      ['turns', 'p50', 'p95', 'max'],
      [
        [
          `after warm-up (${s.warmUpTurns}–${s.turns - 1})`,
          ...spreadCells(report.overheadMs.afterWarmUp),
        ],
        [`all ${s.turns}`, ...spreadCells(report.overheadMs.allTurns)],
        [
          `the ${report.facts.length} questions at the end`,
          ...spreadCells(report.overheadMs.questions),
        ],
        [
          'recall step (memory.recall), after warm-up',
          ...spreadCells(report.breakdownAfterWarmUp.recallMs),
        ],
        [
          'model step (model-gateway + fake), after warm-up',
          ...spreadCells(report.breakdownAfterWarmUp.modelMs),
        ],
        [
          'the rest (gateway, queue, run records, reply), after warm-up',
          ...spreadCells(report.breakdownAfterWarmUp.restMs),
        ],
      ],
    ),
    '',
    cpuLine(report.cpuAfterWarmUp),
    '',
    `Per window of ${s.window} turns (drift):`,
    '',
    table(
      [
        'turns',
        'overhead p50',
        'overhead p95',
        'recall p50',
        'recall p95',
        'model p50',
        'prompt tokens max',
      ],
      report.windows.map((w) => [
        `${w.from}–${w.to}`,
        w.overheadMs.p50,
        w.overheadMs.p95,
        w.recallMs.p50,
        w.recallMs.p95,
        w.modelMs.p50,
        w.promptTokens.max,
      ]),
    ),
    '',
    '## Prompt size',
    '',
    `Prompt tokens per turn (the fake's usage: a quarter of the characters of every message): p50 ${report.promptTokens.p50}, p95 ${report.promptTokens.p95}, max ${report.promptTokens.max}; CONTEXT_TOKEN_BUDGET ${report.promptTokens.budget}; turns over it: ${report.promptTokens.overBudget}. The tool definitions sent with each turn add about ${report.promptTokens.toolDefinitions} tokens outside the budget.`,
    '',
    'Tokens of each section of the prompt, and its share of the whole, as the runs recorded them (orchestrator.run_steps, the recall step; the tool definitions as the orchestrator counted them):',
    '',
    report.sectionTokens.length > 0 ? sectionTable(report.sectionTokens) : 'Not recorded.',
    '',
    '## Facts planted in the first 100 turns, asked about at the end',
    '',
    table(
      ['needle', 'question', 'in the prompt'],
      report.facts.map((f) => [
        f.needle,
        f.question,
        f.places.length > 0 ? f.places.join(', ') : '**no**',
      ]),
    ),
    '',
    '## Resident memory (MB) and background work',
    '',
    table(
      ['after turn', 'load', ...processes, 'summaries', 'extractions', 'valid facts'],
      report.samples.map((sample) => [
        sample.turn,
        sample.loadAverage,
        ...processes.map((name) => sample.residentMb[name] ?? NaN),
        sample.summaries,
        sample.extractions,
        sample.facts,
      ]),
    ),
    '',
    `Growth after warm-up (turn ${s.warmUpTurns} to the end, idle): ${Object.entries(
      report.growthAfterWarmUpPercent,
    )
      .map(([name, value]) => `${name} ${value} %`)
      .join(
        ', ',
      )}. Trend over the samples after warm-up (least squares, MB per 1,000 turns): ${Object.entries(
      report.trendAfterWarmUpMbPer1000Turns,
    )
      .map(([name, value]) => `${name} ${value}`)
      .join(', ')}.`,
    '',
    `Model requests answered by the fake: ${Object.entries(report.background)
      .map(([kind, count]) => `${kind} ${count}`)
      .join(', ')}. Fact extraction per turn: ${Object.entries(report.extractions)
      .map(([outcome, count]) => `${outcome} ${count}`)
      .join(', ')}. Failed turns: ${report.failures.length}.`,
    '',
  ].join('\n');
}

export function cpuLine(cpu: SoakReport['cpuAfterWarmUp']): string {
  const entries = Object.entries(cpu.msPerTurn);
  if (entries.length === 0) return 'CPU per turn: not measured (no /proc).';
  const total = entries.reduce((sum, [, ms]) => sum + ms, 0);
  return `CPU per turn after warm-up (ms; each process's CPU time, with that of its ended children): ${entries
    .map(([name, ms]) => `${name} ${ms}`)
    .join(
      ', ',
    )}; ${round(total)} in all, for a turn every ${cpu.wallMsPerTurn} ms (${round(total / cpu.wallMsPerTurn, 2)} cores busy).`;
}

function spreadCells(value: Spread): number[] {
  return [value.p50, value.p95, value.max];
}

import { type Bus, describeZodError } from '@jarvis/bus';
import {
  type ChatMessage,
  type ExtractionRequested,
  FACT_SOURCE_MESSAGES_MAX,
  type Fact,
  FactCategory,
  FactContent,
  FactImportance,
  FactTags,
  Id,
  modelChat,
} from '@jarvis/contracts';
import { type Pool, type PoolClient, withTransaction } from '@jarvis/db';
import { z } from 'zod';
import { documentSource } from '../repositories/documents-repository';
import {
  type ExtractionStatus,
  hasExtraction,
  insertExtraction,
  setExtractionOperations,
} from '../repositories/extractions-repository';
import { factSource, lockFact } from '../repositories/facts-repository';
import { findMessageTexts, type MessageText } from '../repositories/messages-repository';
import { messageSource } from '../repositories/search-repository';
import { summarySource } from '../repositories/summaries-repository';
import { readTerms } from '../repositories/terms-repository';
import { invalidateFact, storeFact } from './facts-service';
import type { ExtractionOutcome } from './memory-metrics';
import { parseRememberCommand } from './remember-command';
import { searchMemory } from './search-service';

export type ExtractionSettings = {
  // Longest wait for one answer of the utility model.
  modelTimeoutMs: number;
};

// Existing facts the model compares candidates with; the only ones it may update or invalidate.
const SIMILAR_FACTS = 8;
// A message with fewer terms ("ok thanks", "sounds good") carries no fact worth a model call.
const MIN_TERMS = 3;
const MAX_OPERATIONS = 10;
// Keeps the utility call small: a pasted document is not mined line by line here.
const TURN_TEXT_MAX_CHARS = 4_000;
const RECALLED_TEXT_MAX_CHARS = 300;
// memory.search takes queries up to this long.
const SEARCH_QUERY_MAX_CHARS = 2_000;
// The kinds recall puts into a prompt.
const RECALLED_SOURCES = [messageSource, factSource, summarySource, documentSource];

const INSTRUCTIONS = `You keep the long-term memory of a personal assistant. From one turn of a conversation, pick out the facts about the user or their world that are worth keeping for months: who they are, where they live and work, the people, places and things in their life, their preferences, decisions, plans and commitments. Skip small talk, questions, passing moods, and anything the assistant said that the user did not confirm.

Compare each candidate with the numbered existing facts and choose one operation:
- "add": it is new. Write it as one short sentence that stands on its own ("The user works as a nurse.").
- "update": it changes or refines an existing fact. Give that fact's id and the complete new sentence.
- "invalidate": it shows that an existing fact is no longer true, with nothing to replace it. Give that fact's id.
- "noop": it is already known.
Never add anything listed under "Already recalled": the assistant knows it already. Use only ids of the existing facts.

Categories: fact, preference, decision, insight, reminder, profile (profile: name, home, work, family; what should always be at hand). Importance from 1 to 10: 1 trivial, 5 useful, 10 essential.

Answer with only this JSON object, no other text:
{"operations": [
  {"op": "add", "content": "...", "category": "fact", "importance": 5, "tags": ["..."]},
  {"op": "update", "factId": "<id>", "content": "...", "category": "fact", "importance": 5, "tags": ["..."]},
  {"op": "invalidate", "factId": "<id>", "reason": "..."},
  {"op": "noop"}
]}
At most ${MAX_OPERATIONS} operations. Tags are optional; an update may leave out category, importance and tags. With nothing worth keeping, answer {"operations": []}.`;

const FactOperation = z.discriminatedUnion('op', [
  z.strictObject({
    op: z.literal('add'),
    content: FactContent,
    category: FactCategory,
    importance: FactImportance,
    tags: FactTags.optional(),
  }),
  z.strictObject({
    op: z.literal('update'),
    factId: Id,
    content: FactContent,
    category: FactCategory.optional(),
    importance: FactImportance.optional(),
    tags: FactTags.optional(),
  }),
  z.strictObject({
    op: z.literal('invalidate'),
    factId: Id,
    reason: z.string().max(500).optional(),
  }),
  z.strictObject({ op: z.literal('noop') }),
]);
type FactOperation = z.output<typeof FactOperation>;

const ExtractionAnswer = z.strictObject({
  operations: z.array(FactOperation).max(MAX_OPERATIONS),
});

type ParsedAnswer = { ok: true; operations: FactOperation[] } | { ok: false; problem: string };

// What was done with one operation; ignored ones say why. Stored in memory.extractions.
type AppliedOperation = {
  op: FactOperation['op'];
  factId?: string;
  newFactId?: string;
  content?: string;
  reason?: string;
  ignored?: string;
};

type KnownItem = { id: string; text: string };

// Models like to wrap JSON in a Markdown fence even when told not to.
const FENCED = /^\s*```[a-z]*\s*\n?([\s\S]*?)\s*```\s*$/i;

// A finished turn's two messages, as its extraction job and its episode read them.
export type TurnTexts = { request: MessageText; reply: MessageText };

// Read once for both, in one statement. Undefined when either message is gone.
export async function readTurn(
  pool: Pool,
  job: ExtractionRequested,
): Promise<TurnTexts | undefined> {
  const texts = await findMessageTexts(pool, job.userId, [job.userMessageId, job.replyMessageId]);
  const request = texts.get(job.userMessageId);
  const reply = texts.get(job.replyMessageId);
  return request && reply ? { request, reply } : undefined;
}

// Looks for facts worth keeping in one finished turn and applies them. Throws only when the
// model or the database cannot be reached, so the job is tried again later; an unusable answer
// is recorded as failed instead. Returns what it did, for the metrics: nothing when the turn was
// already done (a redelivery).
export async function extractFacts(
  bus: Bus,
  pool: Pool,
  settings: ExtractionSettings,
  job: ExtractionRequested,
  turn: TurnTexts | undefined,
): Promise<ExtractionOutcome[]> {
  if (await hasExtraction(pool, job.runId)) return [];
  if (!turn) {
    await recordOutcome(pool, job, 'skipped', 'the messages of the turn are gone');
    return ['skipped'];
  }
  const userText = turn.request.content;
  const replyText = turn.reply.content;
  const ownMessages = new Set([job.userMessageId, job.replyMessageId]);
  const [recalled, similar] = await Promise.all([
    loadRecalled(
      pool,
      job.userId,
      job.recalledIds.filter((id) => !ownMessages.has(id)),
    ),
    findSimilarFacts(pool, job.userId, userText),
  ]);
  // What a "remember that …" stored already counts as known, so that turn needs no model call.
  const said = parseRememberCommand(userText) ?? userText;
  const knownTexts = [...recalled, ...similar].map((item) => item.text);
  const [saidTerms = [], ...knownTerms] = await readTerms(pool, [said, ...knownTexts]);
  if (!hasSomethingNew(saidTerms, knownTerms)) {
    await recordOutcome(pool, job, 'skipped', 'nothing new');
    return ['skipped'];
  }

  const prompt: ChatMessage[] = [
    { role: 'system', content: INSTRUCTIONS },
    { role: 'user', content: describeTurn(userText, replyText, similar, recalled) },
  ];
  const answer = await askForOperations(bus, settings, job.userId, prompt);
  if (!answer.ok) {
    bus.logger.warn(
      { runId: job.runId, turnId: job.turnId, problem: answer.problem },
      'fact extraction gave an unusable answer twice; skipping the turn',
    );
    await recordOutcome(pool, job, 'failed', `unusable model answer: ${answer.problem}`);
    return ['failed'];
  }
  const applied = await applyOperations(pool, job, answer.operations, similar, recalled);
  return applied.map((operation) => (operation.ignored ? 'noop' : operation.op));
}

// The last delivery failed too: leave a trace of why this turn has no extraction.
export async function recordExtractionGaveUp(
  pool: Pool,
  job: ExtractionRequested,
  error: unknown,
): Promise<void> {
  const cause = error instanceof Error ? error.message : 'unknown error';
  await recordOutcome(pool, job, 'failed', `gave up: ${cause}`);
}

// False when the message (its terms) is too short to hold a fact, or every term of it is in
// memories the turn already showed or in the facts closest to it.
export function hasSomethingNew(messageTerms: string[], knownTerms: string[][]): boolean {
  const terms = new Set(messageTerms);
  if (terms.size < MIN_TERMS) return false;
  const known = new Set(knownTerms.flat());
  return [...terms].some((term) => !known.has(term));
}

export function parseExtractionAnswer(text: string): ParsedAnswer {
  const body = FENCED.exec(text)?.[1] ?? text;
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { ok: false, problem: 'the answer is not valid JSON' };
  }
  const result = ExtractionAnswer.safeParse(json);
  if (!result.success) return { ok: false, problem: describeZodError(result.error) };
  return { ok: true, operations: result.data.operations };
}

async function recordOutcome(
  pool: Pool,
  job: ExtractionRequested,
  status: ExtractionStatus,
  reason: string,
): Promise<void> {
  await insertExtraction(pool, {
    runId: job.runId,
    userId: job.userId,
    status,
    operations: [],
    reason,
  });
}

// In the order the prompt showed them; memories deleted since are left out.
async function loadRecalled(pool: Pool, userId: string, ids: string[]): Promise<KnownItem[]> {
  if (ids.length === 0) return [];
  const lists = await Promise.all(RECALLED_SOURCES.map((source) => source.load(pool, userId, ids)));
  const byId = new Map(lists.flat().map((item) => [item.id, { id: item.id, text: item.text }]));
  return ids.flatMap((id) => {
    const item = byId.get(id);
    return item ? [item] : [];
  });
}

async function findSimilarFacts(pool: Pool, userId: string, text: string): Promise<KnownItem[]> {
  const { results } = await searchMemory(pool, {
    userId,
    query: text.slice(0, SEARCH_QUERY_MAX_CHARS),
    kinds: ['fact'],
    limit: SIMILAR_FACTS,
    isQueryDateIgnored: true,
  });
  return results.map((result) => ({ id: result.id, text: result.text }));
}

function describeTurn(
  userText: string,
  replyText: string,
  similar: KnownItem[],
  recalled: KnownItem[],
): string {
  const facts = similar.map((fact, index) => `${index + 1}. [id ${fact.id}] ${fact.text}`);
  const known = recalled.map((item) => `- ${clip(item.text, RECALLED_TEXT_MAX_CHARS)}`);
  return [
    'The turn:',
    `User: ${clip(userText, TURN_TEXT_MAX_CHARS)}`,
    `Assistant: ${clip(replyText, TURN_TEXT_MAX_CHARS)}`,
    '',
    'Existing facts:',
    ...(facts.length > 0 ? facts : ['(none)']),
    '',
    'Already recalled:',
    ...(known.length > 0 ? known : ['(none)']),
  ].join('\n');
}

function clip(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars)}…`;
}

async function askForOperations(
  bus: Bus,
  settings: ExtractionSettings,
  userId: string,
  prompt: ChatMessage[],
): Promise<ParsedAnswer> {
  const first = await askUtilityModel(bus, settings, userId, prompt);
  const parsed = parseExtractionAnswer(first);
  if (parsed.ok) return parsed;
  // One second chance: small models often wrap the JSON in prose or miss a field, and fix it
  // once told what is wrong.
  const second = await askUtilityModel(bus, settings, userId, [
    ...prompt,
    { role: 'assistant', content: first || '(empty answer)' },
    {
      role: 'user',
      content: `That answer cannot be used: ${parsed.problem}. Answer again with only the JSON object described above.`,
    },
  ]);
  return parseExtractionAnswer(second);
}

async function askUtilityModel(
  bus: Bus,
  settings: ExtractionSettings,
  userId: string,
  messages: ChatMessage[],
): Promise<string> {
  const { content } = await bus.request(
    modelChat,
    { purpose: 'utility', userId, temperature: 0, messages },
    { timeoutMs: settings.modelTimeoutMs },
  );
  return content;
}

type ApplyContext = {
  db: PoolClient;
  userId: string;
  // Provenance of what this turn adds: its two messages.
  sourceMessageIds: string[];
  // The facts the model was shown: the only ones it may change, whatever ids it writes.
  shownFactIds: Set<string>;
  // Normalised texts already known, so a recalled memory is never stored again as new.
  knownTexts: Set<string>;
};

// All or nothing, together with the run's row: a redelivered job finds the row and does nothing.
async function applyOperations(
  pool: Pool,
  job: ExtractionRequested,
  operations: FactOperation[],
  similar: KnownItem[],
  recalled: KnownItem[],
): Promise<AppliedOperation[]> {
  return withTransaction(pool, async (db) => {
    const isFirst = await insertExtraction(db, {
      runId: job.runId,
      userId: job.userId,
      status: 'done',
      operations: [],
      reason: null,
    });
    if (!isFirst) return [];
    const context: ApplyContext = {
      db,
      userId: job.userId,
      sourceMessageIds: [job.userMessageId, job.replyMessageId],
      shownFactIds: new Set(similar.map((fact) => fact.id)),
      knownTexts: new Set([...similar, ...recalled].map((item) => normalise(item.text))),
    };
    const applied: AppliedOperation[] = [];
    for (const operation of operations) applied.push(await applyOperation(context, operation));
    await setExtractionOperations(db, job.runId, applied);
    return applied;
  });
}

async function applyOperation(
  context: ApplyContext,
  operation: FactOperation,
): Promise<AppliedOperation> {
  switch (operation.op) {
    case 'noop':
      return { op: 'noop' };
    case 'add':
      return addFact(context, operation);
    case 'update':
      return supersedeFact(context, operation);
    case 'invalidate':
      return closeShownFact(context, operation);
  }
}

async function addFact(
  context: ApplyContext,
  operation: Extract<FactOperation, { op: 'add' }>,
): Promise<AppliedOperation> {
  const text = normalise(operation.content);
  if (context.knownTexts.has(text)) {
    return { op: 'add', content: operation.content, ignored: 'already known' };
  }
  context.knownTexts.add(text);
  const fact = await storeFact(context.db, context.userId, {
    category: operation.category,
    content: operation.content,
    tags: operation.tags ?? [],
    importance: operation.importance,
    sourceMessageIds: context.sourceMessageIds,
  });
  return { op: 'add', factId: fact.id, content: fact.content };
}

// Like a user's update: the successor keeps what the model leaves out, and the old version is
// closed and points to it.
async function supersedeFact(
  context: ApplyContext,
  operation: Extract<FactOperation, { op: 'update' }>,
): Promise<AppliedOperation> {
  const target = await lockShownFact(context, operation.factId);
  if ('ignored' in target) {
    return { op: 'update', factId: operation.factId, content: operation.content, ...target };
  }
  const current = target.fact;
  const category = operation.category ?? current.category;
  const importance = operation.importance ?? current.importance;
  const isUnchanged =
    normalise(operation.content) === normalise(current.content) &&
    category === current.category &&
    importance === current.importance &&
    operation.tags === undefined;
  if (isUnchanged) return { op: 'update', factId: current.id, ignored: 'nothing changes' };
  context.knownTexts.add(normalise(operation.content));
  const successor = await storeFact(context.db, context.userId, {
    category,
    content: operation.content,
    tags: operation.tags ?? current.tags,
    importance,
    // The newest provenance wins when a long-lived fact has been updated many times.
    sourceMessageIds: [
      ...new Set([...current.sourceMessageIds, ...context.sourceMessageIds]),
    ].slice(-FACT_SOURCE_MESSAGES_MAX),
  });
  await invalidateFact(context.db, context.userId, current.id, successor.id);
  return { op: 'update', factId: current.id, newFactId: successor.id, content: successor.content };
}

async function closeShownFact(
  context: ApplyContext,
  operation: Extract<FactOperation, { op: 'invalidate' }>,
): Promise<AppliedOperation> {
  const target = await lockShownFact(context, operation.factId);
  if ('ignored' in target) return { op: 'invalidate', factId: operation.factId, ...target };
  await invalidateFact(context.db, context.userId, target.fact.id, null);
  return {
    op: 'invalidate',
    factId: target.fact.id,
    ...(operation.reason === undefined ? {} : { reason: operation.reason }),
  };
}

async function lockShownFact(
  context: ApplyContext,
  factId: string,
): Promise<{ fact: Fact } | { ignored: string }> {
  if (!context.shownFactIds.has(factId)) return { ignored: 'not one of the facts shown' };
  const fact = await lockFact(context.db, context.userId, factId);
  if (!fact || fact.validTo !== null) return { ignored: 'no longer valid' };
  return { fact };
}

// Case, punctuation and spacing do not make a fact new; words (even "not") do.
function normalise(text: string): string {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).join(' ');
}

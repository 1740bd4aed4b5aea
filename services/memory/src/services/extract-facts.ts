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
  Timestamp,
} from '@jarvis/contracts';
import { type Pool, type PoolClient, withTransaction } from '@jarvis/db';
import { z } from 'zod';
import { documentSource } from '../repositories/documents-repository';
import {
  type ExtractionStatus,
  hasExtraction,
  insertExtraction,
  setExtractionOperations,
  setExtractionTurn,
} from '../repositories/extractions-repository';
import { factSource, lockFact } from '../repositories/facts-repository';
import { findMessageTexts, type MessageText } from '../repositories/messages-repository';
import { messageSource } from '../repositories/search-repository';
import { summarySource } from '../repositories/summaries-repository';
import { readTerms } from '../repositories/terms-repository';
import { type AppliedOperation, operationOfStored, replacedEnd } from './extractions-service';
import { normaliseFactText } from './fact-text';
import { invalidateFact, isOpen, storeFact, storeFactVersion } from './facts-service';
import type { ExtractionOutcome } from './memory-metrics';
import { parseValidUntil } from './query-dates';
import { LONG_REFERENT_CHARS, parseRememberCommand } from './remember-command';
import { searchMemory } from './search-service';
import { askUtilityModel, readJsonAnswer, type UtilityModelSettings } from './utility-model';

export type ExtractionSettings = UtilityModelSettings;

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

A fact that holds only for a while ("I'm in Berlin until Friday", "this week I work from home") gets "validTo": when it stops holding, as an ISO 8601 time with offset, read from the current time given with the turn. Leave it out for anything that lasts.

Answer with only this JSON object, no other text:
{"operations": [
  {"op": "add", "content": "...", "category": "fact", "importance": 5, "tags": ["..."], "validTo": "2026-01-09T00:00:00+01:00"},
  {"op": "update", "factId": "<id>", "content": "...", "category": "fact", "importance": 5, "tags": ["..."]},
  {"op": "invalidate", "factId": "<id>", "reason": "..."},
  {"op": "noop"}
]}
At most ${MAX_OPERATIONS} operations. Tags and validTo are optional; an update may leave out category, importance and tags. With nothing worth keeping, answer {"operations": []}.`;

// Standing rules come only from the user, or from a proposal the user approved.
const ExtractedCategory = FactCategory.exclude(['rule']);

const FactOperation = z.discriminatedUnion('op', [
  z.strictObject({
    op: z.literal('add'),
    content: FactContent,
    category: ExtractedCategory,
    importance: FactImportance,
    tags: FactTags.optional(),
    validTo: Timestamp.optional(),
  }),
  z.strictObject({
    op: z.literal('update'),
    factId: Id,
    content: FactContent,
    category: ExtractedCategory.optional(),
    importance: FactImportance.optional(),
    tags: FactTags.optional(),
    validTo: Timestamp.optional(),
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

type KnownItem = { id: string; text: string };

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
  const [recalled, similar, condensed] = await Promise.all([
    loadRecalled(
      pool,
      job.userId,
      job.recalledIds.filter((id) => !ownMessages.has(id)),
    ),
    findSimilarFacts(pool, job.userId, userText),
    condenseRemembered(bus, pool, settings, job),
  ]);
  // The condensed fact replaces the clipped one that the command stored, like any update.
  const shown = condensed ? [...similar, condensed.fact] : similar;
  const before = condensed ? [condensed.operation] : [];
  const finish = async (operations: FactOperation[]) => {
    const applied = await applyOperations(pool, job, operations, shown, recalled);
    return applied.map(
      (operation): ExtractionOutcome => (operation.ignored ? 'noop' : operation.op),
    );
  };
  // What a "remember that …" stored already counts as known, so that turn needs no model call.
  const said = parseRememberCommand(userText) ?? userText;
  const knownTexts = [...recalled, ...similar].map((item) => item.text);
  const [saidTerms = [], ...knownTerms] = await readTerms(pool, [said, ...knownTexts]);
  if (!hasSomethingNew(saidTerms, knownTerms)) {
    if (condensed) return finish(before);
    await recordOutcome(pool, job, 'skipped', 'nothing new');
    return ['skipped'];
  }

  const now = describeNow(new Date(), job.timeZone ?? 'UTC');
  const prompt: ChatMessage[] = [
    { role: 'system', content: INSTRUCTIONS },
    { role: 'user', content: describeTurn(userText, replyText, similar, recalled, now) },
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
  return finish([...before, ...answer.operations]);
}

const CONDENSE_INSTRUCTIONS = `The user asked a personal assistant to remember a message. Write what is worth remembering from it as one to three short sentences that stand on their own, about the user or their world ("The user's landlord is Maria Costa; rent is due on the 3rd."). Keep names, numbers and dates exactly. Answer with only this JSON object: {"fact": "..."}`;

const CondensedAnswer = z.strictObject({ fact: FactContent });

// "remember this" after a long message stored the message clipped, at once; here the utility
// model condenses it, and the turn's extraction updates the stored fact. The row of the command
// learns its turn here too. Without an answer from the model the clipped text stays.
async function condenseRemembered(
  bus: Bus,
  pool: Pool,
  settings: ExtractionSettings,
  job: ExtractionRequested,
): Promise<{ fact: KnownItem; operation: FactOperation } | undefined> {
  const command = await setExtractionTurn(pool, job.userId, job.userMessageId, job.turnId);
  const stored = (command?.operations ?? []) as AppliedOperation[];
  const remembered = stored.find(
    (operation) => operation.op === 'add' && operation.referentMessageId,
  );
  if (!remembered?.factId || !remembered.referentMessageId) return undefined;
  const referent = (await findMessageTexts(pool, job.userId, [remembered.referentMessageId])).get(
    remembered.referentMessageId,
  );
  if (!referent || referent.content.length <= LONG_REFERENT_CHARS) return undefined;
  const content = await askToCondense(bus, settings, job, referent.content);
  if (!content) return undefined;
  return {
    fact: { id: remembered.factId, text: remembered.content ?? '' },
    operation: { op: 'update', factId: remembered.factId, content },
  };
}

async function askToCondense(
  bus: Bus,
  settings: ExtractionSettings,
  job: ExtractionRequested,
  text: string,
): Promise<string | undefined> {
  try {
    const answer = await askUtilityModel(bus, settings, job.userId, [
      { role: 'system', content: CONDENSE_INSTRUCTIONS },
      { role: 'user', content: clip(text, TURN_TEXT_MAX_CHARS) },
    ]);
    const parsed = CondensedAnswer.safeParse(readJsonAnswer(answer));
    return parsed.success ? parsed.data.fact : undefined;
  } catch (error) {
    bus.logger.warn({ err: error, turnId: job.turnId }, 'could not condense a remembered message');
    return undefined;
  }
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
  const json = readJsonAnswer(text);
  if (json === undefined) return { ok: false, problem: 'the answer is not valid JSON' };
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
    turnId: job.turnId,
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
  now: string,
): string {
  const facts = similar.map((fact, index) => `${index + 1}. [id ${fact.id}] ${fact.text}`);
  const known = recalled.map((item) => `- ${clip(item.text, RECALLED_TEXT_MAX_CHARS)}`);
  return [
    `Current time: ${now}`,
    '',
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

// The time in the user's zone with its offset, so the model can write validTo in it.
function describeNow(now: Date, timeZone: string): string {
  const local = now.toLocaleString('en-GB', { timeZone, dateStyle: 'full', timeStyle: 'short' });
  return `${local} (${timeZone}, ${now.toISOString()} in UTC)`;
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
  // For the ends that facts say in words ("until Friday"), on the user's calendar.
  now: Date;
  timeZone: string;
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
      turnId: job.turnId,
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
      knownTexts: new Set([...similar, ...recalled].map((item) => normaliseFactText(item.text))),
      now: new Date(),
      timeZone: job.timeZone ?? 'UTC',
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
  const text = normaliseFactText(operation.content);
  const end = validUntil(context, operation);
  // A known text with an end goes on to storeFact, which gives the known fact that end.
  if (context.knownTexts.has(text) && !end.validTo) {
    return { op: 'add', content: operation.content, ignored: 'already known' };
  }
  context.knownTexts.add(text);
  const stored = await storeFact(context.db, context.userId, {
    category: operation.category,
    content: operation.content,
    tags: operation.tags ?? [],
    importance: operation.importance,
    sourceMessageIds: context.sourceMessageIds,
    ...end,
  });
  const { fact, isDuplicate, supersedes } = stored;
  // Known, but now with a later end: the known fact was updated, and undoing the extraction
  // puts it back as it was.
  if (supersedes) return operationOfStored(stored);
  if (isDuplicate)
    return { op: 'add', factId: fact.id, content: fact.content, ignored: 'already known' };
  return { op: 'add', factId: fact.id, content: fact.content };
}

// The model's end if it gave one, else the one the fact's words name; none for a lasting fact.
// An end already past would store a fact that was never current.
function validUntil(
  context: ApplyContext,
  operation: { content: string; validTo?: string | undefined },
): { validTo?: Date } {
  const validTo = operation.validTo
    ? new Date(operation.validTo)
    : parseValidUntil(operation.content, context.now, context.timeZone);
  return validTo && validTo > context.now ? { validTo } : {};
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
    normaliseFactText(operation.content) === normaliseFactText(current.content) &&
    category === current.category &&
    importance === current.importance &&
    operation.tags === undefined &&
    operation.validTo === undefined;
  if (isUnchanged) return { op: 'update', factId: current.id, ignored: 'nothing changes' };
  context.knownTexts.add(normaliseFactText(operation.content));
  const successor = await storeFactVersion(context.db, context.userId, {
    category,
    content: operation.content,
    tags: operation.tags ?? current.tags,
    importance,
    // The newest provenance wins when a long-lived fact has been updated many times.
    sourceMessageIds: [
      ...new Set([...current.sourceMessageIds, ...context.sourceMessageIds]),
    ].slice(-FACT_SOURCE_MESSAGES_MAX),
    ...validUntil(context, operation),
  });
  await invalidateFact(context.db, context.userId, current.id, successor.id);
  return {
    op: 'update',
    factId: current.id,
    newFactId: successor.id,
    content: successor.content,
    ...replacedEnd(current),
  };
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
    content: target.fact.content,
    ...replacedEnd(target.fact),
    ...(operation.reason === undefined ? {} : { reason: operation.reason }),
  };
}

async function lockShownFact(
  context: ApplyContext,
  factId: string,
): Promise<{ fact: Fact } | { ignored: string }> {
  if (!context.shownFactIds.has(factId)) return { ignored: 'not one of the facts shown' };
  const fact = await lockFact(context.db, context.userId, factId);
  if (!fact || !isOpen(fact)) return { ignored: 'no longer valid' };
  return { fact };
}

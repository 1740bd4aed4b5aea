import { BusError } from '@jarvis/bus';
import {
  FACT_HISTORY_MAX,
  FACT_SOURCE_MESSAGES_MAX,
  type Fact,
  type MemoryFactsForgetRequest,
  type MemoryFactsForgetResponse,
  type MemoryFactsGetRequest,
  type MemoryFactsGetResponse,
  type MemoryFactsListRequest,
  type MemoryFactsListResponse,
  type MemoryFactsRememberRequest,
  type MemoryFactsRememberResponse,
  type MemoryFactsUpdateRequest,
  type MemoryFactsUpdateResponse,
} from '@jarvis/contracts';
import { type Pool, type PoolClient, withTransaction } from '@jarvis/db';
import { countTermsByItem, embedDocument, LOCAL_EMBEDDING_MODEL } from '@jarvis/embeddings';
import type { z } from 'zod';
import { upsertLocalEmbeddings } from '../repositories/embeddings-repository';
import {
  closeFact,
  countOwnMessages,
  deleteFactEmbeddings,
  type FactFields,
  findFact,
  insertFact,
  listFactsLike,
  listMatchingFacts,
  listOlderVersions,
  lockFact,
  lockUserFacts,
  reinforceFact,
} from '../repositories/facts-repository';
import { addTermCounts, removeTermCounts } from '../repositories/term-stats-repository';
import { readTerms } from '../repositories/terms-repository';
import { recordRememberedByTool } from './extractions-service';
import { isSameFact } from './fact-text';
import { ensureRuleFits } from './instructions-service';

type ListRequest = z.output<typeof MemoryFactsListRequest>;
type GetRequest = z.output<typeof MemoryFactsGetRequest>;
type RememberRequest = z.output<typeof MemoryFactsRememberRequest>;
type UpdateRequest = z.output<typeof MemoryFactsUpdateRequest>;
type ForgetRequest = z.output<typeof MemoryFactsForgetRequest>;

// A missing fact and another user's answer the same, so ids never leak.
function factNotFound(): BusError {
  return new BusError('not_found', 'fact not found');
}

// The open facts a new one is compared with: a repeat shares most of its terms, so it ranks
// among the first few that do.
const DUPLICATE_CANDIDATES = 5;

export type StoredFact = {
  fact: Fact;
  isDuplicate: boolean;
  // The known version `fact` succeeds, as it was before it was closed: the repeat gave the
  // known fact a later end.
  supersedes?: Fact;
};

// The one way a new fact is stored (the remember command, the remember tool, extraction, the
// API), so that one fact told through several of them is stored once: an open fact that says
// the same is answered instead, told again (its importance the higher of the two). The user's
// facts are locked until the transaction ends, so two of these at once take turns and the
// second finds the first's row. A rule is compared with rules only, and other facts with other
// facts: a preference the user then makes a standing rule is stored as a rule, not answered as
// the preference. A repeat that brings a later end ("until Friday") gives the known fact that
// end as a new version (an end is part of what a fact says, which never changes in place).
export async function storeFact(
  db: PoolClient,
  userId: string,
  fields: FactFields,
): Promise<StoredFact> {
  await lockUserFacts(db, userId);
  const isRule = fields.category === 'rule';
  const [terms = []] = await readTerms(db, [fields.content]);
  const candidates = await listFactsLike(
    db,
    userId,
    { content: fields.content, terms, isRule },
    DUPLICATE_CANDIDATES,
  );
  const known = candidates.find((candidate) => isSameFact(candidate.content, fields.content));
  if (known) {
    const sources = [...new Set([...known.sourceMessageIds, ...fields.sourceMessageIds])].slice(
      -FACT_SOURCE_MESSAGES_MAX,
    );
    const end = laterEnd(known.validTo, fields.validTo);
    if (end === undefined) {
      const fact = await reinforceFact(db, userId, known.id, fields.importance, sources);
      return { fact, isDuplicate: true };
    }
    // Same words and tokens as the known version, so a rule still fits the cap.
    const fact = await storeFactVersion(db, userId, {
      category: known.category,
      content: known.content,
      tags: known.tags,
      importance: Math.max(known.importance, fields.importance),
      sourceMessageIds: sources,
      validTo: end,
    });
    await invalidateFact(db, userId, known.id, fact.id);
    return { fact, isDuplicate: true, supersedes: known };
  }
  if (isRule) await ensureRuleFits(db, userId, fields.content);
  return { fact: await storeFactVersion(db, userId, fields), isDuplicate: false };
}

// The end a known fact takes when it is told again with `told`, or undefined when its own end
// stands. No end means none was said, not "for ever": a repeat without one keeps the known end,
// and a known fact without one takes the repeat's. Of two ends the later wins: both sources said
// the fact holds until their end, and an end too late only keeps a stale fact in recall a while
// (the user can forget it), while one too early silently drops a fact someone still relies on.
function laterEnd(known: string | null, told: Date | undefined): Date | undefined {
  if (!told) return undefined;
  if (known !== null && Date.parse(known) >= told.getTime()) return undefined;
  return told;
}

// Stores one fact version as given and makes it searchable in the same transaction: the
// successor of an update (which may say what its predecessor said, with other tags), or a new
// fact once storeFact found it new.
export async function storeFactVersion(
  db: PoolClient,
  userId: string,
  fields: FactFields,
): Promise<Fact> {
  const fact = await insertFact(db, userId, fields);
  await indexFact(db, userId, fact);
  return fact;
}

// Makes a valid fact version searchable: its embedding and its terms. Also for restored exports.
export async function indexFact(
  db: PoolClient,
  userId: string,
  fact: Pick<Fact, 'id' | 'content' | 'createdAt'>,
): Promise<void> {
  const terms = await readTerms(db, [fact.content]);
  await upsertLocalEmbeddings(db, LOCAL_EMBEDDING_MODEL, [
    {
      kind: 'fact',
      itemId: fact.id,
      userId,
      conversationId: null,
      itemCreatedAt: new Date(fact.createdAt),
      vector: embedDocument({ terms: terms[0] ?? [] }),
    },
  ]);
  await addTermCounts(db, userId, countTermsByItem(terms), 1);
}

// The row stays; only search stops finding it.
export async function invalidateFact(
  db: PoolClient,
  userId: string,
  id: string,
  successorId: string | null,
): Promise<Fact> {
  const closed = await closeFact(db, userId, id, successorId);
  await deleteFactEmbeddings(db, userId, id);
  await removeTermCounts(db, userId, countTermsByItem(await readTerms(db, [closed.content])), 1);
  return closed;
}

// Open until its end, which may lie ahead.
export function isOpen(fact: Pick<Fact, 'validTo'>, now = new Date()): boolean {
  return fact.validTo === null || Date.parse(fact.validTo) > now.getTime();
}

async function lockValidFact(db: PoolClient, userId: string, id: string): Promise<Fact> {
  const fact = await lockFact(db, userId, id);
  if (!fact) throw factNotFound();
  if (!isOpen(fact)) throw new BusError('conflict', 'fact is no longer valid');
  return fact;
}

// Provenance must name the user's own messages; another user's look like missing ones.
async function requireOwnMessages(pool: Pool, userId: string, messageIds: string[]) {
  if (messageIds.length === 0) return;
  if ((await countOwnMessages(pool, userId, messageIds)) < messageIds.length) {
    throw new BusError('bad_request', 'sourceMessageIds: message not found');
  }
}

// The cursor is a createdAt, to the millisecond, while Postgres keeps microseconds: a page ending
// inside a millisecond would make the next one (created before it) skip the rest of it. So a full
// page stops before the millisecond it shares with the first fact left out.
function endOnWholeMillisecond(facts: Fact[], limit: number): Fact[] {
  const next = facts[limit];
  if (!next) return facts;
  const page = facts.slice(0, limit);
  const whole = page.filter((fact) => fact.createdAt !== next.createdAt);
  // More than a page of facts in one millisecond: the page can only cut it.
  return whole.length > 0 ? whole : page;
}

export async function listFacts(
  pool: Pool,
  request: ListRequest,
): Promise<MemoryFactsListResponse> {
  const facts = await listMatchingFacts(
    pool,
    {
      userId: request.userId,
      category: request.category,
      tag: request.tag,
      includeInvalid: request.includeInvalid,
      before: request.before ? new Date(request.before) : undefined,
    },
    request.limit + 1,
  );
  return { facts: endOnWholeMillisecond(facts, request.limit) };
}

export async function getFact(pool: Pool, request: GetRequest): Promise<MemoryFactsGetResponse> {
  const fact = await findFact(pool, request.userId, request.id);
  if (!fact) throw factNotFound();
  const older = await listOlderVersions(pool, request.userId, fact.id, FACT_HISTORY_MAX + 1);
  return {
    fact,
    history: older.slice(0, FACT_HISTORY_MAX),
    isHistoryTruncated: older.length > FACT_HISTORY_MAX,
  };
}

export async function rememberFact(
  pool: Pool,
  request: RememberRequest,
): Promise<MemoryFactsRememberResponse> {
  await requireOwnMessages(pool, request.userId, request.sourceMessageIds);
  // An end already past would store a fact that never held (and that no export could carry:
  // a fact ends after it begins).
  if (request.validTo && Date.parse(request.validTo) <= Date.now()) {
    throw new BusError('bad_request', 'validTo must be in the future: when the fact stops holding');
  }
  return withTransaction(pool, async (db) => {
    const stored = await storeFact(db, request.userId, {
      category: request.category,
      content: request.content,
      tags: request.tags,
      importance: request.importance,
      sourceMessageIds: request.sourceMessageIds,
      validTo: request.validTo ? new Date(request.validTo) : undefined,
    });
    if (request.turnId) await recordRememberedByTool(db, request.userId, request.turnId, stored);
    return stored;
  });
}

// The successor keeps whatever the request leaves out, provenance and end included. A rule
// that grows (or a fact that becomes one) must still fit the instructions' cap.
export async function updateFact(
  pool: Pool,
  request: UpdateRequest,
): Promise<MemoryFactsUpdateResponse> {
  return withTransaction(pool, async (db) => {
    const current = await lockValidFact(db, request.userId, request.id);
    const fields = {
      category: request.category ?? current.category,
      content: request.content ?? current.content,
      tags: request.tags ?? current.tags,
      importance: request.importance ?? current.importance,
      sourceMessageIds: current.sourceMessageIds,
      validTo: current.validTo ? new Date(current.validTo) : undefined,
    };
    if (fields.category === 'rule') {
      await lockUserFacts(db, request.userId);
      const replacing = current.category === 'rule' ? current.id : undefined;
      await ensureRuleFits(db, request.userId, fields.content, replacing);
    }
    const fact = await storeFactVersion(db, request.userId, fields);
    await invalidateFact(db, request.userId, current.id, fact.id);
    return { fact };
  });
}

export async function forgetFact(
  pool: Pool,
  request: ForgetRequest,
): Promise<MemoryFactsForgetResponse> {
  return withTransaction(pool, async (db) => {
    const current = await lockValidFact(db, request.userId, request.id);
    return { fact: await invalidateFact(db, request.userId, current.id, null) };
  });
}

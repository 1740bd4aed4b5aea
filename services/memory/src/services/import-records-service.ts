import { createHash } from 'node:crypto';
import { BusError } from '@jarvis/bus';
import type {
  ExportRecord,
  ExportRecordType,
  MemoryImportRecordsRequest,
  MemoryImportRecordsResponse,
  RuleOverCap,
} from '@jarvis/contracts';
import { type Pool, type PoolClient, withBatchTransaction } from '@jarvis/db';
import { countTermsByItem, LOCAL_EMBEDDING_MODEL } from '@jarvis/embeddings';
import type { z } from 'zod';
import { findConversation } from '../repositories/conversations-repository';
import { upsertLocalEmbeddings } from '../repositories/embeddings-repository';
import { lockUserFacts } from '../repositories/facts-repository';
import {
  insertRestoredChunks,
  insertRestoredConversations,
  insertRestoredDocuments,
  insertRestoredFacts,
  insertRestoredFiles,
  insertRestoredFileVersions,
  insertRestoredSummaries,
  listChunksToIndex,
  listStoredFactIds,
  type StoredChunk,
} from '../repositories/import-repository';
import { insertMessagesInOrder } from '../repositories/messages-repository';
import { listStandingRules } from '../repositories/profile-repository';
import { addTermCounts } from '../repositories/term-stats-repository';
import { indexSummary } from './compact-conversation';
import { indexChunks } from './documents-service';
import { normaliseFactText } from './fact-text';
import { indexFact } from './facts-service';
import { indexFile } from './index-files';
import { indexMessages } from './index-messages';
import { findRulesOverCap, restoreInstructions } from './instructions-service';

type ImportRequest = z.output<typeof MemoryImportRecordsRequest>;
type RecordOf<T extends ExportRecordType> = Extract<ExportRecord, { type: T }>;

// The id an exported record gets when this user imports it: the same every time, so a file
// imported twice finds its records stored, and different for each user, so two users can import
// one file. A UUID (version 8, "custom", with the RFC 9562 variant) cut from a SHA-256.
export function importedId(userId: string, exportedId: string): string {
  const bytes = createHash('sha256')
    .update(`${userId}:${exportedId.toLowerCase()}`)
    .digest()
    .subarray(0, 16);
  bytes.writeUInt8((bytes.readUInt8(6) & 0x0f) | 0x80, 6);
  bytes.writeUInt8((bytes.readUInt8(8) & 0x3f) | 0x80, 8);
  const hex = bytes.toString('hex');
  return [
    hex.slice(0, 8),
    hex.slice(8, 12),
    hex.slice(12, 16),
    hex.slice(16, 20),
    hex.slice(20),
  ].join('-');
}

function recordsOf<T extends ExportRecordType>(records: ExportRecord[], type: T): RecordOf<T>[] {
  return records.filter((record): record is RecordOf<T> => record.type === type);
}

// Consecutive messages of one conversation, which are stored (and embedded) together.
function runsByConversation(messages: RecordOf<'message'>[]): RecordOf<'message'>[][] {
  const runs: RecordOf<'message'>[][] = [];
  for (const message of messages) {
    const run = runs.at(-1);
    if (run?.[0]?.conversationId === message.conversationId) run.push(message);
    else runs.push([message]);
  }
  return runs;
}

// Stores one batch of an export for the user, each type after the types it refers to, and makes
// it searchable the way each kind's own service does, all in one transaction.
export async function importRecords(
  pool: Pool,
  request: ImportRequest,
): Promise<MemoryImportRecordsResponse> {
  try {
    return await withBatchTransaction(pool, (db) => restoreBatch(db, request));
  } catch (error) {
    if (isIntegrityError(error)) {
      throw new BusError(
        'bad_request',
        `records refer to records not imported before them, or clash with stored ones: ${error.message}`,
      );
    }
    throw error;
  }
}

// A foreign key (a successor or a conversation sent too late) or a unique key (a message
// exported under another conversation before) that the batch breaks.
function isIntegrityError(error: unknown): error is Error {
  return (
    error instanceof Error && 'code' in error && (error.code === '23503' || error.code === '23505')
  );
}

async function restoreBatch(
  db: PoolClient,
  request: ImportRequest,
): Promise<MemoryImportRecordsResponse> {
  const { userId, records } = request;
  const newId = (id: string) => importedId(userId, id);

  // First: the file's rules below are checked against the cap with the instructions it set.
  const [instructions] = recordsOf(records, 'instructions');
  const instructionsImport = instructions
    ? await restoreInstructions(db, userId, instructions)
    : 'none';

  const conversations = await insertRestoredConversations(
    db,
    userId,
    recordsOf(records, 'conversation').map((conversation) => ({
      id: newId(conversation.id),
      isDefault: conversation.isDefault,
      createdAt: conversation.createdAt,
    })),
  );
  const messages = await restoreMessages(db, userId, recordsOf(records, 'message'));

  const summaries = await insertRestoredSummaries(
    db,
    userId,
    recordsOf(records, 'summary').map((summary) => ({
      ...summary,
      id: newId(summary.id),
      conversationId: newId(summary.conversationId),
      fromMessageId: newId(summary.fromMessageId),
      toMessageId: newId(summary.toMessageId),
    })),
  );
  for (const summary of summaries) await indexSummary(db, userId, summary);

  const factRecords = recordsOf(records, 'fact');
  const { overCap: rulesOverCap, repeats } = await sortRestoredRules(db, userId, factRecords);
  const facts = await insertRestoredFacts(
    db,
    userId,
    // A rule over the cap, or one the user has already, is stored ended rather than left out: an
    // older version in the file names it as its successor, the history keeps what the user had,
    // and the same file imported again finds it stored and decides nothing anew.
    factRecords.map((fact) => ({
      ...fact,
      endsAtImport: rulesOverCap.has(fact.id) || repeats.has(fact.id),
      id: newId(fact.id),
      sourceMessageIds: fact.sourceMessageIds.map(newId),
      supersededBy: fact.supersededBy === null ? null : newId(fact.supersededBy),
    })),
  );
  const repeatIds = new Set([...repeats].map(newId));
  // Closed versions are kept but not searchable, as after an update or a forget.
  for (const fact of facts) if (fact.isValid) await indexFact(db, userId, fact);

  const files = await insertRestoredFiles(
    db,
    userId,
    recordsOf(records, 'file').map((file) => ({ ...file, id: newId(file.id) })),
  );
  for (const file of files) if (!file.isDeleted) await indexFile(db, userId, file);
  await insertRestoredFileVersions(
    db,
    userId,
    recordsOf(records, 'fileVersion').map((version) => ({
      ...version,
      fileId: newId(version.fileId),
    })),
  );

  const documents = await insertRestoredDocuments(
    db,
    userId,
    recordsOf(records, 'document').map((document) => ({ ...document, id: newId(document.id) })),
  );
  const chunks = await insertRestoredChunks(
    db,
    userId,
    recordsOf(records, 'documentChunk').map((chunk) => ({
      ...chunk,
      id: newId(chunk.id),
      documentId: newId(chunk.documentId),
    })),
  );
  await indexRestoredChunks(db, userId, chunks);

  return {
    imported: {
      conversations: conversations.length,
      messages,
      summaries: summaries.length,
      // A repeated rule adds nothing the user did not have.
      facts: facts.filter((fact) => !repeatIds.has(fact.id)).length,
      files: files.length,
      documents: documents.length,
    },
    rulesOverCap: [...rulesOverCap.values()],
    instructions: instructionsImport,
  };
}

// The batch's current rules that the user has not imported before: a repeat says what an open
// rule of the user, or an earlier one of the file, already says (ignoring case, spacing and
// punctuation), and would stand twice in every prompt and count twice against the cap; each of
// the rest fits the cap with what is in use, or not (the API's rule: never past it, the prompt
// never cuts them). Both by exported id. Under the lock rules are stored under, so a rule stored
// meanwhile is counted; only a batch with such rules takes it, since it holds until the batch
// ends, and the user's turns store their facts under it.
async function sortRestoredRules(
  db: PoolClient,
  userId: string,
  facts: RecordOf<'fact'>[],
): Promise<{ overCap: Map<string, RuleOverCap>; repeats: Set<string> }> {
  const overCap = new Map<string, RuleOverCap>();
  const repeats = new Set<string>();
  const now = Date.now();
  const rules = facts.filter(
    (fact) => fact.category === 'rule' && (fact.validTo === null || Date.parse(fact.validTo) > now),
  );
  if (rules.length === 0) return { overCap, repeats };
  await lockUserFacts(db, userId);
  const stored = await listStoredFactIds(
    db,
    userId,
    rules.map((rule) => importedId(userId, rule.id)),
  );
  const wordings = new Set(
    (await listStandingRules(db, userId)).map((rule) => normaliseFactText(rule.content)),
  );
  const newRules: RecordOf<'fact'>[] = [];
  for (const rule of rules) {
    if (stored.has(importedId(userId, rule.id))) continue;
    const wording = normaliseFactText(rule.content);
    if (wordings.has(wording)) {
      repeats.add(rule.id);
    } else {
      wordings.add(wording);
      newRules.push(rule);
    }
  }
  const reasons = await findRulesOverCap(db, userId, newRules);
  for (const rule of newRules) {
    const reason = reasons.get(rule.id);
    if (reason) overCap.set(rule.id, { id: rule.id, content: rule.content, reason });
  }
  return { overCap, repeats };
}

async function restoreMessages(
  db: PoolClient,
  userId: string,
  messages: RecordOf<'message'>[],
): Promise<number> {
  let imported = 0;
  for (const run of runsByConversation(messages)) {
    const first = run[0];
    if (!first) continue;
    const conversationId = await findConversation(
      db,
      userId,
      importedId(userId, first.conversationId),
    );
    if (!conversationId) {
      throw new BusError('bad_request', `message ${first.id}: its conversation was not imported`);
    }
    // In the given order, so each conversation keeps its order; the key skips a message
    // imported before.
    const inserted = await insertMessagesInOrder(
      db,
      userId,
      conversationId,
      run.map((message) => ({
        id: importedId(userId, message.id),
        role: message.role,
        content: message.content,
        author: message.author ?? undefined,
        metadata: message.metadata,
        createdAt: message.createdAt,
        idempotencyKey: `export:${message.id}`,
      })),
    );
    await indexMessages(db, userId, conversationId, inserted);
    imported += inserted.length;
  }
  return imported;
}

// A chunk is embedded with its neighbours as context, and a document's chunks may come in several
// batches: each document that gained chunks is embedded again whole, and only the new chunks
// join the term statistics.
async function indexRestoredChunks(
  db: PoolClient,
  userId: string,
  inserted: StoredChunk[],
): Promise<void> {
  const documentIds = [...new Set(inserted.map((chunk) => chunk.documentId))];
  const isInserted = new Set(inserted.map((chunk) => chunk.id));
  const insertedTerms: string[][] = [];
  for (const documentId of documentIds) {
    const chunks = await listChunksToIndex(db, userId, documentId);
    const createdAt = chunks[0]?.createdAt;
    if (!createdAt) continue;
    const { rows, chunkTerms } = await indexChunks(db, userId, chunks, createdAt);
    await upsertLocalEmbeddings(db, LOCAL_EMBEDDING_MODEL, rows);
    for (const [position, chunk] of chunks.entries()) {
      if (isInserted.has(chunk.id)) insertedTerms.push(chunkTerms[position] ?? []);
    }
  }
  await addTermCounts(db, userId, countTermsByItem(insertedTerms), inserted.length);
}

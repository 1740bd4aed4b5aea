import { randomUUID } from 'node:crypto';
import { type Bus, publishWork } from '@jarvis/bus';
import { compactionRequested, modelChat } from '@jarvis/contracts';
import { type Pool, type Queryable, withBatchTransaction } from '@jarvis/db';
import { countTermsByItem, embedDocument, LOCAL_EMBEDDING_MODEL } from '@jarvis/embeddings';
import { estimateTokens } from '@jarvis/tokens';
import { upsertLocalEmbeddings } from '../repositories/embeddings-repository';
import {
  findLatestSummary,
  insertSummary,
  listUnsummarisedTail,
  measureUnsummarisedTail,
  type TailMessage,
} from '../repositories/summaries-repository';
import { addTermCounts } from '../repositories/term-stats-repository';
import { readTerms } from '../repositories/terms-repository';

export type CompactionSettings = {
  // A tail longer than this is summarised...
  triggerTokens: number;
  // ...down to this many of its newest tokens, which stay verbatim.
  keepTokens: number;
  modelTimeoutMs: number;
};

export const DEFAULT_COMPACTION: CompactionSettings = {
  triggerTokens: 6_000,
  keepTokens: 2_000,
  modelTimeoutMs: 120_000,
};

// Summaries one job writes before handing the rest to a new job, so a long import does not hold
// one worker (and one model) for minutes.
const MAX_SUMMARIES_PER_JOB = 3;

const INSTRUCTIONS =
  'You condense part of a long conversation between a user and their assistant, so the assistant ' +
  'can keep it in mind later. Keep every name, date, number, decision, preference, promise and ' +
  'open question; drop greetings and small talk. Write plain prose in the third person, at most ' +
  '250 words. If an earlier summary is given, do not repeat it; continue from it.';

// Asks for compaction when the tail has grown past the threshold. Cheap: one aggregate query.
export async function requestCompactionIfDue(
  bus: Bus,
  pool: Pool,
  settings: CompactionSettings,
  userId: string,
  conversationId: string,
): Promise<void> {
  const tail = await measureUnsummarisedTail(pool, userId, conversationId);
  if (tail.tokens <= settings.triggerTokens || tail.firstSeq === undefined) return;
  await publishWork(
    bus,
    compactionRequested,
    { userId, conversationId },
    `compact:${conversationId}:${tail.firstSeq}`,
  );
}

export async function compactConversation(
  bus: Bus,
  pool: Pool,
  settings: CompactionSettings,
  userId: string,
  conversationId: string,
): Promise<{ summaries: number; isDone: boolean }> {
  let summaries = 0;
  while (summaries < MAX_SUMMARIES_PER_JOB) {
    const tail = await listUnsummarisedTail(pool, userId, conversationId);
    if (tailTokens(tail) <= settings.triggerTokens) return { summaries, isDone: true };
    const stretch = oldestStretch(tail, settings.keepTokens);
    const first = stretch[0];
    const last = stretch.at(-1);
    if (!first || !last) return { summaries, isDone: true };
    const previous = await findLatestSummary(pool, conversationId);
    const { content } = await bus.request(
      modelChat,
      {
        purpose: 'utility',
        userId,
        messages: [
          { role: 'system', content: INSTRUCTIONS },
          { role: 'user', content: transcript(stretch, previous) },
        ],
        temperature: 0,
      },
      { timeoutMs: settings.modelTimeoutMs },
    );
    const id = randomUUID();
    await withBatchTransaction(pool, async (db) => {
      const isNew = await insertSummary(db, {
        id,
        userId,
        conversationId,
        fromSeq: first.seq,
        toSeq: last.seq,
        fromAt: first.createdAt,
        toAt: last.createdAt,
        content: content.trim(),
      });
      if (!isNew) return;
      await indexSummary(db, userId, { id, conversationId, content, toAt: last.createdAt });
    });
    summaries++;
  }
  return { summaries, isDone: false };
}

// Makes a summary searchable, dated by the last message it covers. Also for restored exports.
export async function indexSummary(
  db: Queryable,
  userId: string,
  summary: { id: string; conversationId: string; content: string; toAt: Date },
): Promise<void> {
  const terms = await readTerms(db, [summary.content]);
  await upsertLocalEmbeddings(db, LOCAL_EMBEDDING_MODEL, [
    {
      kind: 'summary',
      itemId: summary.id,
      userId,
      conversationId: summary.conversationId,
      itemCreatedAt: summary.toAt,
      vector: embedDocument({ terms: terms[0] ?? [] }),
    },
  ]);
  await addTermCounts(db, userId, countTermsByItem(terms), 1);
}

function tailTokens(tail: TailMessage[]): number {
  return tail.reduce((sum, message) => sum + estimateTokens(message.content), 0);
}

// The oldest messages of the tail, leaving its newest `keepTokens` verbatim.
function oldestStretch(tail: TailMessage[], keepTokens: number): TailMessage[] {
  let kept = 0;
  let cut = tail.length;
  while (cut > 0) {
    const tokens = estimateTokens(tail[cut - 1]?.content ?? '');
    if (kept + tokens > keepTokens) break;
    kept += tokens;
    cut--;
  }
  return tail.slice(0, Math.max(cut, 1));
}

function transcript(stretch: TailMessage[], previous: string | undefined): string {
  const lines = stretch.map(
    (message) =>
      `[${message.createdAt.toISOString().slice(0, 16).replace('T', ' ')}] ${message.role}: ${message.content}`,
  );
  const earlier = previous ? `Earlier summary:\n${previous}\n\n` : '';
  return `${earlier}Conversation to condense:\n${lines.join('\n')}`;
}

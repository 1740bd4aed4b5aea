import { BusError } from '@jarvis/bus';
import {
  type MemoryRecallRequest,
  type MemoryRecallResponse,
  RECALL_PROFILE_LIMIT,
  RECALL_RELEVANT_LIMIT,
  RECALL_SUMMARY_LIMIT,
  type RecalledItem,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { loadTokenCounter } from '@jarvis/tokens';
import type { z } from 'zod';
import { findConversation } from '../repositories/conversations-repository';
import {
  findMessagesStoredAfter,
  listRecentMessages,
  type RecentMessage,
} from '../repositories/messages-repository';
import { listProfileFacts } from '../repositories/profile-repository';
import { listSummaries } from '../repositories/summaries-repository';
import type { DenseIndex } from './dense-index';
import { searchMemoryViews } from './search-service';

type RecallRequest = z.output<typeof MemoryRecallRequest>;

// Relevant items that are facts found by a search of the user's facts alone, ahead of the
// search of everything. A fact says in one line what a question asks, but it shares its words
// with every message on the subject: among 100,000 messages full of other people's pets, "our
// cat is called Biscotti" ranked below the 60th item for "What is the name of our cat?", first
// among facts.
const FACT_SLOTS = 3;

// Shares of the budget each part may take at most; recent messages get the rest.
const PROFILE_SHARE = 0.1;
const RELEVANT_SHARE = 0.15;
const SUMMARY_SHARE = 0.25;

export async function recallContext(
  pool: Pool,
  request: RecallRequest,
  now = new Date(),
  dense?: DenseIndex,
): Promise<MemoryRecallResponse> {
  const { messageId, query } = request;
  const budget = request.tokenBudget;
  const views = [
    { kinds: ['fact'], limit: FACT_SLOTS + RECALL_PROFILE_LIMIT },
    {
      kinds: ['message', 'fact', 'summary', 'document'],
      limit: RECALL_RELEVANT_LIMIT + request.recentLimit,
    },
  ] as const;
  const search = query?.trim()
    ? searchMemoryViews(
        pool,
        { userId: request.userId, query, areQueuedMessagesSkipped: true },
        views,
        now,
        dense,
      )
    : Promise.resolve([{ results: [] }, { results: [] }] as const);
  // All side by side, the conversation's owner checked with the rest: every read is scoped by the
  // user, so another user's conversation yields nothing before it is refused.
  const [conversationId, counter, profileFacts, summaries, recent, [facts, found]] =
    await Promise.all([
      findConversation(pool, request.userId, request.conversationId),
      loadTokenCounter(request.tokenizer),
      listProfileFacts(pool, request.userId, RECALL_PROFILE_LIMIT),
      listSummaries(pool, request.userId, request.conversationId, RECALL_SUMMARY_LIMIT),
      listRecentMessages(
        pool,
        request.userId,
        request.conversationId,
        request.recentLimit,
        messageId,
      ),
      search,
    ]);
  if (!conversationId) throw new BusError('not_found', 'conversation not found');
  const dialogue = toDialogue(recent, messageId);

  const profile = fitWithin(profileFacts, budget * PROFILE_SHARE, (fact) =>
    counter.count(fact.content),
  );
  // What the prompt shows anyway (recent messages, profile facts) is not recalled twice.
  const shown = new Set([
    ...dialogue.map((message) => message.id),
    ...profile.items.map((fact) => fact.id),
  ]);
  const newFacts = facts.results.filter((result) => !shown.has(result.id)).slice(0, FACT_SLOTS);
  const candidates = [
    ...new Map([...newFacts, ...found.results].map((result) => [result.id, result])).values(),
  ].filter((result) => !shown.has(result.id));
  // Messages stored after the turn's own are not its past: they wait for their turns. Their
  // order is memory's (seq), which their times do not always follow (two appends at once), so
  // it is asked, in one statement, whenever the search found messages.
  const foundMessages = candidates.filter((result) => result.kind === 'message');
  const later =
    messageId && foundMessages.length > 0
      ? await findMessagesStoredAfter(
          pool,
          request.userId,
          messageId,
          foundMessages.map((result) => result.id),
        )
      : new Set<string>();
  const relevant = fitWithin(
    candidates
      .filter((result) => !later.has(result.id))
      .slice(0, RECALL_RELEVANT_LIMIT)
      .map(
        (result): RecalledItem => ({
          kind: result.kind,
          id: result.id,
          text: result.text,
          createdAt: result.createdAt,
        }),
      ),
    budget * RELEVANT_SHARE,
    (item) => counter.count(item.text),
  );
  const keptSummaries = fitWithin(summaries, budget * SUMMARY_SHARE, (summary) =>
    counter.count(summary.content),
  );
  const used = profile.tokens + relevant.tokens + keptSummaries.tokens;
  // Newest first until the budget is spent, then back in order; the newest message always fits.
  const keptRecent = fitWithin(
    [...dialogue].reverse(),
    Math.max(budget - used, 0),
    (message) => counter.count(message.content),
    1,
  );
  return {
    profile: profile.items,
    relevant: relevant.items,
    summaries: keptSummaries.items.reverse(),
    recent: keptRecent.items.reverse().map(({ replyTo: _replyTo, ...message }) => message),
    tokens: {
      profile: profile.tokens,
      relevant: relevant.tokens,
      summaries: keptSummaries.tokens,
      recent: keptRecent.tokens,
    },
  };
}

// The recent messages as the conversation went: each reply right after the message it answers
// (turns of one conversation run one at a time, but messages sent at once are all stored before
// the first is answered), and the turn's own message last, so the model answers it and nothing
// else.
export function toDialogue(
  recent: RecentMessage[],
  ownMessageId: string | undefined,
): RecentMessage[] {
  const ids = new Set(recent.map((message) => message.id));
  const repliesTo = new Map<string, RecentMessage[]>();
  for (const message of recent) {
    if (!message.replyTo || !ids.has(message.replyTo)) continue;
    repliesTo.set(message.replyTo, [...(repliesTo.get(message.replyTo) ?? []), message]);
  }
  const own = recent.find((message) => message.id === ownMessageId);
  const ordered = recent.flatMap((message) => {
    if (message === own || (message.replyTo && ids.has(message.replyTo))) return [];
    return [message, ...(repliesTo.get(message.id) ?? [])];
  });
  return own ? [...ordered, own] : ordered;
}

// The longest prefix of items that fits, and its tokens; at least `minimum` items. Each item is
// counted once, and counting stops at the first that does not fit, so a recall counts about its
// budget's worth of text however long the candidates are.
function fitWithin<T>(
  items: T[],
  budget: number,
  tokensOf: (item: T) => number,
  minimum = 0,
): { items: T[]; tokens: number } {
  const kept: T[] = [];
  let used = 0;
  for (const item of items) {
    const tokens = tokensOf(item);
    if (used + tokens > budget && kept.length >= minimum) break;
    kept.push(item);
    used += tokens;
  }
  return { items: kept, tokens: used };
}

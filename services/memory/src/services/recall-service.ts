import { BusError } from '@jarvis/bus';
import type { MemoryRecallRequest, MemoryRecallResponse, RecalledItem } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import type { z } from 'zod';
import { findConversation } from '../repositories/conversations-repository';
import { findMessageContent, listRecentMessages } from '../repositories/messages-repository';
import { listProfileFacts } from '../repositories/profile-repository';
import { listSummaries } from '../repositories/summaries-repository';
import type { DenseIndex } from './dense-index';
import { searchMemory } from './search-service';
import { estimateTokens } from './tokens';

type RecallRequest = z.output<typeof MemoryRecallRequest>;

// Shares of the budget each part may take at most; recent messages get the rest.
const PROFILE_SHARE = 0.1;
const RELEVANT_SHARE = 0.15;
const SUMMARY_SHARE = 0.25;
const PROFILE_LIMIT = 20;
const RELEVANT_LIMIT = 8;
const SUMMARY_LIMIT = 10;

export async function recallContext(
  pool: Pool,
  request: RecallRequest,
  now = new Date(),
  dense?: DenseIndex,
): Promise<MemoryRecallResponse> {
  const conversationId = await findConversation(pool, request.userId, request.conversationId);
  if (!conversationId) throw new BusError('not_found', 'conversation not found');
  const budget = request.tokenBudget;
  const query = request.messageId
    ? await findMessageContent(pool, request.userId, request.messageId)
    : request.query;
  const [profileFacts, summaries, recent, found] = await Promise.all([
    listProfileFacts(pool, request.userId, PROFILE_LIMIT),
    listSummaries(pool, request.userId, conversationId, SUMMARY_LIMIT),
    listRecentMessages(pool, request.userId, conversationId, request.recentLimit),
    query?.trim()
      ? searchMemory(
          pool,
          {
            userId: request.userId,
            query,
            limit: RELEVANT_LIMIT + request.recentLimit,
            kinds: ['message', 'fact', 'summary', 'document'],
          },
          now,
          dense,
        )
      : Promise.resolve({ results: [] }),
  ]);

  const profile = fitWithin(profileFacts, budget * PROFILE_SHARE, (fact) => fact.content);
  // What the prompt shows anyway (recent messages, profile facts) is not recalled twice.
  const shown = new Set([
    ...recent.map((message) => message.id),
    ...profile.map((fact) => fact.id),
  ]);
  const relevant = fitWithin(
    found.results
      .filter((result) => !shown.has(result.id))
      .slice(0, RELEVANT_LIMIT)
      .map(
        (result): RecalledItem => ({
          kind: result.kind,
          id: result.id,
          text: result.text,
          createdAt: result.createdAt,
        }),
      ),
    budget * RELEVANT_SHARE,
    (item) => item.text,
  );
  const keptSummaries = fitWithin(
    summaries,
    budget * SUMMARY_SHARE,
    (summary) => summary.content,
  ).reverse();
  const used = [
    ...profile.map((fact) => fact.content),
    ...relevant.map((item) => item.text),
    ...keptSummaries.map((summary) => summary.content),
  ].reduce((sum, text) => sum + estimateTokens(text), 0);
  // Newest first until the budget is spent, then back in order; the newest message always fits.
  const keptRecent = fitWithin(
    [...recent].reverse(),
    Math.max(budget - used, 0),
    (message) => message.content,
    1,
  ).reverse();
  const tokens =
    used + keptRecent.reduce((sum, message) => sum + estimateTokens(message.content), 0);
  return { profile, relevant, summaries: keptSummaries, recent: keptRecent, tokens };
}

// The longest prefix of items whose estimated tokens fit; at least `minimum` items.
function fitWithin<T>(items: T[], budget: number, textOf: (item: T) => string, minimum = 0): T[] {
  const kept: T[] = [];
  let used = 0;
  for (const item of items) {
    const tokens = estimateTokens(textOf(item));
    if (used + tokens > budget && kept.length >= minimum) break;
    kept.push(item);
    used += tokens;
  }
  return kept;
}

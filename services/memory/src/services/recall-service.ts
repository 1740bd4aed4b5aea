import { BusError } from '@jarvis/bus';
import {
  type MemoryRecallRequest,
  type MemoryRecallResponse,
  RECALL_PROFILE_LIMIT,
  RECALL_RELEVANT_LIMIT,
  RECALL_SUMMARY_LIMIT,
  SKILLS_FOLDER,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { loadTokenCounter } from '@jarvis/tokens';
import type { z } from 'zod';
import { findConversation } from '../repositories/conversations-repository';
import { findInstructions } from '../repositories/instructions-repository';
import {
  findMessagesStoredAfter,
  listRecentMessages,
  type RecentMessage,
} from '../repositories/messages-repository';
import { listProfileFacts, listStandingRules } from '../repositories/profile-repository';
import { listSummaries } from '../repositories/summaries-repository';
import type { DenseIndex } from './dense-index';
import { fileExcerpt } from './file-excerpt';
import { searchMemoryViews } from './search-service';
import { listSkills } from './skills';

type RecallRequest = z.output<typeof MemoryRecallRequest>;

// Relevant items that are facts found by a search of the user's facts alone, ahead of the
// search of everything. A fact says in one line what a question asks, but it shares its words
// with every message on the subject: among 100,000 messages full of other people's pets, "our
// cat is called Biscotti" ranked below the 60th item for "What is the name of our cat?", first
// among facts.
const FACT_SLOTS = 3;
// Memory files (episodes, weekly roll-ups, notes, mission lessons) found by a search of the
// files alone, after those facts: an episode retells a turn whose messages share its words, and
// among many messages those would crowd it out.
const FILE_SLOTS = 2;
// Skills are not recalled as files: the prompt names them all in its index, and their
// procedures come only through skill_load. A search of files may find them first, so it asks
// for this many more.
const FILE_VIEW_SLACK = 5;

export async function recallContext(
  pool: Pool,
  request: RecallRequest,
  now = new Date(),
  dense?: DenseIndex,
): Promise<MemoryRecallResponse> {
  const { messageId, query } = request;
  const views = [
    { kinds: ['fact'], limit: FACT_SLOTS + RECALL_PROFILE_LIMIT },
    {
      kinds: ['message', 'fact', 'summary', 'document', 'file'],
      limit: RECALL_RELEVANT_LIMIT + request.recentLimit + FILE_VIEW_SLACK,
    },
    { kinds: ['file'], limit: FILE_SLOTS + FILE_VIEW_SLACK },
  ] as const;
  const search = query?.trim()
    ? searchMemoryViews(
        pool,
        { userId: request.userId, query, areQueuedMessagesSkipped: true },
        views,
        now,
        dense,
      )
    : Promise.resolve([{ results: [] }, { results: [] }, { results: [] }] as const);
  // All side by side, the conversation's owner checked with the rest: every read is scoped by the
  // user, so another user's conversation yields nothing before it is refused.
  const [
    conversationId,
    counter,
    instructionsText,
    rules,
    skills,
    profileFacts,
    summaries,
    recent,
    [facts, found, files],
  ] = await Promise.all([
    findConversation(pool, request.userId, request.conversationId),
    loadTokenCounter(request.tokenizer),
    findInstructions(pool, request.userId),
    listStandingRules(pool, request.userId),
    listSkills(pool, request.userId),
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
  const limit = request.tokenLimit;
  const withTokens = <T>(item: T, text: string) => ({ ...item, tokens: counter.count(text) });

  const profile = keepWithin(profileFacts, limit, (fact) => withTokens(fact, fact.content));
  // What the prompt shows anyway (recent messages, profile facts, rules, the skills' index) is
  // not recalled twice.
  const shown = new Set([
    ...dialogue.map((message) => message.id),
    ...profile.map((fact) => fact.id),
    ...rules.map((rule) => rule.id),
  ]);
  const isRecallable = (result: SearchResult) => !shown.has(result.id) && !isSkillFile(result);
  const newFacts = facts.results.filter(isRecallable).slice(0, FACT_SLOTS);
  const newFiles = files.results.filter(isRecallable).slice(0, FILE_SLOTS);
  const candidates = [
    ...new Map(
      [...newFacts, ...newFiles, ...found.results].map((result) => [result.id, result]),
    ).values(),
  ].filter(isRecallable);
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
  const relevant = keepWithin(
    candidates.filter((result) => !later.has(result.id)).slice(0, RECALL_RELEVANT_LIMIT),
    limit,
    (result) => {
      const item = {
        kind: result.kind,
        id: result.id,
        text: result.kind === 'file' ? fileExcerpt(result.text) : result.text,
        createdAt: result.createdAt,
      };
      const cited = citationOf(result);
      // The prompt shows the citation beside the text: the tokens the item costs are of both.
      return cited
        ? withTokens(
            { ...item, ...cited },
            `"${cited.title}", page ${cited.page ?? ''} ${item.text}`,
          )
        : withTokens(item, item.text);
    },
  );
  // Summaries and recent messages are kept newest first, then given back in their order; the
  // newest message always.
  const keptSummaries = keepWithin(summaries, limit, (summary) =>
    withTokens(summary, summary.content),
  );
  const keptRecent = keepWithin(
    [...dialogue].reverse(),
    limit,
    ({ replyTo: _replyTo, ...message }) => withTokens(message, message.content),
    1,
  );
  // Instructions and rules are never fitted: they are capped together when they are written.
  const instructions = instructionsText?.trim()
    ? withTokens({ text: instructionsText }, instructionsText)
    : null;
  return {
    instructions,
    rules: rules.map((rule) => withTokens(rule, rule.content)),
    skills,
    profile,
    relevant,
    summaries: keptSummaries.reverse(),
    recent: keptRecent.reverse(),
  };
}

type SearchResult = { id: string; kind: string; metadata: Record<string, unknown> };

function isSkillFile(result: SearchResult): boolean {
  const { path } = result.metadata;
  return result.kind === 'file' && typeof path === 'string' && path.startsWith(SKILLS_FOLDER);
}

// Where an item came from, from its search metadata: a document chunk's document title and the
// page the chunk begins on when the document has pages; a memory file's path.
function citationOf(result: SearchResult): { title: string; page?: number } | undefined {
  const { title, page, path } = result.metadata;
  if (result.kind === 'file' && typeof path === 'string') return { title: path };
  if (result.kind !== 'document' || typeof title !== 'string') return undefined;
  return typeof page === 'number' ? { title, page } : { title };
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

// The longest prefix of items whose tokens stay within the limit, each with its tokens; at least
// `minimum` items. Counting stops at the first that does not fit, so a recall counts about
// its limit's worth of text however long the candidates are.
function keepWithin<T, U extends { tokens: number }>(
  items: T[],
  limit: number,
  counted: (item: T) => U,
  minimum = 0,
): U[] {
  const kept: U[] = [];
  let used = 0;
  for (const item of items) {
    const next = counted(item);
    if (used + next.tokens > limit && kept.length >= minimum) break;
    kept.push(next);
    used += next.tokens;
  }
  return kept;
}

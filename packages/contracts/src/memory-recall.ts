import { z } from 'zod';
import { Id, MESSAGE_MAX_CHARS, StoredMessage } from './common';
import { defineRpc } from './define';
import { MemoryKind } from './memory-search';
import { TokenizerFamily } from './model-route';

// The most items of each kind recall returns (and of recent messages, `recentLimit`): the
// orchestrator keeps room in the prompt for how it frames each one (date, kind, list marker).
export const RECALL_PROFILE_LIMIT = 20;
export const RECALL_RELEVANT_LIMIT = 8;
export const RECALL_SUMMARY_LIMIT = 10;

// What memory hands the orchestrator for a turn, all within a token budget: the user's pinned
// profile facts, the items most relevant to the new message (with their dates), the rolling
// summaries of older parts of the conversation, and as many recent messages as fit, oldest first.
// Recent messages read as a dialogue: a reply (a message whose metadata names the message it
// answers as `replyTo`) follows that message. With messageId, the context ends at that message:
// it comes last, and user messages stored after it (and replies to them) are left out, as
// recent messages and as relevant items.
export const MemoryRecallRequest = z.object({
  userId: Id,
  conversationId: Id,
  // The turn's own message: the context ends at it (see above).
  messageId: Id.optional(),
  // What relevant memories are searched for: a turn's message text, which its caller has, so
  // memory never reads back the message it just stored. Without it, none are searched for.
  query: z.string().max(MESSAGE_MAX_CHARS).optional(),
  tokenBudget: z.number().int().min(200).max(1_000_000).default(8_000),
  // Whose tokens the budget is in: the model expected to answer (model-gateway.route).
  tokenizer: TokenizerFamily.default('estimate'),
  recentLimit: z.number().int().min(1).max(500).default(50),
});
export type MemoryRecallRequest = z.input<typeof MemoryRecallRequest>;

const TokenCount = z.number().int().nonnegative();

export const RecalledItem = z.object({
  kind: MemoryKind,
  id: Id,
  text: z.string(),
  createdAt: z.iso.datetime({ offset: true }),
});
export type RecalledItem = z.infer<typeof RecalledItem>;

export const RecalledSummary = z.object({
  id: Id,
  content: z.string(),
  fromAt: z.iso.datetime({ offset: true }),
  toAt: z.iso.datetime({ offset: true }),
});
export type RecalledSummary = z.infer<typeof RecalledSummary>;

export const MemoryRecallResponse = z.object({
  profile: z.array(z.object({ id: Id, content: z.string() })),
  relevant: z.array(RecalledItem),
  summaries: z.array(RecalledSummary),
  recent: z.array(StoredMessage),
  // Tokens of the texts above, per part, counted with the request's tokenizer.
  tokens: z.object({
    profile: TokenCount,
    relevant: TokenCount,
    summaries: TokenCount,
    recent: TokenCount,
  }),
});
export type MemoryRecallResponse = z.infer<typeof MemoryRecallResponse>;

export const memoryRecall = defineRpc('memory.recall', MemoryRecallRequest, MemoryRecallResponse);

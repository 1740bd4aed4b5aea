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

// What memory hands the orchestrator for a turn: the candidates of each part of its context, each
// with its tokens, for the orchestrator to fit to its budget (the one place that does). The parts:
// the user's pinned profile facts, the items most relevant to the new message (with their
// dates), the rolling summaries of older parts of the conversation, and the recent messages.
// Summaries and recent messages come oldest first, as a prompt shows them: the newest are the
// ones to keep. Recent messages read as a dialogue: a reply (a message whose metadata names the
// message it answers as `replyTo`) follows that message. With messageId, the context ends at
// that message: it comes last, and user messages stored after it (and replies to them) are left
// out, as recent messages and as relevant items. Profile facts and recent messages are never
// recalled as relevant items too.
export const MemoryRecallRequest = z.object({
  userId: Id,
  conversationId: Id,
  // The turn's own message: the context ends at it (see above).
  messageId: Id.optional(),
  // What relevant memories are searched for: a turn's message text, which its caller has, so
  // memory never reads back the message it just stored. Without it, none are searched for.
  query: z.string().max(MESSAGE_MAX_CHARS).optional(),
  // The most tokens of each part the prompt could take (its whole budget): each list ends before
  // the candidate that would pass it (recent messages after the newest at least), which keeps
  // the answer small however long the conversation.
  tokenLimit: z.number().int().min(200).max(1_000_000).default(8_000),
  // Whose tokens these are: the model expected to answer (model-gateway.route).
  tokenizer: TokenizerFamily.default('estimate'),
  recentLimit: z.number().int().min(1).max(500).default(50),
});
export type MemoryRecallRequest = z.input<typeof MemoryRecallRequest>;

export const RecalledItem = z.object({
  kind: MemoryKind,
  id: Id,
  text: z.string(),
  createdAt: z.iso.datetime({ offset: true }),
  // A document chunk's document title, and the page the chunk begins on (PDFs), so an answer can
  // say where it read what it says. Its tokens count these too.
  title: z.string().optional(),
  page: z.number().int().min(1).optional(),
});
export type RecalledItem = z.infer<typeof RecalledItem>;

export const RecalledSummary = z.object({
  id: Id,
  content: z.string(),
  fromAt: z.iso.datetime({ offset: true }),
  toAt: z.iso.datetime({ offset: true }),
});
export type RecalledSummary = z.infer<typeof RecalledSummary>;

// Each candidate with its text's tokens, in the request's tokenizer.
const Tokens = { tokens: z.number().int().nonnegative() };

// A skill as the prompt's index names it (memory file skills/<name>.md); its procedure comes
// only through the skill_load tool.
export const SkillSummary = z.object({ name: z.string(), description: z.string() });
export type SkillSummary = z.infer<typeof SkillSummary>;

// The user's standing instructions and rules are always in the prompt, whole: memory keeps them
// within INSTRUCTIONS_TOKEN_CAP together, so they are never fitted or cut. Skills are only named.
// The three default to empty so that an answer without them (a memory service of an older
// version, mid-upgrade) still reads.
export const MemoryRecallResponse = z.object({
  instructions: z
    .object({ text: z.string(), ...Tokens })
    .nullable()
    .default(null),
  rules: z.array(z.object({ id: Id, content: z.string(), ...Tokens })).default([]),
  skills: z.array(SkillSummary).default([]),
  profile: z.array(z.object({ id: Id, content: z.string(), ...Tokens })),
  relevant: z.array(RecalledItem.extend(Tokens)),
  summaries: z.array(RecalledSummary.extend(Tokens)),
  recent: z.array(StoredMessage.extend(Tokens)),
});
export type MemoryRecallResponse = z.infer<typeof MemoryRecallResponse>;

export const memoryRecall = defineRpc('memory.recall', MemoryRecallRequest, MemoryRecallResponse);

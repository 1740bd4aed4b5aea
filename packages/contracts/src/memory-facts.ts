import { z } from 'zod';
import { Id, Timestamp } from './common';
import { defineRpc } from './define';

// Facts: semantic memory, short statements about the user ("prefers tea", "decided to move to
// Lisbon"). A fact is never changed in place or erased: an update creates its successor and
// closes the old version, a forget closes it. Only open (valid) facts are listed by default and
// found by memory.search. A fact may be stored with an end ahead ("until Friday"): past it, it
// is closed as if forgotten, and stays in history.

export const FACT_CONTENT_MAX_CHARS = 2_000;
export const FACT_TAGS_MAX = 32;
export const FACT_TAG_MAX_CHARS = 64;
export const FACT_SOURCE_MESSAGES_MAX = 100;
export const FACT_LIST_MAX_LIMIT = 200;
export const FACT_LIST_DEFAULT_LIMIT = 50;
// Older versions a get returns; a reply must stay well under the NATS message size limit.
export const FACT_HISTORY_MAX = 100;
export const FACT_DEFAULT_IMPORTANCE = 5;

export const FactCategory = z.enum([
  'fact',
  'preference',
  'decision',
  'insight',
  'reminder',
  'profile',
  // A standing rule ("always answer in metric"): in every prompt, with the user's instructions,
  // within INSTRUCTIONS_TOKEN_CAP. Only the user stores one, or approves the agent's proposal.
  'rule',
]);
export type FactCategory = z.infer<typeof FactCategory>;

export const FactContent = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(FACT_CONTENT_MAX_CHARS);

const FactTag = z.string().trim().min(1).max(FACT_TAG_MAX_CHARS);

export const FactTags = z
  .array(FactTag)
  .max(FACT_TAGS_MAX)
  .transform((tags) => [...new Set(tags)]);

export const FactImportance = z.number().int().min(1).max(10);

const SourceMessageIds = z
  .array(Id)
  .max(FACT_SOURCE_MESSAGES_MAX)
  .transform((ids) => [...new Set(ids)]);
const FactListLimit = z.number().int().min(1).max(FACT_LIST_MAX_LIMIT);

export const Fact = z.object({
  id: Id,
  category: FactCategory,
  content: z.string(),
  tags: z.array(z.string()),
  importance: FactImportance,
  sourceMessageIds: z.array(Id),
  validFrom: Timestamp,
  // Set when the fact was updated (then supersededBy names its successor) or forgotten, or
  // ahead when it was stored with an end; the fact is open until then.
  validTo: Timestamp.nullable(),
  supersededBy: Id.nullable(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type Fact = z.infer<typeof Fact>;

// The fields each subject takes besides the user, shared with the HTTP schemas below so the
// gateway and the memory service validate exactly the same thing.
const listFields = {
  category: FactCategory.optional(),
  tag: FactTag.optional(),
  includeInvalid: z.boolean().default(false),
  limit: FactListLimit.default(FACT_LIST_DEFAULT_LIMIT),
  // Cursor: only facts created before this instant; pass the last fact's createdAt.
  before: Timestamp.optional(),
};
const idFields = { id: Id };
const rememberFields = {
  content: FactContent,
  category: FactCategory.default('fact'),
  tags: FactTags.default([]),
  importance: FactImportance.default(FACT_DEFAULT_IMPORTANCE),
  sourceMessageIds: SourceMessageIds.default([]),
  // When the fact stops holding ("until Friday"); open-ended without it.
  validTo: Timestamp.optional(),
};
// Fields left out keep the current version's.
const changeFields = {
  content: FactContent.optional(),
  category: FactCategory.optional(),
  tags: FactTags.optional(),
  importance: FactImportance.optional(),
};

function hasChange(update: {
  content?: unknown;
  category?: unknown;
  tags?: unknown;
  importance?: unknown;
}): boolean {
  return [update.content, update.category, update.tags, update.importance].some(
    (field) => field !== undefined,
  );
}
const NOTHING_TO_CHANGE = 'give at least one of content, category, tags, importance';

// memory.facts.list: the user's facts, newest first; only valid ones unless includeInvalid.
export const MemoryFactsListRequest = z.object({ userId: Id, ...listFields });
export type MemoryFactsListRequest = z.input<typeof MemoryFactsListRequest>;
export const MemoryFactsListResponse = z.object({ facts: z.array(Fact) });
export type MemoryFactsListResponse = z.infer<typeof MemoryFactsListResponse>;
export const memoryFactsList = defineRpc(
  'memory.facts.list',
  MemoryFactsListRequest,
  MemoryFactsListResponse,
);

// memory.facts.get: one fact, valid or not, and the versions it replaced, newest first.
export const MemoryFactsGetRequest = z.object({ userId: Id, ...idFields });
export type MemoryFactsGetRequest = z.input<typeof MemoryFactsGetRequest>;
export const MemoryFactsGetResponse = z.object({
  fact: Fact,
  history: z.array(Fact),
  // More than FACT_HISTORY_MAX older versions exist; the oldest are left out.
  isHistoryTruncated: z.boolean(),
});
export type MemoryFactsGetResponse = z.infer<typeof MemoryFactsGetResponse>;
export const memoryFactsGet = defineRpc(
  'memory.facts.get',
  MemoryFactsGetRequest,
  MemoryFactsGetResponse,
);

// memory.facts.remember: stores a fact at once ("remember that ..."). An open fact that says
// the same (the same words, or nearly: see isDuplicate) is answered instead of a new one, its
// importance raised to the higher of the two; when this one has a later end (validTo) than the
// open one, or the open one has none, the open one is closed and a new version with that end
// answered. A rule that would take the standing instructions past INSTRUCTIONS_TOKEN_CAP answers
// bad_request.
export const MemoryFactsRememberRequest = z.object({
  userId: Id,
  ...rememberFields,
  // The turn whose agent called the remember tool: the fact is then recorded as something that
  // turn learned (GET /v1/memory/extractions), undoable like extraction's. Not in the HTTP body.
  turnId: Id.optional(),
});
export type MemoryFactsRememberRequest = z.input<typeof MemoryFactsRememberRequest>;
export const MemoryFactsRememberResponse = z.object({
  fact: Fact,
  // The fact was already known: `fact` is the open one that says it (its new version, when
  // this request gave it a later end; otherwise no new row was stored).
  isDuplicate: z.boolean(),
});
export type MemoryFactsRememberResponse = z.infer<typeof MemoryFactsRememberResponse>;
export const memoryFactsRemember = defineRpc(
  'memory.facts.remember',
  MemoryFactsRememberRequest,
  MemoryFactsRememberResponse,
);

// memory.facts.update: creates the successor of a valid fact and answers it; the old version is
// closed and points to it. An invalid fact answers conflict.
export const MemoryFactsUpdateRequest = z
  .object({ userId: Id, ...idFields, ...changeFields })
  .refine(hasChange, NOTHING_TO_CHANGE);
export type MemoryFactsUpdateRequest = z.input<typeof MemoryFactsUpdateRequest>;
export const MemoryFactsUpdateResponse = z.object({ fact: Fact });
export type MemoryFactsUpdateResponse = z.infer<typeof MemoryFactsUpdateResponse>;
export const memoryFactsUpdate = defineRpc(
  'memory.facts.update',
  MemoryFactsUpdateRequest,
  MemoryFactsUpdateResponse,
);

// memory.facts.forget: closes a valid fact (kept, no longer listed or searched) and answers it.
// An invalid fact answers conflict.
export const MemoryFactsForgetRequest = z.object({ userId: Id, ...idFields });
export type MemoryFactsForgetRequest = z.input<typeof MemoryFactsForgetRequest>;
export const MemoryFactsForgetResponse = z.object({ fact: Fact });
export type MemoryFactsForgetResponse = z.infer<typeof MemoryFactsForgetResponse>;
export const memoryFactsForget = defineRpc(
  'memory.facts.forget',
  MemoryFactsForgetRequest,
  MemoryFactsForgetResponse,
);

// HTTP under /v1/memory/facts. The user comes from the API key, so none of these take one;
// query strings arrive as text and are coerced.

// GET /?category=&tag=&includeInvalid=&limit=&before=
export const FactsListQuery = z.strictObject({
  ...listFields,
  includeInvalid: z.stringbool({ truthy: ['true'], falsy: ['false'] }).default(false),
  limit: z.coerce.number().pipe(FactListLimit).optional(),
});
// GET /:id, PATCH /:id, DELETE /:id
export const FactIdParams = z.strictObject(idFields);
// POST /
export const FactRememberBody = z.strictObject(rememberFields);
// PATCH /:id (the id is in the path)
export const FactUpdateBody = z.strictObject(changeFields).refine(hasChange, NOTHING_TO_CHANGE);

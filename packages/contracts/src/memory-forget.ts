import { z } from 'zod';
import { Id } from './common';
import { defineRpc } from './define';

// Forgetting by query: the user asks what memory holds about something, sees the matches, then
// picks the ones to forget. A forgotten fact is closed like any forget; a forgotten message is
// kept for the record but never recalled, searched or exported again; a forgotten memory file (an
// episode, a note) is deleted like any file, its versions kept, and no longer recalled.

export const FORGET_PREVIEW_MAX_LIMIT = 50;
export const FORGET_APPLY_MAX_ITEMS = 100;

export const ForgettableKind = z.enum(['fact', 'message', 'file']);
export type ForgettableKind = z.infer<typeof ForgettableKind>;

// The fields each subject takes besides the user, shared with the HTTP bodies below so the
// gateway and the memory service validate exactly the same thing.
const previewFields = {
  query: z.string().trim().min(1, 'must not be empty').max(2_000),
  limit: z.number().int().min(1).max(FORGET_PREVIEW_MAX_LIMIT).default(20),
};
const applyFields = {
  items: z
    .array(z.strictObject({ kind: ForgettableKind, id: Id }))
    .min(1, 'must not be empty')
    .max(FORGET_APPLY_MAX_ITEMS),
};

export const ForgetMatch = z.object({
  kind: ForgettableKind,
  id: Id,
  text: z.string(),
  createdAt: z.iso.datetime({ offset: true }),
});
export type ForgetMatch = z.infer<typeof ForgetMatch>;

// memory.forget.preview: the valid facts, messages and memory files that match the query, best
// first.
export const MemoryForgetPreviewRequest = z.object({ userId: Id, ...previewFields });
export type MemoryForgetPreviewRequest = z.input<typeof MemoryForgetPreviewRequest>;
export const MemoryForgetPreviewResponse = z.object({ matches: z.array(ForgetMatch) });
export type MemoryForgetPreviewResponse = z.infer<typeof MemoryForgetPreviewResponse>;
export const memoryForgetPreview = defineRpc(
  'memory.forget.preview',
  MemoryForgetPreviewRequest,
  MemoryForgetPreviewResponse,
);

// memory.forget.apply: forgets the items at once (one transaction). Ids that are not the user's,
// and items forgotten already, are left alone and not counted.
export const MemoryForgetApplyRequest = z.object({ userId: Id, ...applyFields });
export type MemoryForgetApplyRequest = z.input<typeof MemoryForgetApplyRequest>;
export const MemoryForgetApplyResponse = z.object({ forgotten: z.number().int().nonnegative() });
export type MemoryForgetApplyResponse = z.infer<typeof MemoryForgetApplyResponse>;
export const memoryForgetApply = defineRpc(
  'memory.forget.apply',
  MemoryForgetApplyRequest,
  MemoryForgetApplyResponse,
);

// HTTP under /v1/memory/forget; the user comes from the API key.

// POST /preview
export const ForgetPreviewBody = z.strictObject(previewFields);
// POST /
export const ForgetApplyBody = z.strictObject(applyFields);

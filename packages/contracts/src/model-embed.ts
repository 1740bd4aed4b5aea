import { z } from 'zod';
import { Id } from './common';
import { defineRpc } from './define';

// Texts longer than this are cut by the gateway: embedding models read a few thousand tokens.
export const EMBED_TEXT_MAX_CHARS = 32_000;
export const EMBED_BATCH_MAX = 256;

export const ModelEmbedRequest = z.object({
  userId: Id.optional(),
  texts: z.array(z.string().max(EMBED_TEXT_MAX_CHARS)).min(1).max(EMBED_BATCH_MAX),
  // Ask for one model of the embed route, as provider/model (e.g. the one an index was built
  // with); without it the first model that answers does. None answering, or none configured, is
  // a typed `unavailable` error: there are no stand-in vectors.
  model: z.string().min(1).max(200).optional(),
});
export type ModelEmbedRequest = z.input<typeof ModelEmbedRequest>;

export const ModelEmbedResponse = z.object({
  provider: z.string(),
  // provider/model: the identity an index stores vectors under.
  model: z.string(),
  dimensions: z.number().int().positive(),
  vectors: z.array(z.array(z.number())),
  inputTokens: z.number().int().nonnegative(),
  // How many of the texts came from the Redis cache.
  cached: z.number().int().nonnegative(),
});
export type ModelEmbedResponse = z.infer<typeof ModelEmbedResponse>;

export const modelEmbed = defineRpc('model-gateway.embed', ModelEmbedRequest, ModelEmbedResponse);

import { z } from 'zod';
import { defineRpc } from './define';
import { UsagePurpose } from './model-usage';

// How a model's tokens are counted before it is called (packages/tokens): OpenAI's two encodings
// exactly; Llama 3 with cl100k_base, which counts its tokens alike; Claude and models whose
// tokenizer is not known with the nearest encoding times a safety factor; `estimate` at four
// characters a token, for when no model is known.
export const TokenizerFamily = z.enum([
  'o200k_base',
  'cl100k_base',
  'llama3',
  'claude',
  'unknown',
  'estimate',
]);
export type TokenizerFamily = z.infer<typeof TokenizerFamily>;

// model-gateway.route: the models a purpose is routed to, in the order a call tries them, so a
// caller can size its prompt for the model that will answer.
export const ModelRouteRequest = z.object({ purpose: UsagePurpose });
export type ModelRouteRequest = z.input<typeof ModelRouteRequest>;

export const RoutedModel = z.object({
  provider: z.string(),
  model: z.string(),
  // Prompt and answer together, in the model's own tokens.
  contextWindow: z.number().int().positive(),
  tokenizer: TokenizerFamily,
  // Set while the provider cools down after failures: calls skip the model until then.
  coolingDownUntil: z.iso.datetime({ offset: true }).optional(),
});
export type RoutedModel = z.infer<typeof RoutedModel>;

export const ModelRouteResponse = z.object({
  purpose: UsagePurpose,
  // Empty when no model of the purpose has credentials.
  models: z.array(RoutedModel),
});
export type ModelRouteResponse = z.infer<typeof ModelRouteResponse>;

export const modelRoute = defineRpc('model-gateway.route', ModelRouteRequest, ModelRouteResponse);

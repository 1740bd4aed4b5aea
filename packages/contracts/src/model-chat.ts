import { z } from 'zod';
import { Id, Usage } from './common';
import { defineRpc } from './define';

export const ModelPurpose = z.enum(['chat', 'utility']);
export type ModelPurpose = z.infer<typeof ModelPurpose>;

export const ChatMessage = z.object({
  role: z.enum(['system', 'user', 'assistant']),
  content: z.string(),
});
export type ChatMessage = z.infer<typeof ChatMessage>;

export const ModelChatRequest = z.object({
  purpose: ModelPurpose.default('chat'),
  userId: Id.optional(),
  messages: z.array(ChatMessage).min(1),
  maxTokens: z.number().int().min(1).max(64_000).optional(),
  temperature: z.number().min(0).max(2).optional(),
});
export type ModelChatRequest = z.input<typeof ModelChatRequest>;

export const ModelChatResponse = z.object({
  content: z.string(),
  provider: z.string(),
  model: z.string(),
  finishReason: z.string(),
  usage: Usage,
});
export type ModelChatResponse = z.infer<typeof ModelChatResponse>;

export const modelChat = defineRpc('model-gateway.chat', ModelChatRequest, ModelChatResponse);

import type { ChatMessage, Usage } from '@jarvis/contracts';

export type ChatCall = {
  messages: ChatMessage[];
  maxTokens: number | undefined;
  temperature: number | undefined;
};

type ChatResult = {
  content: string;
  model: string;
  finishReason: string;
  usage: Usage;
};

export type ChatProvider = {
  name: string;
  model: string;
  chat(call: ChatCall): Promise<ChatResult>;
};

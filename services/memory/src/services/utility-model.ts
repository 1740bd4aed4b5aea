import type { Bus } from '@jarvis/bus';
import { type ChatMessage, modelChat } from '@jarvis/contracts';

// The small, cheap model that memory's background work uses: fact extraction, episodes, and
// condensing what "remember this" pointed to.
export type UtilityModelSettings = {
  // Longest wait for one answer of the utility model.
  modelTimeoutMs: number;
};

export async function askUtilityModel(
  bus: Bus,
  settings: UtilityModelSettings,
  userId: string,
  messages: ChatMessage[],
): Promise<string> {
  const { content } = await bus.request(
    modelChat,
    { purpose: 'utility', userId, temperature: 0, messages },
    { timeoutMs: settings.modelTimeoutMs },
  );
  return content;
}

// Models like to wrap JSON in a Markdown fence even when told not to.
const FENCED = /^\s*```[a-z]*\s*\n?([\s\S]*?)\s*```\s*$/i;

// The JSON inside an answer, fenced or not; undefined when it is not JSON.
export function readJsonAnswer(text: string): unknown {
  const body = FENCED.exec(text)?.[1] ?? text;
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

import type { ChatMessage, StoredMessage } from '@jarvis/contracts';

const PERSONA =
  'You are Jarvis, a personal assistant in one long, continuous conversation with your user. ' +
  'Use what they told you earlier in the conversation. Be concise and direct.';

// System prompt, then the recent conversation as the model should see it.
export function buildPrompt(recent: StoredMessage[], now: Date): ChatMessage[] {
  const system: ChatMessage = {
    role: 'system',
    content: `${PERSONA}\nCurrent date and time (UTC): ${now.toISOString()}.`,
  };
  const history = recent.flatMap((message): ChatMessage[] =>
    message.role === 'user' || message.role === 'assistant'
      ? [{ role: message.role, content: message.content }]
      : [],
  );
  return [system, ...history];
}

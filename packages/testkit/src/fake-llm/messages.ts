import type { Parsed } from './types';

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

export function readString(record: Record<string, unknown>, key: string): string | undefined {
  const value = record[key];
  return typeof value === 'string' ? value : undefined;
}

export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** Text parts only: OpenAI `{type:'text', text}` parts and Anthropic text blocks look alike. */
function extractText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter(isRecord)
    .filter((part) => part.type === 'text')
    .map((part) => readString(part, 'text') ?? '')
    .join('\n');
}

/** Everything a model would read, including tool results and earlier tool calls. */
export function extractAllText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter(isRecord)
    .map((part) => {
      if (part.type === 'tool_result') return extractAllText(part.content);
      if (part.type === 'tool_use') return JSON.stringify(part.input ?? {});
      return readString(part, 'text') ?? '';
    })
    .join('\n');
}

function extractToolCallText(toolCalls: unknown): string {
  if (!Array.isArray(toolCalls)) return '';
  return toolCalls
    .filter(isRecord)
    .map((call) => {
      const fn = isRecord(call.function) ? call.function : {};
      const args = fn.arguments;
      return `${readString(fn, 'name') ?? ''}${typeof args === 'string' ? args : JSON.stringify(args ?? {})}`;
    })
    .join('\n');
}

export function measureMessages(messages: unknown[]): string {
  return messages
    .filter(isRecord)
    .map((message) =>
      [extractAllText(message.content), extractToolCallText(message.tool_calls)]
        .filter((text) => text !== '')
        .join('\n'),
    )
    .join('\n');
}

export function findLastUserText(messages: unknown[]): string {
  const lastUser = messages.filter(isRecord).findLast((message) => message.role === 'user');
  return lastUser ? extractText(lastUser.content) : '';
}

/** Shared request shape of the three chat APIs: `{model, messages: [...]}`. */
export function parseChatBasics(
  body: unknown,
): Parsed<{ body: Record<string, unknown>; model: string; messages: unknown[] }> {
  if (!isRecord(body)) return { ok: false, message: 'Request body must be a JSON object.' };
  const model = readString(body, 'model');
  if (model === undefined || model === '') {
    return { ok: false, message: "'model' is required and must be a string." };
  }
  const messages = body.messages;
  if (!Array.isArray(messages)) return { ok: false, message: "'messages' must be an array." };
  return { ok: true, value: { body, model, messages } };
}

export function splitWords(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

/** Two pieces so clients have to concatenate partial JSON, like real streams. */
export function splitInHalf(text: string): string[] {
  if (text.length < 2) return [text];
  const middle = Math.ceil(text.length / 2);
  return [text.slice(0, middle), text.slice(middle)];
}

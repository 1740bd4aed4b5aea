import { createHash } from 'node:crypto';
import { type ChatGptExport, type ImportedMessage, Timestamp } from '@jarvis/contracts';
import { HttpError } from '@jarvis/service-kit';

export type ParsedConversation = {
  // Stable per user and ChatGPT conversation, so importing the same export again adds nothing.
  conversationId: string;
  sourceId: string;
  messages: ImportedMessage[];
};

const ROLES = new Set(['user', 'assistant']);
const MAX_CONTENT = 32_000;

// Seconds since 1970 as an instant of years 0001-9999, or undefined: a time out of that range
// failed in Postgres (year 0000) or in Date itself (1e20), after earlier conversations were
// stored.
function instantOf(seconds: number): string | undefined {
  const date = new Date(seconds * 1_000);
  if (Number.isNaN(date.getTime())) return undefined;
  const instant = date.toISOString();
  return Timestamp.safeParse(instant).success ? instant : undefined;
}

function badTime(where: string, seconds: number): HttpError {
  return new HttpError('bad_request', `${where}: create_time ${seconds}: year must be 0001-9999`);
}

// Every conversation is read, and every time checked, before any is stored: a bad one answers
// 400 naming it (counted from 1, messages in the order they are imported).
export function parseChatGptExport(userId: string, data: ChatGptExport): ParsedConversation[] {
  return data.flatMap((conversation, position) => {
    const sourceId = conversation.conversation_id ?? conversation.id ?? `position-${position}`;
    const fallbackTime = conversation.create_time ?? 0;
    if (instantOf(fallbackTime) === undefined) {
      throw badTime(`conversation ${position + 1}`, fallbackTime);
    }
    const branch: { role: ImportedMessage['role']; content: string; seconds: number }[] = [];
    const seen = new Set<string>();
    let nodeId = conversation.current_node ?? lastLeaf(conversation.mapping);
    // Walk up to the root, then reverse: the branch in order.
    while (nodeId && !seen.has(nodeId)) {
      seen.add(nodeId);
      const node = conversation.mapping[nodeId];
      if (!node) break;
      const message = node.message;
      const text = (message?.content?.parts ?? [])
        .filter((part): part is string => typeof part === 'string')
        .join('\n')
        .trim();
      const role = message?.author.role;
      if (message && role && ROLES.has(role) && text) {
        branch.push({
          role: role === 'user' ? 'user' : 'assistant',
          content: text.slice(0, MAX_CONTENT),
          seconds: message.create_time ?? fallbackTime,
        });
      }
      nodeId = node.parent ?? undefined;
    }
    const messages = branch.reverse().map(({ role, content, seconds }, index): ImportedMessage => {
      const createdAt = instantOf(seconds);
      if (createdAt === undefined) {
        throw badTime(`conversation ${position + 1}, message ${index + 1}`, seconds);
      }
      return {
        role,
        content,
        createdAt,
        metadata: { source: 'chatgpt', title: conversation.title ?? null, chatgptId: sourceId },
      };
    });
    return messages.length > 0
      ? [{ conversationId: stableUuid(`chatgpt:${userId}:${sourceId}`), sourceId, messages }]
      : [];
  });
}

// Without current_node, the node nothing points to as a parent.
function lastLeaf(mapping: ChatGptExport[number]['mapping']): string | undefined {
  const parents = new Set(
    Object.values(mapping).flatMap((node) => (node.parent ? [node.parent] : [])),
  );
  return Object.keys(mapping).find((id) => !parents.has(id));
}

function stableUuid(seed: string): string {
  const hex = createHash('sha256').update(seed).digest('hex');
  // Version 5-style bits so it is a valid RFC 4122 UUID.
  const variant = ((Number.parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

import { createHash } from 'node:crypto';
import type { ImportedMessage } from '@jarvis/contracts';
import { z } from 'zod';

// ChatGPT's data export (`conversations.json`): each conversation is a tree of nodes; the branch
// the user last saw runs from `current_node` up through `parent` links. Only what is needed is
// described, loosely, so fields OpenAI adds later do not break the import.
const Node = z.object({
  parent: z.string().nullish(),
  message: z
    .object({
      author: z.object({ role: z.string() }),
      create_time: z.number().nullish(),
      content: z
        .object({ content_type: z.string().optional(), parts: z.array(z.unknown()).optional() })
        .optional(),
    })
    .nullish(),
});

const Conversation = z.object({
  id: z.string().optional(),
  conversation_id: z.string().optional(),
  title: z.string().nullish(),
  create_time: z.number().nullish(),
  current_node: z.string().nullish(),
  mapping: z.record(z.string(), Node),
});

export const ChatGptExport = z.array(Conversation).min(1, 'the export holds no conversation');
export type ChatGptExport = z.infer<typeof ChatGptExport>;

export type ParsedConversation = {
  // Stable per user and ChatGPT conversation, so importing the same export again adds nothing.
  conversationId: string;
  sourceId: string;
  messages: ImportedMessage[];
};

const ROLES = new Set(['user', 'assistant']);
const MAX_CONTENT = 32_000;

export function parseChatGptExport(userId: string, data: ChatGptExport): ParsedConversation[] {
  return data.flatMap((conversation, position) => {
    const sourceId = conversation.conversation_id ?? conversation.id ?? `position-${position}`;
    const fallbackTime = conversation.create_time ?? 0;
    const messages: ImportedMessage[] = [];
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
        messages.push({
          role: role === 'user' ? 'user' : 'assistant',
          content: text.slice(0, MAX_CONTENT),
          createdAt: new Date((message.create_time ?? fallbackTime) * 1_000).toISOString(),
          metadata: { source: 'chatgpt', title: conversation.title ?? null, chatgptId: sourceId },
        });
      }
      nodeId = node.parent ?? undefined;
    }
    messages.reverse();
    return messages.length > 0
      ? [{ conversationId: stableUuid(`chatgpt:${userId}:${sourceId}`), sourceId, messages }]
      : [];
  });
}

// Without current_node, the node nothing points to as a parent.
function lastLeaf(mapping: Record<string, z.infer<typeof Node>>): string | undefined {
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

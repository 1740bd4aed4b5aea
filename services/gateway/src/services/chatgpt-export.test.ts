import { ChatGptExport } from '@jarvis/contracts';
import { describe, expect, it } from 'vitest';
import { parseChatGptExport } from './chatgpt-export';

const USER = '00000000-0000-4000-8000-000000000001';

function node(parent: string | null, role: string | null, parts: unknown[], time?: number) {
  return {
    parent,
    message: role
      ? { author: { role }, create_time: time ?? null, content: { content_type: 'text', parts } }
      : null,
  };
}

const EXPORT = ChatGptExport.parse([
  {
    conversation_id: 'conv-1',
    title: 'Trip planning',
    create_time: 1_700_000_000,
    current_node: 'a2',
    mapping: {
      root: node(null, null, []),
      sys: node('root', 'system', ['You are ChatGPT']),
      u1: node('sys', 'user', ['Plan a trip to Lisbon'], 1_700_000_100),
      a1: node('u1', 'assistant', ['First draft'], 1_700_000_110),
      // The user regenerated the answer: the branch current_node points to wins.
      a2: node('u1', 'assistant', ['Second draft', { image: 'x' }, 'with details'], 1_700_000_120),
      tool: node('u1', 'tool', ['browsing result']),
    },
  },
  { id: 'empty', title: 'Nothing', mapping: { root: node(null, null, []) } },
]);

describe('parseChatGptExport', () => {
  it('keeps the branch the user last saw, in order, text parts only', () => {
    const [conversation, ...rest] = parseChatGptExport(USER, EXPORT);
    expect(rest).toEqual([]);
    expect(conversation?.sourceId).toBe('conv-1');
    expect(conversation?.messages).toEqual([
      {
        role: 'user',
        content: 'Plan a trip to Lisbon',
        createdAt: new Date(1_700_000_100_000).toISOString(),
        metadata: { source: 'chatgpt', title: 'Trip planning', chatgptId: 'conv-1' },
      },
      {
        role: 'assistant',
        content: 'Second draft\nwith details',
        createdAt: new Date(1_700_000_120_000).toISOString(),
        metadata: { source: 'chatgpt', title: 'Trip planning', chatgptId: 'conv-1' },
      },
    ]);
  });

  it('gives each user a stable conversation id of their own', () => {
    const first = parseChatGptExport(USER, EXPORT)[0]?.conversationId;
    const again = parseChatGptExport(USER, EXPORT)[0]?.conversationId;
    const other = parseChatGptExport('00000000-0000-4000-8000-000000000002', EXPORT)[0]
      ?.conversationId;
    expect(first).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(again).toBe(first);
    expect(other).not.toBe(first);
  });

  it('finds the last message without current_node', () => {
    const data = ChatGptExport.parse([
      {
        id: 'c',
        mapping: { u: node(null, 'user', ['hi'], 1), a: node('u', 'assistant', ['hello'], 2) },
      },
    ]);
    expect(parseChatGptExport(USER, data)[0]?.messages.map((message) => message.content)).toEqual([
      'hi',
      'hello',
    ]);
  });

  it('rejects what is not an export', () => {
    expect(ChatGptExport.safeParse([]).success).toBe(false);
    expect(ChatGptExport.safeParse([{ title: 'no mapping' }]).success).toBe(false);
  });
});

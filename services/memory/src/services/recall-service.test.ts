import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RecentMessage } from '../repositories/messages-repository';
import { toDialogue } from './recall-service';

const conversationId = randomUUID();

function message(role: 'user' | 'assistant', content: string, replyTo?: RecentMessage) {
  return {
    id: randomUUID(),
    conversationId,
    role,
    content,
    createdAt: new Date().toISOString(),
    replyTo: replyTo?.id,
  } satisfies RecentMessage;
}

describe('toDialogue', () => {
  it('puts each reply after its question, and the own message last', () => {
    const q1 = message('user', 'Q1');
    const q2 = message('user', 'Q2');
    const q3 = message('user', 'Q3');
    // Stored while Q3 waited for its turn: a mission's report, which answers no message.
    const report = message('assistant', 'the report');
    const a1 = message('assistant', 'A1', q1);
    const a2 = message('assistant', 'A2', q2);

    const dialogue = toDialogue([q1, q2, q3, report, a1, a2], q3.id);

    expect(dialogue.map((item) => item.content)).toEqual([
      'Q1',
      'A1',
      'Q2',
      'A2',
      'the report',
      'Q3',
    ]);
  });

  it('leaves out a reply to the own message that an earlier attempt stored', () => {
    const q1 = message('user', 'Q1');
    const stale = message('assistant', 'an answer from a crashed attempt', q1);

    expect(toDialogue([q1, stale], q1.id).map((item) => item.content)).toEqual(['Q1']);
  });

  it('keeps the stored order of messages that name no question, as before replies did', () => {
    const items = [message('user', 'old Q'), message('assistant', 'old A'), message('user', 'Q')];

    expect(toDialogue(items, undefined)).toEqual(items);
  });
});

import { randomUUID } from 'node:crypto';
import type { MessageRole, StoredMessage } from '@jarvis/contracts';
import { describe, expect, it } from 'vitest';
import { buildPrompt } from './build-prompt';

const conversationId = randomUUID();
const NOW = new Date('2025-06-01T12:34:56.789Z');

function stored(role: MessageRole, content: string): StoredMessage {
  return {
    id: randomUUID(),
    conversationId,
    role,
    content,
    createdAt: '2025-06-01T12:00:00.000Z',
  };
}

describe('buildPrompt', () => {
  it('starts with a system message that gives the current date and time', () => {
    const prompt = buildPrompt([], NOW);

    expect(prompt).toHaveLength(1);
    expect(prompt[0]?.role).toBe('system');
    expect(prompt[0]?.content).toContain('Jarvis');
    expect(prompt[0]?.content).toContain('2025-06-01T12:34:56.789Z');
  });

  it('keeps the user and assistant messages in their order, after the system message', () => {
    const prompt = buildPrompt(
      [
        stored('user', 'my favourite colour is purple'),
        stored('assistant', 'Noted.'),
        stored('user', 'what is my favourite colour?'),
      ],
      NOW,
    );

    expect(prompt.slice(1)).toEqual([
      { role: 'user', content: 'my favourite colour is purple' },
      { role: 'assistant', content: 'Noted.' },
      { role: 'user', content: 'what is my favourite colour?' },
    ]);
    expect(prompt[0]?.role).toBe('system');
  });

  it('leaves out stored system and tool messages', () => {
    const prompt = buildPrompt(
      [
        stored('system', 'an old system note'),
        stored('user', 'search the web'),
        stored('tool', '{"results": []}'),
        stored('assistant', 'Nothing found.'),
      ],
      NOW,
    );

    expect(prompt.map((message) => message.role)).toEqual(['system', 'user', 'assistant']);
    expect(prompt.map((message) => message.content)).not.toContain('an old system note');
    expect(prompt.slice(1)).toEqual([
      { role: 'user', content: 'search the web' },
      { role: 'assistant', content: 'Nothing found.' },
    ]);
  });
});

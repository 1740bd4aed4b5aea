import { describe, expect, it } from 'vitest';
import { loadEnv } from '../env';
import { selectChatProvider } from './select-provider';

// Which provider answers is decided once at boot from the environment; the calls each one makes
// are covered through the bus in handlers.test.ts.
describe('selectChatProvider', () => {
  it.each([
    [
      'an Anthropic key',
      { ANTHROPIC_API_KEY: 'sk-ant', ANTHROPIC_CHAT_MODEL: 'claude-x' },
      'anthropic',
      'claude-x',
    ],
    [
      'an Anthropic key beside an OpenAI key',
      { ANTHROPIC_API_KEY: 'sk-ant', OPENAI_API_KEY: 'sk-oa' },
      'anthropic',
      'claude-sonnet-4-5',
    ],
    ['an OpenAI key', { OPENAI_API_KEY: 'sk-oa' }, 'openai', 'gpt-4o-mini'],
    [
      'an OpenAI-compatible base URL without a key',
      { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', OPENAI_CHAT_MODEL: 'local' },
      'openai',
      'local',
    ],
    [
      'an empty Anthropic key',
      { ANTHROPIC_API_KEY: '', OPENAI_API_KEY: 'sk-oa' },
      'openai',
      'gpt-4o-mini',
    ],
    ['no cloud settings', {}, 'ollama', 'llama3.2:3b'],
    [
      'empty cloud settings',
      { ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', OPENAI_BASE_URL: '' },
      'ollama',
      'llama3.2:3b',
    ],
  ])('picks the right provider for %s', (_label, source, name, model) => {
    const provider = selectChatProvider(loadEnv(source));

    expect({ name: provider.name, model: provider.model }).toEqual({ name, model });
  });
});

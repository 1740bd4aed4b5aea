import { describe, expect, it } from 'vitest';
import { tokenizerFamilyOf } from './tokenizer-family';

describe('tokenizerFamilyOf', () => {
  it.each([
    ['anthropic', 'claude-sonnet-4-5', 'claude'],
    ['openai', 'anthropic/claude-3.5-haiku', 'claude'],
    ['openai', 'gpt-4.1-mini', 'o200k_base'],
    ['openai', 'gpt-4o-mini', 'o200k_base'],
    ['openai', 'gpt-5', 'o200k_base'],
    ['openai', 'o3-mini', 'o200k_base'],
    ['ollama', 'gpt-oss:20b', 'o200k_base'],
    ['openai', 'gpt-4-turbo', 'cl100k_base'],
    ['openai', 'gpt-3.5-turbo', 'cl100k_base'],
    ['openai', 'text-embedding-3-small', 'cl100k_base'],
    ['ollama', 'llama3.2:3b', 'llama3'],
    ['openai', 'meta-llama/Llama-3.1-8B-Instruct', 'llama3'],
    ['ollama', 'mistral:7b', 'unknown'],
    ['openai', 'fake-chat', 'unknown'],
  ])('%s/%s reads its prompt with %s', (provider, model, family) => {
    expect(tokenizerFamilyOf(provider, model)).toBe(family);
  });
});

import type { TokenizerFamily } from '@jarvis/contracts';

// By model name, whoever serves it (an OpenAI-compatible server or Ollama may run gpt-oss, a
// proxy may name models "vendor/model"): OpenAI's models since GPT-4o use o200k_base, GPT-4,
// GPT-3.5 and the embedding models cl100k_base.
const O200K_MODELS = /^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|chatgpt-|o\d)/;
const CL100K_MODELS = /^(gpt-4|gpt-3\.5|text-embedding-)/;
// Ollama's tags: llama3, llama3.1:8b, llama3.2:3b, llama3.3.
const LLAMA3_MODELS = /^llama-?3/;

// Which tokenizer a routed model reads its prompt with, as far as can be told from its name.
export function tokenizerFamilyOf(provider: string, model: string): TokenizerFamily {
  const name = model.slice(model.lastIndexOf('/') + 1).toLowerCase();
  if (provider === 'anthropic' || name.startsWith('claude')) return 'claude';
  if (O200K_MODELS.test(name)) return 'o200k_base';
  if (CL100K_MODELS.test(name)) return 'cl100k_base';
  if (LLAMA3_MODELS.test(name)) return 'llama3';
  return 'unknown';
}

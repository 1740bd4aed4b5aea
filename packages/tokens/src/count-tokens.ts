import type { TokenizerFamily } from '@jarvis/contracts';

export type TokenCounter = {
  family: TokenizerFamily;
  // Tokens of a text as the family's models read it: exact for OpenAI's encodings, an upper
  // estimate for the others.
  count(text: string): number;
};

type Encoding = 'o200k_base' | 'cl100k_base';

// The encoding each family is counted with, and the factor its count is multiplied by where the
// model's own tokenizer is not to be had. Measured on 2,844 texts (LoCoMo conversation turns,
// this repo's Markdown, TypeScript and JSON) against the real tokenizers where they are public.
const COUNTING: Record<
  Exclude<TokenizerFamily, 'estimate'>,
  { encoding: Encoding; factor: number }
> = {
  o200k_base: { encoding: 'o200k_base', factor: 1 },
  cl100k_base: { encoding: 'cl100k_base', factor: 1 },
  // Llama 3's vocabulary is cl100k_base's 100k tokens plus 28k more, mostly for other scripts:
  // its count was never above cl100k_base's (within 0.1% overall), and lower in other scripts.
  llama3: { encoding: 'cl100k_base', factor: 1 },
  // Claude's tokenizer is not published. A comparison made with Anthropic's token-counting API
  // found Claude 3.5 Sonnet's counts 16% (English prose), 21% (math) and 30% (Python) above
  // GPT-4o's o200k_base: 1.3 covers the worst of them.
  claude: { encoding: 'o200k_base', factor: 1.3 },
  // A local model of another family. The smallest common vocabularies (32k SentencePiece:
  // Llama 2, Mistral 7B, Phi-3) counted 1.15× cl100k_base on conversation, 1.19× on Markdown
  // and 1.29× on TypeScript (worst single text 1.54×); larger vocabularies should count fewer.
  unknown: { encoding: 'cl100k_base', factor: 1.3 },
};

// Text is the user's: "<|endoftext|>" in a message is text, not a control token (the encoder
// would otherwise throw on it).
const AS_TEXT = { disallowedSpecial: new Set<string>() };

const encodings = new Map<Encoding, Promise<(text: string) => number>>();

// An encoding's tables take 100–200 ms and 40–70 MB to load, so each is loaded once per process,
// and only when a counter first needs it.
function loadEncoding(encoding: Encoding): Promise<(text: string) => number> {
  const known = encodings.get(encoding);
  if (known) return known;
  const loading = (
    encoding === 'o200k_base'
      ? import('gpt-tokenizer/encoding/o200k_base')
      : import('gpt-tokenizer/encoding/cl100k_base')
  ).then((module) => (text: string) => module.countTokens(text, AS_TEXT));
  encodings.set(encoding, loading);
  return loading;
}

// About four characters a token in English: what is counted when no model is known. It
// undercounts other scripts badly (a Japanese sentence: 15 estimated, 45 in o200k_base).
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

export async function loadTokenCounter(family: TokenizerFamily): Promise<TokenCounter> {
  if (family === 'estimate') return { family, count: estimateTokens };
  const { encoding, factor } = COUNTING[family];
  const countExactly = await loadEncoding(encoding);
  return { family, count: (text) => Math.ceil(countExactly(text) * factor) };
}

import { createHash } from 'node:crypto';
import { estimateTokens, isRecord, isStringArray, readString } from './messages';
import type { JsonReply, Parsed } from './types';

export const DEFAULT_EMBEDDING_DIMENSIONS = 16;
const MAX_EMBEDDING_DIMENSIONS = 8192;

/**
 * Deterministic, L2-normalised vector for `text`. Values are rounded to float32 so the float and
 * base64 encodings decode to identical numbers.
 */
export function computeFakeEmbedding(
  text: string,
  dimensions = DEFAULT_EMBEDDING_DIMENSIONS,
): number[] {
  const seed = createHash('sha256').update(text).digest().readUInt32LE(0);
  const nextRandom = createRandom(seed);
  const raw = Array.from({ length: dimensions }, () => nextRandom() * 2 - 1);
  const norm = Math.sqrt(raw.reduce((sum, value) => sum + value * value, 0)) || 1;
  return raw.map((value) => Math.fround(value / norm));
}

// mulberry32: tiny and good enough to spread a 32-bit seed over many dimensions.
function createRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function encodeFloat32Base64(vector: number[]): string {
  const buffer = Buffer.alloc(vector.length * 4);
  vector.forEach((value, index) => {
    buffer.writeFloatLE(value, index * 4);
  });
  return buffer.toString('base64');
}

function isNumberArray(value: unknown): value is number[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'number');
}

/** OpenAI also accepts token arrays; they are embedded by their JSON text. */
function readInputs(input: unknown): string[] | undefined {
  if (typeof input === 'string') return [input];
  if (isStringArray(input) && input.length > 0) return input;
  if (isNumberArray(input) && input.length > 0) return [JSON.stringify(input)];
  if (Array.isArray(input) && input.length > 0 && input.every(isNumberArray)) {
    return input.map((tokens) => JSON.stringify(tokens));
  }
  return undefined;
}

function readDimensions(value: unknown, fallback: number): Parsed<number> {
  if (value === undefined || value === null) return { ok: true, value: fallback };
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value < 1 ||
    value > MAX_EMBEDDING_DIMENSIONS
  ) {
    return {
      ok: false,
      message: `'dimensions' must be an integer between 1 and ${MAX_EMBEDDING_DIMENSIONS}.`,
    };
  }
  return { ok: true, value };
}

type EmbeddingRequest = { model: string; texts: string[]; dimensions: number };

function parseEmbeddingRequest(
  body: unknown,
  inputKey: 'input' | 'prompt',
  defaultDimensions: number,
): Parsed<EmbeddingRequest> {
  if (!isRecord(body)) return { ok: false, message: 'Request body must be a JSON object.' };
  const model = readString(body, 'model');
  if (model === undefined || model === '') {
    return { ok: false, message: "'model' is required and must be a string." };
  }
  const texts =
    inputKey === 'prompt' ? readInputs(readString(body, 'prompt')) : readInputs(body.input);
  if (texts === undefined) {
    return { ok: false, message: `'${inputKey}' must be a non-empty string or array of strings.` };
  }
  const dimensions = readDimensions(body.dimensions, defaultDimensions);
  if (!dimensions.ok) return dimensions;
  return { ok: true, value: { model, texts, dimensions: dimensions.value } };
}

export function readEmbeddingModel(body: unknown): string | undefined {
  return isRecord(body) ? readString(body, 'model') : undefined;
}

export function answerOpenAiEmbeddings(body: unknown, defaultDimensions: number): JsonReply {
  const parsed = parseEmbeddingRequest(body, 'input', defaultDimensions);
  if (!parsed.ok) {
    return {
      status: 400,
      body: {
        error: { message: parsed.message, type: 'invalid_request_error', param: null, code: null },
      },
    };
  }
  const { model, texts, dimensions } = parsed.value;
  const useBase64 = isRecord(body) && body.encoding_format === 'base64';
  const promptTokens = texts.reduce((sum, text) => sum + estimateTokens(text), 0);
  return {
    status: 200,
    body: {
      object: 'list',
      data: texts.map((text, index) => {
        const vector = computeFakeEmbedding(text, dimensions);
        return {
          object: 'embedding',
          index,
          embedding: useBase64 ? encodeFloat32Base64(vector) : vector,
        };
      }),
      model,
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    },
  };
}

export function answerOllamaEmbed(body: unknown, defaultDimensions: number): JsonReply {
  const parsed = parseEmbeddingRequest(body, 'input', defaultDimensions);
  if (!parsed.ok) return { status: 400, body: { error: parsed.message } };
  const { model, texts, dimensions } = parsed.value;
  return {
    status: 200,
    body: {
      model,
      embeddings: texts.map((text) => computeFakeEmbedding(text, dimensions)),
      total_duration: 1000,
      load_duration: 0,
      prompt_eval_count: texts.reduce((sum, text) => sum + estimateTokens(text), 0),
    },
  };
}

export function answerOllamaLegacyEmbeddings(body: unknown, defaultDimensions: number): JsonReply {
  const parsed = parseEmbeddingRequest(body, 'prompt', defaultDimensions);
  if (!parsed.ok) return { status: 400, body: { error: parsed.message } };
  const [text = ''] = parsed.value.texts;
  return { status: 200, body: { embedding: computeFakeEmbedding(text, parsed.value.dimensions) } };
}

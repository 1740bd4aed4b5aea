import type { FakeLlmRequest, FakeReply } from '@jarvis/testkit';
import { isTurnRequest, type SentMessage, sentMessages } from '@jarvis/testkit';
import type { PlantedFact } from './corpus';

// The soak's language model: the fake LLM answering at once, but with answers shaped like a
// real model's, so the background work the product does after each turn happens as it would:
// - a chat turn gets a short reply of a couple of sentences;
// - a summary request gets a summary: the gist of each user line of the stretch, up to 200
//   words (the memory service asks for at most 250), so summaries keep names and numbers;
// - a fact extraction gets valid JSON: the planted fact for a planted statement, a fact for one
//   filler turn in four (a real extractor finds plenty in chat like LoCoMo's), otherwise
//   {"operations": []}.

// Phrases of the memory service's own prompts.
const SUMMARY_PHRASE = 'Conversation to condense:';
const EXTRACTION_PHRASE = 'long-term memory of a personal assistant';
const FILLER_FACT_EVERY = 4;
const SUMMARY_MAX_WORDS = 200;
const FACT_MAX_CHARS = 200;

type RequestKind = 'turn' | 'summary' | 'extraction' | 'other';

export type SoakModel = {
  answer(request: FakeLlmRequest): FakeReply;
  // The latest chat turn's prompt, as the model got it.
  lastTurnPrompt(): SentMessage[];
  // Estimated tokens of the tool definitions sent with the latest turn (outside the budget).
  lastTurnToolTokens(): number;
  // Milliseconds the fake spent composing the latest turn's answers: the model's own time, taken
  // out of the turn overhead.
  takeTurnModelMs(): number;
  counts: Record<RequestKind, number>;
};

export function createSoakModel(planted: PlantedFact[]): SoakModel {
  const factOf = new Map(planted.map((fact) => [fact.statement, fact.fact]));
  const counts: Record<RequestKind, number> = { turn: 0, summary: 0, extraction: 0, other: 0 };
  let lastPrompt: SentMessage[] = [];
  let lastTools: unknown = [];
  let turnModelMs = 0;

  function answer(request: FakeLlmRequest): FakeReply {
    const started = performance.now();
    const messages = sentMessages(request);
    const system = messages[0]?.content ?? '';
    const user = messages.find((message) => message.role === 'user')?.content ?? '';
    if (isTurnRequest(request)) {
      counts.turn++;
      lastPrompt = messages;
      lastTools = readTools(request.body);
      const reply = { content: replyTo(messages.at(-1)?.content ?? '') };
      turnModelMs += performance.now() - started;
      return reply;
    }
    if (user.includes(SUMMARY_PHRASE)) {
      counts.summary++;
      return { content: summarise(user) };
    }
    if (system.includes(EXTRACTION_PHRASE)) {
      counts.extraction++;
      return { content: JSON.stringify({ operations: extract(user, factOf) }) };
    }
    counts.other++;
    return { content: 'OK.' };
  }

  return {
    answer,
    lastTurnPrompt: () => lastPrompt,
    lastTurnToolTokens: () => Math.ceil(JSON.stringify(lastTools).length / 4),
    takeTurnModelMs() {
      const ms = turnModelMs;
      turnModelMs = 0;
      return ms;
    },
    counts,
  };
}

function readTools(body: unknown): unknown {
  return typeof body === 'object' && body !== null && 'tools' in body ? body.tools : [];
}

function firstWords(text: string, count: number): string {
  const words = text.split(/\s+/).filter(Boolean);
  return words.length <= count ? words.join(' ') : `${words.slice(0, count).join(' ')}…`;
}

function replyTo(userText: string): string {
  return `I see: ${firstWords(userText, 12)} Thanks for telling me. How do you feel about it now, and is there anything you want me to keep in mind?`;
}

// The user lines of the transcript the memory service sent ("[2025-01-01 10:00] user: …").
function summarise(transcript: string): string {
  const stretch = transcript.split(SUMMARY_PHRASE)[1] ?? '';
  const gists: string[] = [];
  let words = 0;
  for (const line of stretch.split('\n')) {
    const said = /^\[[^\]]+\] user: (.*)$/.exec(line)?.[1];
    if (!said) continue;
    const gist = firstWords(said, 14);
    words += gist.split(' ').length;
    if (words > SUMMARY_MAX_WORDS) break;
    gists.push(gist);
  }
  return `In this part of the conversation the user talked about: ${gists.join('; ')}`;
}

// The turn as describeTurn shows it: "The turn:\nUser: …\nAssistant: …".
function extract(prompt: string, factOf: Map<string, string>): Record<string, unknown>[] {
  const said = /^User: (.*)$/m.exec(prompt)?.[1] ?? '';
  const planted = factOf.get(said);
  if (planted) return [{ op: 'add', content: planted, category: 'fact', importance: 6 }];
  if (hash(said) % FILLER_FACT_EVERY !== 0) return [];
  const sentence = (said.split(/(?<=[.!?])\s/)[0] ?? said).slice(0, FACT_MAX_CHARS);
  return [{ op: 'add', content: `The user said: ${sentence}`, category: 'fact', importance: 4 }];
}

function hash(text: string): number {
  let value = 5381;
  for (let index = 0; index < text.length; index++) {
    value = (value * 33 + text.charCodeAt(index)) >>> 0;
  }
  return value;
}

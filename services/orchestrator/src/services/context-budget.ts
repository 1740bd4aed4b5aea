import { randomUUID } from 'node:crypto';
import {
  type MemoryRecallResponse,
  RECALL_PROFILE_LIMIT,
  RECALL_RELEVANT_LIMIT,
  RECALL_SUMMARY_LIMIT,
  type RoutedModel,
  type TokenizerFamily,
} from '@jarvis/contracts';
import { loadTokenCounter, type TokenCounter } from '@jarvis/tokens';
import type { AgentTool } from '../tools/agent-tool';
import { buildPrompt } from './build-prompt';

// What a chat API adds around each message (role and separators): OpenAI counts 3 tokens a
// message and 3 more that prime the reply; Anthropic's and Ollama's formats are alike.
const MESSAGE_FRAMING_TOKENS = 3;
// The smallest budget memory.recall takes.
const MIN_TOKEN_BUDGET = 200;

// What a turn's context is sized for: the model expected to answer and what of its window is
// left for memory to fill.
export type ContextBudget = {
  // provider/model and its window; undefined when model-gateway could not say.
  model: string | undefined;
  contextWindow: number | undefined;
  tokenizer: TokenizerFamily;
  counter: TokenCounter;
  // What recall may fill: profile, relevant items, summaries, recent messages.
  tokenBudget: number;
  // The prompt's fixed part (see countFixedPart) and the tool definitions, outside the budget.
  systemTokens: number;
  toolTokens: number;
};

export type BudgetDeps = {
  tools: AgentTool[];
  // CONTEXT_TOKEN_BUDGET: the most recall may fill, whatever the window.
  contextTokenBudget: number;
  historyLimit: number;
  loop: { maxOutputTokens: number };
};

// The window less what else it must hold (the answer, the tools, the prompt's fixed part), and
// never more than the configured budget. A window too small even for the smallest context still
// gets it: the gateway then refuses the call as too long, which tells the user why.
export function computeTokenBudget(parts: {
  contextTokenBudget: number;
  contextWindow: number | undefined;
  maxOutputTokens: number;
  toolTokens: number;
  systemTokens: number;
}): number {
  if (parts.contextWindow === undefined) return parts.contextTokenBudget;
  const room = parts.contextWindow - parts.maxOutputTokens - parts.toolTokens - parts.systemTokens;
  return Math.max(MIN_TOKEN_BUDGET, Math.min(parts.contextTokenBudget, room));
}

// `model`: the one expected to answer (chat-route.ts), if model-gateway said.
export async function planContextBudget(
  deps: BudgetDeps,
  model: RoutedModel | undefined,
  now: Date,
  timeZone: string,
): Promise<ContextBudget> {
  const tokenizer = model?.tokenizer ?? 'estimate';
  const counter = await loadTokenCounter(tokenizer);
  const toolTokens = countToolTokens(counter, tokenizer, deps.tools);
  const systemTokens = countFixedPart(counter, deps.historyLimit, now, timeZone);
  return {
    model: model && `${model.provider}/${model.model}`,
    contextWindow: model?.contextWindow,
    tokenizer,
    counter,
    tokenBudget: computeTokenBudget({
      contextTokenBudget: deps.contextTokenBudget,
      contextWindow: model?.contextWindow,
      maxOutputTokens: deps.loop.maxOutputTokens,
      toolTokens,
      systemTokens,
    }),
    systemTokens,
    toolTokens,
  };
}

// The tool definitions' tokens, counted again only when a list's contents or the tokenizer
// change (each list is refreshed in place from tools.list): every turn would otherwise serialise
// and count some 1,500 tokens of JSON schemas that are almost always the same. One entry per
// list, so the turns' and the mission tasks' lists do not evict each other.
const countedTools = new WeakMap<
  AgentTool[],
  { tokenizer: TokenizerFamily; definitions: AgentTool['definition'][]; tokens: number }
>();

function countToolTokens(
  counter: TokenCounter,
  tokenizer: TokenizerFamily,
  tools: AgentTool[],
): number {
  const definitions = tools.map((tool) => tool.definition);
  const known = countedTools.get(tools);
  if (
    known?.tokenizer === tokenizer &&
    known.definitions.length === definitions.length &&
    known.definitions.every((definition, index) => definition === definitions[index])
  ) {
    return known.tokens;
  }
  const tokens = counter.count(JSON.stringify(definitions));
  countedTools.set(tools, { tokenizer, definitions, tokens });
  return tokens;
}

// What the run records of its context: the model it was sized for, the budget, and the tokens
// of each part of the prompt, the new message apart from the recent ones.
export function describeContext(
  budget: ContextBudget,
  recall: MemoryRecallResponse,
  userMessageId: string,
): Record<string, unknown> {
  const newest = recall.recent.at(-1);
  const message = newest?.id === userMessageId ? budget.counter.count(newest.content) : 0;
  return {
    model: budget.model ?? null,
    contextWindow: budget.contextWindow ?? null,
    tokenizer: budget.tokenizer,
    tokenBudget: budget.tokenBudget,
    profile: recall.profile.length,
    relevant: recall.relevant.length,
    summaries: recall.summaries.length,
    recent: recall.recent.length,
    tokens: {
      system: budget.systemTokens,
      tools: budget.toolTokens,
      profile: recall.tokens.profile,
      relevant: recall.tokens.relevant,
      summaries: recall.tokens.summaries,
      recent: recall.tokens.recent - message,
      message,
    },
  };
}

// The prompt around what recall fills: persona, date, section headings, and the framing of as
// many items as recall may return (list markers, dates and kinds, message roles). Counted on a
// prompt built with empty items, so it follows whatever buildPrompt writes.
function countFixedPart(
  counter: TokenCounter,
  historyLimit: number,
  now: Date,
  timeZone: string,
): number {
  const at = now.toISOString();
  const id = randomUUID();
  const times = <T>(count: number, item: T): T[] => Array.from({ length: count }, () => item);
  const [system] = buildPrompt(
    {
      profile: times(RECALL_PROFILE_LIMIT, { id, content: '' }),
      relevant: times(RECALL_RELEVANT_LIMIT, {
        kind: 'document' as const,
        id,
        text: '',
        createdAt: at,
      }),
      summaries: times(RECALL_SUMMARY_LIMIT, { id, content: '', fromAt: at, toAt: at }),
      recent: [],
      tokens: { profile: 0, relevant: 0, summaries: 0, recent: 0 },
    },
    now,
    timeZone,
  );
  // The recent messages, the system message and the primed reply.
  return counter.count(system?.content ?? '') + MESSAGE_FRAMING_TOKENS * (historyLimit + 2);
}

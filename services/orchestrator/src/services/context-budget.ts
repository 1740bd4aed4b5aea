import { randomUUID } from 'node:crypto';
import {
  type MemoryRecallResponse,
  RECALL_PROFILE_LIMIT,
  RECALL_RELEVANT_LIMIT,
  RECALL_SUMMARY_LIMIT,
  type RoutedModel,
  type TokenizerFamily,
} from '@jarvis/contracts';
import { estimateTokens, loadTokenCounter, type TokenCounter } from '@jarvis/tokens';
import type { AgentTool } from '../tools/agent-tool';
import { buildPrompt, skillLine } from './build-prompt';

// What a chat API adds around each message (role and separators): OpenAI counts 3 tokens a
// message and 3 more that prime the reply; Anthropic's and Ollama's formats are alike.
const MESSAGE_FRAMING_TOKENS = 3;
// The smallest budget memory.recall takes.
const MIN_TOKEN_BUDGET = 200;
// Shares of the budget each part of the context may take at most, once the standing
// instructions and rules are taken off the top; recent messages get the rest.
const PROFILE_SHARE = 0.1;
const SKILLS_SHARE = 0.05;
const ACTIVE_SHARE = 0.05;
const RELEVANT_SHARE = 0.15;
const SUMMARY_SHARE = 0.25;

// What a turn's context is sized for: the model expected to answer and what of its window is
// left for memory to fill.
export type ContextBudget = {
  // provider/model and its window; undefined when model-gateway could not say.
  model: string | undefined;
  contextWindow: number | undefined;
  tokenizer: TokenizerFamily;
  // What recall may fill: profile, relevant items, summaries, recent messages.
  tokenBudget: number;
  // The prompt's fixed part (see countFixedPart) and the tool definitions, outside the budget.
  systemTokens: number;
  toolTokens: number;
  // Tokens of a text in the tokenizer the budget is in: for what the orchestrator adds itself
  // (the skills index, the current state).
  count(text: string): number;
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
    tokenBudget: computeTokenBudget({
      contextTokenBudget: deps.contextTokenBudget,
      contextWindow: model?.contextWindow,
      maxOutputTokens: deps.loop.maxOutputTokens,
      toolTokens,
      systemTokens,
    }),
    systemTokens,
    toolTokens,
    count: counter.count,
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

// A turn's context as the prompt shows it: what of recall's candidates fits the budget, and the
// tokens of each part (memory counted each candidate once, in the tokens of the model sized for).
export type FittedContext = MemoryRecallResponse & {
  // The lines of the user's current state (active-state.ts) that fit.
  active: { text: string; tokens: number }[];
  tokens: {
    // The standing instructions and rules together.
    instructions: number;
    profile: number;
    skills: number;
    active: number;
    relevant: number;
    summaries: number;
    recent: number;
  };
};

// What the orchestrator adds to recall's parts: the lines of the current state, and how to count
// tokens (the budget's `count`).
type LocalContext = { active: string[]; count(text: string): number };

const NO_LOCAL_CONTEXT: LocalContext = { active: [], count: estimateTokens };

// The one place a turn's context is fitted to its budget. The user's standing instructions and
// rules are taken whole off the top (memory keeps them within INSTRUCTIONS_TOKEN_CAP, so they are
// never cut); then each part within its share of what is left, in memory's order of preference
// (the newest summaries and messages), and recent messages in what remains. The newest message,
// the one to answer, is always kept: a window too small for it is the gateway's to refuse, which
// tells the user why.
export function fitContext(
  recall: MemoryRecallResponse,
  tokenBudget: number,
  local: LocalContext = NO_LOCAL_CONTEXT,
): FittedContext {
  const instructions =
    (recall.instructions?.tokens ?? 0) + recall.rules.reduce((sum, rule) => sum + rule.tokens, 0);
  const left = Math.max(tokenBudget - instructions, 0);
  const profile = fitWithin(recall.profile, left * PROFILE_SHARE);
  const counted = recall.skills.map((skill) => ({
    ...skill,
    tokens: local.count(skillLine(skill)),
  }));
  const skills = fitWithin(counted, left * SKILLS_SHARE);
  const lines = local.active.map((text) => ({ text, tokens: local.count(`- ${text}`) }));
  const active = fitWithin(lines, left * ACTIVE_SHARE);
  const relevant = fitWithin(recall.relevant, left * RELEVANT_SHARE);
  const summaries = fitWithin([...recall.summaries].reverse(), left * SUMMARY_SHARE);
  const used = profile.tokens + skills.tokens + active.tokens + relevant.tokens + summaries.tokens;
  const recent = fitWithin([...recall.recent].reverse(), Math.max(left - used, 0), 1);
  return {
    instructions: recall.instructions,
    rules: recall.rules,
    profile: profile.items,
    skills: skills.items.map(({ name, description }) => ({ name, description })),
    active: active.items,
    relevant: relevant.items,
    summaries: summaries.items.reverse(),
    recent: recent.items.reverse(),
    tokens: {
      instructions,
      profile: profile.tokens,
      skills: skills.tokens,
      active: active.tokens,
      relevant: relevant.tokens,
      summaries: summaries.tokens,
      recent: recent.tokens,
    },
  };
}

// The longest prefix of items that fits, and its tokens; at least `minimum` items.
function fitWithin<T extends { tokens: number }>(
  items: T[],
  budget: number,
  minimum = 0,
): { items: T[]; tokens: number } {
  const kept: T[] = [];
  let used = 0;
  for (const item of items) {
    if (used + item.tokens > budget && kept.length >= minimum) break;
    kept.push(item);
    used += item.tokens;
  }
  return { items: kept, tokens: used };
}

// What the run records of its context: the model it was sized for, the budget, and the tokens of
// each part of the prompt, the new message apart from the recent ones.
export function describeContext(
  budget: ContextBudget,
  context: FittedContext,
  userMessageId: string,
): Record<string, unknown> {
  const newest = context.recent.at(-1);
  const message = newest?.id === userMessageId ? newest.tokens : 0;
  return {
    model: budget.model ?? null,
    contextWindow: budget.contextWindow ?? null,
    tokenizer: budget.tokenizer,
    tokenBudget: budget.tokenBudget,
    rules: context.rules.length,
    profile: context.profile.length,
    skills: context.skills.length,
    active: context.active.length,
    relevant: context.relevant.length,
    summaries: context.summaries.length,
    recent: context.recent.length,
    tokens: {
      system: budget.systemTokens,
      tools: budget.toolTokens,
      instructions: context.tokens.instructions,
      profile: context.tokens.profile,
      skills: context.tokens.skills,
      active: context.tokens.active,
      relevant: context.tokens.relevant,
      summaries: context.tokens.summaries,
      recent: context.tokens.recent - message,
      message,
    },
  };
}

// The prompt around what recall fills: persona, date, section headings, and the framing of as
// many items as recall may return (list markers, dates and kinds, message roles). Counted on a
// prompt built with empty items, so it follows whatever buildPrompt writes. The skills index and
// the current state count their lines whole, so one empty line of each stands for its heading.
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
      instructions: null,
      rules: [{ content: '' }],
      profile: times(RECALL_PROFILE_LIMIT, { id, content: '' }),
      skills: [{ name: '', description: '' }],
      active: [{ text: '' }],
      relevant: times(RECALL_RELEVANT_LIMIT, {
        kind: 'document' as const,
        id,
        text: '',
        createdAt: at,
      }),
      summaries: times(RECALL_SUMMARY_LIMIT, { id, content: '', fromAt: at, toAt: at }),
      recent: [],
    },
    now,
    timeZone,
  );
  // The recent messages, the system message and the primed reply.
  return counter.count(system?.content ?? '') + MESSAGE_FRAMING_TOKENS * (historyLimit + 2);
}

import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import type { MemoryRecallResponse } from '@jarvis/contracts';
import { uniqueNamespace } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryTools } from '../tools/memory-tools';
import {
  type BudgetDeps,
  computeTokenBudget,
  describeContext,
  fitContext,
  planContextBudget,
} from './context-budget';

const NOW = new Date('2025-06-01T12:00:00.000Z');

// The orchestrator's memory tools, as every turn offers them.
function deps(
  bus: Bus,
  contextTokenBudget = 8_000,
  tools = createMemoryTools(bus, new Set()),
): BudgetDeps {
  return {
    tools,
    contextTokenBudget,
    historyLimit: 50,
    loop: { maxOutputTokens: 4_096 },
  };
}

describe('computeTokenBudget', () => {
  const parts = {
    contextTokenBudget: 8_000,
    maxOutputTokens: 4_096,
    toolTokens: 1_100,
    systemTokens: 500,
  };

  it('is the configured budget when the window has room for it', () => {
    expect(computeTokenBudget({ ...parts, contextWindow: 200_000 })).toBe(8_000);
  });

  it("is what the window leaves after the answer, the tools and the prompt's fixed part", () => {
    expect(computeTokenBudget({ ...parts, contextWindow: 8_192 })).toBe(
      8_192 - 4_096 - 1_100 - 500,
    );
  });

  it('is the configured budget when no model is known', () => {
    expect(computeTokenBudget({ ...parts, contextWindow: undefined })).toBe(8_000);
  });

  it('never goes below what recall takes, and leaves refusing the call to the gateway', () => {
    expect(computeTokenBudget({ ...parts, contextWindow: 4_096 })).toBe(200);
  });
});

describe('planContextBudget', () => {
  let bus: Bus;
  const GPT_41_MINI = {
    provider: 'openai',
    model: 'gpt-4.1-mini',
    contextWindow: 1_047_576,
    tokenizer: 'o200k_base' as const,
  };
  const CLAUDE = {
    provider: 'anthropic',
    model: 'claude-sonnet-4-5',
    contextWindow: 200_000,
    tokenizer: 'claude' as const,
  };

  beforeAll(async () => {
    bus = await connectTestBus(uniqueNamespace('context-budget'));
  });

  afterAll(async () => {
    await bus?.close();
  });

  it("sizes the context for the model's window and tokenizer", async () => {
    const llama = {
      provider: 'ollama',
      model: 'llama3.2:3b',
      contextWindow: 16_384,
      tokenizer: 'llama3' as const,
    };

    const budget = await planContextBudget(deps(bus, 50_000), llama, NOW, 'UTC');

    expect(budget).toMatchObject({
      model: 'ollama/llama3.2:3b',
      contextWindow: 16_384,
      tokenizer: 'llama3',
    });
    expect(budget.toolTokens).toBeGreaterThan(500);
    expect(budget.systemTokens).toBeGreaterThan(150);
    expect(budget.tokenBudget).toBe(16_384 - 4_096 - budget.toolTokens - budget.systemTokens);
  });

  it('counts the same prompt larger for Claude than for OpenAI', async () => {
    const openai = await planContextBudget(deps(bus), GPT_41_MINI, NOW, 'UTC');
    const claude = await planContextBudget(deps(bus), CLAUDE, NOW, 'UTC');

    expect(openai.tokenBudget).toBe(8_000);
    expect(claude.tokenBudget).toBe(8_000);
    expect(claude.toolTokens).toBe(Math.ceil(openai.toolTokens * 1.3));
  });

  it('counts the tools again when their list changes in place', async () => {
    const tools = createMemoryTools(bus, new Set());
    const plan = () => planContextBudget(deps(bus, 8_000, tools), GPT_41_MINI, NOW, 'UTC');
    const [first, ...others] = tools;
    if (!first) throw new Error('no memory tools');
    const all = await plan();
    expect((await plan()).toolTokens).toBe(all.toolTokens);
    // As a refresh from tools.list does: the same array, other contents.
    tools.splice(0, tools.length, ...others);
    const fewer = await plan();
    expect(fewer.toolTokens).toBeLessThan(all.toolTokens);
    tools.push(first);
    expect((await plan()).toolTokens).toBeGreaterThan(fewer.toolTokens);
  });

  it('falls back to the configured budget and the estimate when no model is known', async () => {
    const budget = await planContextBudget(deps(bus), undefined, NOW, 'UTC');

    expect(budget).toMatchObject({
      model: undefined,
      contextWindow: undefined,
      tokenizer: 'estimate',
      tokenBudget: 8_000,
    });
  });
});

const stored = (id: string, content: string, tokens: number) => ({
  id,
  conversationId: randomUUID(),
  role: 'user' as const,
  content,
  createdAt: NOW.toISOString(),
  tokens,
});

// A recall with no instructions, rules or skills.
const NOTHING_STANDING = { instructions: null, rules: [], skills: [] };

describe('fitContext', () => {
  const fact = (tokens: number) => ({ id: randomUUID(), content: `fact of ${tokens}`, tokens });
  const item = (tokens: number) => ({
    kind: 'message' as const,
    id: randomUUID(),
    text: `item of ${tokens}`,
    createdAt: NOW.toISOString(),
    tokens,
  });
  const summary = (tokens: number) => ({
    id: randomUUID(),
    content: `summary of ${tokens}`,
    fromAt: NOW.toISOString(),
    toAt: NOW.toISOString(),
    tokens,
  });

  it('keeps each part within its share, the newest summaries, and the newest messages in what is left', () => {
    const summaries = [summary(150), summary(120), summary(100)];
    const recent = [
      stored(randomUUID(), 'oldest', 300),
      ...[1, 2, 3].map((n) => stored(randomUUID(), `m${n}`, 100)),
    ];
    const recall: MemoryRecallResponse = {
      ...NOTHING_STANDING,
      // 10 % of 1,000: the first two facts.
      profile: [fact(40), fact(50), fact(30)],
      // 15 %: the best two items, not a lower-ranked one that would fit after.
      relevant: [item(70), item(60), item(100), item(10)],
      // 25 %: the newest two, in their order.
      summaries,
      recent,
    };

    const fitted = fitContext(recall, 1_000);

    expect(fitted.profile).toEqual(recall.profile.slice(0, 2));
    expect(fitted.relevant).toEqual(recall.relevant.slice(0, 2));
    expect(fitted.summaries).toEqual(summaries.slice(1));
    // 1,000 - 90 - 130 - 220 = 560 for messages: the three newest.
    expect(fitted.recent).toEqual(recent.slice(1));
    expect(fitted.tokens).toEqual({
      instructions: 0,
      profile: 90,
      skills: 0,
      active: 0,
      relevant: 130,
      summaries: 220,
      recent: 300,
    });
  });

  it('takes the standing instructions and rules whole off the top, and shares out what is left', () => {
    const rules = [
      { id: randomUUID(), content: 'Always use metric.', tokens: 100 },
      { id: randomUUID(), content: 'Answer in Norwegian.', tokens: 100 },
    ];
    const recall: MemoryRecallResponse = {
      instructions: { text: 'Keep it short.', tokens: 300 },
      rules,
      skills: [],
      // 10 % of the 500 left: 50.
      profile: [fact(40), fact(20)],
      relevant: [],
      summaries: [],
      recent: [stored(randomUUID(), 'm1', 300), stored(randomUUID(), 'm2', 300)],
    };

    const fitted = fitContext(recall, 1_000);

    expect(fitted.instructions).toEqual(recall.instructions);
    expect(fitted.rules).toEqual(rules);
    expect(fitted.profile).toEqual(recall.profile.slice(0, 1));
    // 500 - 40 = 460 for messages: only the newest.
    expect(fitted.recent).toEqual(recall.recent.slice(1));
    expect(fitted.tokens).toMatchObject({ instructions: 500, profile: 40, recent: 300 });
  });

  it('never cuts the standing instructions, even past the whole budget', () => {
    const recall: MemoryRecallResponse = {
      instructions: { text: 'A long text.', tokens: 900 },
      rules: [{ id: randomUUID(), content: 'A rule.', tokens: 300 }],
      skills: [],
      profile: [fact(10)],
      relevant: [item(10)],
      summaries: [],
      recent: [stored(randomUUID(), 'hi', 5)],
    };

    const fitted = fitContext(recall, 1_000);

    expect(fitted.instructions?.text).toBe('A long text.');
    expect(fitted.rules).toHaveLength(1);
    expect(fitted.profile).toEqual([]);
    expect(fitted.tokens).toMatchObject({ instructions: 1_200, recent: 5 });
  });

  it('fits the skills index and the current state each within its share, counted as shown', () => {
    const skill = (name: string) => ({ name, description: 'x'.repeat(36) });
    const recall: MemoryRecallResponse = {
      ...NOTHING_STANDING,
      // Each line "- sN: " + 36 characters is 11 estimated tokens; 5 % of 1,000 is 50: four.
      skills: [1, 2, 3, 4, 5, 6].map((n) => skill(`s${n}`)),
      profile: [],
      relevant: [],
      summaries: [],
      recent: [stored(randomUUID(), 'hi', 5)],
    };
    // "- " and 38 characters: 10 tokens each; five fit in 50.
    const active = Array.from({ length: 7 }, (_, n) => `Waiting for the user's approval ${n}.....`);

    const fitted = fitContext(recall, 1_000, {
      active,
      count: (text) => Math.ceil(text.length / 4),
    });

    expect(fitted.skills.map((found) => found.name)).toEqual(['s1', 's2', 's3', 's4']);
    expect(fitted.active.map((line) => line.text)).toEqual(active.slice(0, 5));
    expect(fitted.tokens).toMatchObject({ skills: 44, active: 50, recent: 5 });
  });

  it('keeps the newest message, the one to answer, even when it alone passes the budget', () => {
    const own = stored(randomUUID(), 'a very long question', 900);
    const recall: MemoryRecallResponse = {
      ...NOTHING_STANDING,
      profile: [],
      relevant: [],
      summaries: [],
      recent: [stored(randomUUID(), 'before', 10), own],
    };

    expect(fitContext(recall, 500)).toMatchObject({ recent: [own], tokens: { recent: 900 } });
  });
});

describe('describeContext', () => {
  it("records the budget and each part's tokens, the new message apart", async () => {
    const userMessageId = randomUUID();
    const recall: MemoryRecallResponse = {
      instructions: { text: 'Be brief.', tokens: 3 },
      rules: [{ id: randomUUID(), content: 'Always use metric units.', tokens: 8 }],
      // "- trips: Plan a trip." counted as the budget counts it: 21 characters, 6 tokens.
      skills: [{ name: 'trips', description: 'Plan a trip.' }],
      profile: [{ id: randomUUID(), content: 'Lives in Oslo.', tokens: 4 }],
      relevant: [],
      summaries: [],
      recent: [
        stored(randomUUID(), 'Hello there.', 3),
        stored(userMessageId, 'My favourite colour is purple.', 8),
      ],
    };
    const bus = await connectTestBus(uniqueNamespace('context-budget-record'));
    try {
      const budget = await planContextBudget(deps(bus, 8_000, []), undefined, NOW, 'UTC');

      const active = ['Mission running: "Trip" (0 of 2)'];
      const fitted = fitContext(recall, budget.tokenBudget, { active, count: budget.count });

      expect(describeContext(budget, fitted, userMessageId)).toEqual({
        model: null,
        contextWindow: null,
        tokenizer: 'estimate',
        tokenBudget: 8_000,
        rules: 1,
        profile: 1,
        skills: 1,
        active: 1,
        relevant: 0,
        summaries: 0,
        recent: 2,
        tokens: {
          system: budget.systemTokens,
          tools: 1,
          instructions: 11,
          profile: 4,
          skills: 6,
          active: 9,
          relevant: 0,
          summaries: 0,
          recent: 3,
          // As memory counted it: not counted again.
          message: 8,
        },
      });
    } finally {
      await bus.close();
    }
  });
});

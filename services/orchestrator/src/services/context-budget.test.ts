import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { type MemoryRecallResponse, type ModelRouteResponse, modelRoute } from '@jarvis/contracts';
import { createLogger } from '@jarvis/telemetry';
import { uniqueNamespace } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryTools } from '../tools/memory-tools';
import {
  type BudgetDeps,
  computeTokenBudget,
  describeContext,
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
    bus,
    logger: createLogger('context-budget-test', 'silent'),
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
  let server: Bus;
  let client: Bus;
  let route: ModelRouteResponse['models'] = [];
  const GPT_41_MINI = {
    provider: 'openai',
    model: 'gpt-4.1-mini',
    contextWindow: 1_047_576,
    tokenizer: 'o200k_base' as const,
  };

  beforeAll(async () => {
    const namespace = uniqueNamespace('context-budget');
    server = await connectTestBus(namespace);
    client = await connectTestBus(namespace);
    server.serve(modelRoute, async ({ purpose }) => ({ purpose, models: route }));
    await server.nc.flush();
  });

  afterAll(async () => {
    await client?.close();
    await server?.close();
  });

  it('sizes the context for the first chat model that is not cooling down', async () => {
    route = [
      {
        provider: 'anthropic',
        model: 'claude-sonnet-4-5',
        contextWindow: 200_000,
        tokenizer: 'claude',
        coolingDownUntil: new Date(Date.now() + 30_000).toISOString(),
      },
      { provider: 'ollama', model: 'llama3.2:3b', contextWindow: 16_384, tokenizer: 'llama3' },
    ];

    const budget = await planContextBudget(deps(client, 50_000), NOW, 'UTC');

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
    route = [GPT_41_MINI];
    const openai = await planContextBudget(deps(client), NOW, 'UTC');
    route = [
      {
        provider: 'anthropic',
        model: 'claude-sonnet-4-5',
        contextWindow: 200_000,
        tokenizer: 'claude',
      },
    ];
    const claude = await planContextBudget(deps(client), NOW, 'UTC');

    expect(openai.tokenBudget).toBe(8_000);
    expect(claude.tokenBudget).toBe(8_000);
    expect(claude.toolTokens).toBe(Math.ceil(openai.toolTokens * 1.3));
  });

  it('counts the tools again when their list changes in place', async () => {
    route = [GPT_41_MINI];
    const tools = createMemoryTools(client, new Set());
    const [first, ...others] = tools;
    if (!first) throw new Error('no memory tools');
    const all = await planContextBudget(deps(client, 8_000, tools), NOW, 'UTC');
    expect((await planContextBudget(deps(client, 8_000, tools), NOW, 'UTC')).toolTokens).toBe(
      all.toolTokens,
    );
    // As a refresh from tools.list does: the same array, other contents.
    tools.splice(0, tools.length, ...others);
    const fewer = await planContextBudget(deps(client, 8_000, tools), NOW, 'UTC');
    expect(fewer.toolTokens).toBeLessThan(all.toolTokens);
    tools.push(first);
    expect(
      (await planContextBudget(deps(client, 8_000, tools), NOW, 'UTC')).toolTokens,
    ).toBeGreaterThan(fewer.toolTokens);
  });

  it('falls back to the configured budget and the estimate when the gateway does not answer', async () => {
    const silent = await connectTestBus(uniqueNamespace('context-budget-silent'));
    try {
      const budget = await planContextBudget(deps(silent), NOW, 'UTC');

      expect(budget).toMatchObject({
        model: undefined,
        contextWindow: undefined,
        tokenizer: 'estimate',
        tokenBudget: 8_000,
      });
    } finally {
      await silent.close();
    }
  });
});

describe('describeContext', () => {
  it("records the budget and each part's tokens, the new message apart", async () => {
    const userMessageId = randomUUID();
    const stored = (id: string, content: string) => ({
      id,
      conversationId: randomUUID(),
      role: 'user' as const,
      content,
      createdAt: NOW.toISOString(),
    });
    const recall: MemoryRecallResponse = {
      profile: [{ id: randomUUID(), content: 'Lives in Oslo.' }],
      relevant: [],
      summaries: [],
      recent: [
        stored(randomUUID(), 'Hello there.'),
        stored(userMessageId, 'My favourite colour is purple.'),
      ],
      tokens: { profile: 4, relevant: 0, summaries: 0, recent: 9 },
    };
    const silent = await connectTestBus(uniqueNamespace('context-budget-record'));
    try {
      const budget = await planContextBudget(deps(silent, 8_000, []), NOW, 'UTC');

      expect(describeContext(budget, recall, userMessageId)).toEqual({
        model: null,
        contextWindow: null,
        tokenizer: 'estimate',
        tokenBudget: 8_000,
        profile: 1,
        relevant: 0,
        summaries: 0,
        recent: 2,
        tokens: {
          system: budget.systemTokens,
          tools: 1,
          profile: 4,
          relevant: 0,
          summaries: 0,
          // 'My favourite colour is purple.': 30 characters, 8 estimated tokens.
          recent: 1,
          message: 8,
        },
      });
    } finally {
      await silent.close();
    }
  });
});

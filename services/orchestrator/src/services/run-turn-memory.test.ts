import { randomUUID } from 'node:crypto';
import { type Bus, BusError, ensureUserEventStream } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import {
  type ChatMessage,
  type Fact,
  INSTRUCTIONS_TOKEN_CAP,
  type MemoryRecallResponse,
  memoryAppend,
  memoryFactsRemember,
  memoryMessagesGet,
  memoryRecall,
  memorySkillsLoad,
  modelChat,
  type StoredMessage,
  type ToolCall,
} from '@jarvis/contracts';
import { createLogger } from '@jarvis/telemetry';
import { connectTestRedis, type TestDatabase, uniqueNamespace } from '@jarvis/testkit';
import { estimateTokens } from '@jarvis/tokens';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startDatabaseFixture } from '../database-fixture';
import { decideApproval, findLatestApproval } from '../repositories/approvals-repository';
import { findRunByTurn, insertRun } from '../repositories/runs-repository';
import { createMemoryTools } from '../tools/memory-tools';
import { watchTurnCancellations } from './cancel-turn';
import { watchChatRoute } from './chat-route';
import { runTurn, type TurnDeps } from './run-turn';

// Real turns (the run, its approvals and steps in Postgres, the conversation lock in Redis) with
// stand-ins on the bus for memory and the model gateway: memory answers recall with what a test
// sets (a conversation of any length), keeps the rules remembered through it, and loads skills;
// the model answers as a test scripts it, and every prompt it was sent is kept.

let db: TestDatabase;
let bus: Bus;
let standIns: Bus;
let redis: Redis;
let deps: TurnDeps;

const SKILL = {
  name: 'trip-planning',
  description: 'How the user likes trips planned.',
  body: 'Check trains before flights. Book seats at the window.',
};
const BUDGET = 8_000;

type Memory = {
  recall: Omit<MemoryRecallResponse, 'rules' | 'skills' | 'instructions'>;
  instructions: MemoryRecallResponse['instructions'];
  rules: Fact[];
  replies: Map<string, StoredMessage>;
  // What skill_load asked memory for.
  loaded: string[];
};
let memory: Memory;
let model: (messages: ChatMessage[]) => { content: string; toolCalls?: ToolCall[] };
const prompts: ChatMessage[][] = [];

function ruleTokens(): number {
  return memory.rules.reduce((sum, rule) => sum + estimateTokens(rule.content), 0);
}

function serveMemory(standIn: Bus): void {
  standIn.serve(memoryRecall, async (request) => ({
    ...memory.recall,
    instructions: memory.instructions,
    rules: memory.rules.map((rule) => ({
      id: rule.id,
      content: rule.content,
      tokens: estimateTokens(rule.content),
    })),
    skills: [{ name: SKILL.name, description: SKILL.description }],
    // As memory ends the context at the turn's message.
    recent: memory.recall.recent.map((message, index, all) =>
      index === all.length - 1 ? { ...message, id: request.messageId ?? message.id } : message,
    ),
  }));
  standIn.serve(memoryAppend, async (request) => {
    const message: StoredMessage = {
      id: randomUUID(),
      conversationId: request.conversationId ?? randomUUID(),
      role: request.role,
      content: request.content,
      createdAt: new Date().toISOString(),
    };
    memory.replies.set(message.id, message);
    return { message, seq: memory.replies.size, isDuplicate: false };
  });
  standIn.serve(memoryMessagesGet, async ({ id }) => {
    const message = memory.replies.get(id);
    if (!message) throw new BusError('not_found', 'message not found');
    return { message };
  });
  // As memory does: a rule past the cap of instructions and rules together is refused.
  standIn.serve(memoryFactsRemember, async (request) => {
    const used = estimateTokens(memory.instructions?.text ?? '') + ruleTokens();
    const adding = estimateTokens(request.content);
    if (request.category === 'rule' && used + adding > INSTRUCTIONS_TOKEN_CAP) {
      throw new BusError(
        'bad_request',
        `standing instructions and rules may take ${INSTRUCTIONS_TOKEN_CAP} tokens; ${used} are in use and this rule needs ${adding}`,
      );
    }
    const at = new Date().toISOString();
    const fact: Fact = {
      id: randomUUID(),
      category: request.category ?? 'fact',
      content: request.content,
      tags: [],
      importance: 5,
      sourceMessageIds: request.sourceMessageIds ?? [],
      validFrom: at,
      validTo: null,
      supersededBy: null,
      createdAt: at,
      updatedAt: at,
    };
    if (fact.category === 'rule') memory.rules.push(fact);
    return { fact, isDuplicate: false };
  });
  standIn.serve(memorySkillsLoad, async ({ name }) => {
    memory.loaded.push(name);
    if (name !== SKILL.name) throw new BusError('not_found', `no skill named ${name}`);
    return SKILL;
  });
}

function serveModel(standIn: Bus): void {
  standIn.serve(modelChat, async (request) => {
    prompts.push(request.messages);
    const answer = model(request.messages);
    const toolCalls = answer.toolCalls ?? [];
    return {
      requestId: request.requestId ?? randomUUID(),
      content: answer.content,
      toolCalls,
      provider: 'openai',
      model: 'fake-gpt',
      finishReason: toolCalls.length > 0 ? ('tool_calls' as const) : ('stop' as const),
      usage: { inputTokens: 20, outputTokens: 5 },
      costUsd: 0,
      attempts: [],
    };
  });
}

beforeAll(async () => {
  db = await startDatabaseFixture();
  const namespace = uniqueNamespace('orchestrator-memory');
  bus = await connectTestBus(namespace);
  standIns = await connectTestBus(namespace);
  serveMemory(standIns);
  serveModel(standIns);
  await standIns.nc.flush();
  await ensureUserEventStream(bus);
  redis = connectTestRedis();
  const logger = createLogger('orchestrator-test', 'silent');
  deps = {
    bus,
    pool: db.pool,
    redis,
    logger,
    contextTokenBudget: BUDGET,
    historyLimit: 50,
    tools: createMemoryTools(bus, new Set()),
    approvalTtlMs: 60_000,
    loop: {
      maxSteps: 4,
      toolTimeoutMs: 2_000,
      turnDeadlineMs: 10_000,
      toolResultMaxChars: 2_000,
      maxOutputTokens: 256,
      turnOutputTokenCap: 1_000,
      modelCallTimeoutMs: 5_000,
    },
    lockLeaseMs: 5_000,
    maxAttempts: 3,
    cancellations: watchTurnCancellations(bus, redis),
    chatRoute: watchChatRoute({ bus, logger }),
  };
});

afterAll(async () => {
  await standIns?.close();
  await bus?.close();
  await redis?.quit();
  await db?.stop();
});

beforeEach(() => {
  memory = {
    recall: { profile: [], relevant: [], summaries: [], recent: [] },
    instructions: null,
    rules: [],
    replies: new Map(),
    loaded: [],
  };
  prompts.length = 0;
  model = () => ({ content: 'Done.' });
});

function message(conversationId: string, role: 'user' | 'assistant', content: string) {
  return {
    id: randomUUID(),
    conversationId,
    role,
    content,
    createdAt: new Date().toISOString(),
    tokens: estimateTokens(content),
  };
}

// Runs one turn of the user's message to its end (or its pause) and answers its run.
async function turn(userId: string, conversationId: string, text: string, turnDeps = deps) {
  memory.recall.recent = [...memory.recall.recent, message(conversationId, 'user', text)];
  const run = await insertRun(db.pool, {
    id: randomUUID(),
    turnId: randomUUID(),
    userId,
    conversationId,
    userMessageId: randomUUID(),
    userMessageAt: new Date().toISOString(),
    userMessageSeq: 1,
    traceId: undefined,
    timeZone: undefined,
  });
  const requested = {
    turnId: run.turnId,
    runId: run.id,
    userId,
    conversationId,
    userMessageId: run.userMessageId,
    message: text,
  };
  expect(await runTurn(turnDeps, requested, 1)).toEqual({ type: 'ack' });
  return { requested, run: await findRunByTurn(db.pool, userId, run.turnId) };
}

const system = (prompt: ChatMessage[] | undefined) => prompt?.[0]?.content ?? '';

function rule(content: string): Fact {
  const at = new Date().toISOString();
  return {
    id: randomUUID(),
    category: 'rule',
    content,
    tags: [],
    importance: 5,
    sourceMessageIds: [],
    validFrom: at,
    validTo: null,
    supersededBy: null,
    createdAt: at,
    updatedAt: at,
  };
}

describe('a standing rule', () => {
  it('is in every prompt, whole, up to the 1,000th turn of a long conversation', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    const standing = 'Always give distances in kilometres, never in miles.';
    memory.rules = [rule(standing)];
    memory.instructions = {
      text: 'Answer in English.',
      tokens: estimateTokens('Answer in English.'),
    };
    // 999 turns before, as memory would hand them over at their longest: far more messages,
    // summaries, profile facts and relevant items than the budget holds.
    const filler = (n: number) =>
      `Turn ${n}: ${'we talked about the garden and the trip '.repeat(8)}`;
    memory.recall = {
      profile: Array.from({ length: 20 }, (_, n) => ({
        id: randomUUID(),
        content: `Profile fact ${n} ${'x'.repeat(200)}`,
        tokens: 55,
      })),
      relevant: Array.from({ length: 8 }, (_, n) => ({
        kind: 'message' as const,
        id: randomUUID(),
        text: filler(n),
        createdAt: new Date().toISOString(),
        tokens: 90,
      })),
      summaries: Array.from({ length: 10 }, (_, n) => ({
        id: randomUUID(),
        content: `Summary ${n}: ${'the garden, the trip and the budget. '.repeat(40)}`,
        fromAt: new Date().toISOString(),
        toAt: new Date().toISOString(),
        tokens: 400,
      })),
      recent: Array.from({ length: 999 }, (_, n) => [
        message(conversationId, 'user', filler(n)),
        message(conversationId, 'assistant', `Noted ${n}.`),
      ]).flat(),
    };

    const { run } = await turn(userId, conversationId, 'How far is it from Oslo to Bergen?');

    expect(run?.status).toBe('completed');
    const prompt = prompts.at(-1);
    expect(system(prompt)).toContain(
      `Standing instructions from the user (always follow them):\nAnswer in English.\n- ${standing}`,
    );
    expect(prompt?.at(-1)).toEqual({
      role: 'user',
      content: 'How far is it from Oslo to Bergen?',
    });
    // The history was cut to the budget, the rule was not.
    expect(prompt?.length).toBeLessThan(200);
    const recall = await db.pool.query<{ output: { tokens: Record<string, number> } }>(
      `SELECT output FROM orchestrator.run_steps WHERE run_id = $1 AND kind = 'recall'`,
      [run?.id],
    );
    const tokens = recall.rows[0]?.output.tokens ?? {};
    expect(tokens.instructions).toBe(
      estimateTokens(standing) + estimateTokens('Answer in English.'),
    );
    const fitted = [
      'instructions',
      'profile',
      'skills',
      'active',
      'relevant',
      'summaries',
      'recent',
    ];
    const total =
      fitted.reduce((sum, part) => sum + (tokens[part] ?? 0), 0) + (tokens.message ?? 0);
    expect(total).toBeLessThanOrEqual(BUDGET);
  });

  it('is in the prompt of each turn of a conversation', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    memory.rules = [rule('Never book flights before 9.')];

    for (const text of ['Hello.', 'Book me a flight.', 'And a hotel.']) {
      await turn(userId, conversationId, text);
      memory.recall.recent.push(message(conversationId, 'assistant', 'Done.'));
    }

    expect(prompts).toHaveLength(3);
    for (const prompt of prompts)
      expect(system(prompt)).toContain('- Never book flights before 9.');
  });
});

describe('a skill', () => {
  it('is only named in the prompt, and its procedure arrives when the model loads it', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    model = (messages) => {
      const last = messages.at(-1);
      if (last?.role === 'tool') return { content: `Following it: ${last.content}` };
      const asked = last?.content.includes('trip');
      return asked
        ? {
            content: '',
            toolCalls: [{ id: randomUUID(), name: 'skill_load', arguments: { name: SKILL.name } }],
          }
        : { content: 'Hello!' };
    };

    await turn(userId, conversationId, 'Hi there.');

    expect(memory.loaded).toEqual([]);
    expect(system(prompts[0])).toContain(
      `Skills you can load with skill_load (name: description):\n- ${SKILL.name}: ${SKILL.description}`,
    );
    expect(JSON.stringify(prompts[0])).not.toContain(SKILL.body);

    await turn(userId, conversationId, 'Plan my trip to Bergen.');

    expect(memory.loaded).toEqual([SKILL.name]);
    const afterLoad = prompts.at(-1) ?? [];
    expect(system(afterLoad)).not.toContain(SKILL.body);
    expect(afterLoad.at(-1)).toMatchObject({ role: 'tool' });
    expect(afterLoad.at(-1)?.content).toContain(SKILL.body);
  });

  it('that does not exist is refused, and the model is told so', async () => {
    model = (messages) =>
      messages.at(-1)?.role === 'tool'
        ? { content: messages.at(-1)?.content ?? '' }
        : {
            content: '',
            toolCalls: [{ id: randomUUID(), name: 'skill_load', arguments: { name: 'cooking' } }],
          };

    await turn(randomUUID(), randomUUID(), 'How do I cook this?');

    expect(prompts.at(-1)?.at(-1)?.content).toBe(
      JSON.stringify({ error: 'invalid arguments: there is no skill named cooking' }),
    );
  });
});

describe('propose_rule', () => {
  const proposing = (text: string) => (messages: ChatMessage[]) =>
    messages.at(-1)?.role === 'tool'
      ? { content: `Result: ${messages.at(-1)?.content}` }
      : {
          content: 'I will remember that as a rule.',
          toolCalls: [{ id: randomUUID(), name: 'propose_rule', arguments: { text } }],
        };

  it('waits for the user to approve, then stores the rule, which the next prompt shows', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    model = proposing('Always use metric units.');

    const { requested, run } = await turn(userId, conversationId, 'Always use metric, please.');

    expect(run?.status).toBe('waiting_approval');
    expect(memory.rules).toEqual([]);
    const approval = await findLatestApproval(db.pool, run?.id ?? '');
    expect(approval).toMatchObject({ toolName: 'propose_rule', status: 'pending' });
    await decideApproval(db.pool, userId, approval?.id ?? '', 'approved');

    expect(await runTurn(deps, { ...requested, approvalId: approval?.id }, 1)).toEqual({
      type: 'ack',
    });

    expect(memory.rules.map((stored) => [stored.category, stored.content])).toEqual([
      ['rule', 'Always use metric units.'],
    ]);
    expect((await findRunByTurn(db.pool, userId, requested.turnId))?.status).toBe('completed');
    model = () => ({ content: 'Ok.' });
    await turn(userId, conversationId, 'How tall is Galdhøpiggen?');
    expect(system(prompts.at(-1))).toContain('- Always use metric units.');
  });

  it('stores nothing when the user denies it', async () => {
    const userId = randomUUID();
    model = proposing('Always answer in French.');
    const { requested, run } = await turn(userId, randomUUID(), 'Answer in French from now on.');
    const approval = await findLatestApproval(db.pool, run?.id ?? '');
    await decideApproval(db.pool, userId, approval?.id ?? '', 'denied');

    await runTurn(deps, { ...requested, approvalId: approval?.id }, 1);

    expect(memory.rules).toEqual([]);
  });

  it('tells the model why a rule past the cap was not stored', async () => {
    const userId = randomUUID();
    const text = 'Always write in full sentences. '.repeat(40);
    memory.instructions = { text: 'x'.repeat(3_200), tokens: 800 };
    model = proposing(text.trim());
    const { requested, run } = await turn(userId, randomUUID(), 'Remember how I like answers.');
    const approval = await findLatestApproval(db.pool, run?.id ?? '');
    await decideApproval(db.pool, userId, approval?.id ?? '', 'approved');

    await runTurn(deps, { ...requested, approvalId: approval?.id }, 1);

    expect(memory.rules).toEqual([]);
    const told = prompts.at(-1)?.at(-1)?.content ?? '';
    expect(told).toContain('the rule was not stored');
    expect(told).toContain(`may take ${INSTRUCTIONS_TOKEN_CAP} tokens`);
  });
});

describe("a mission's pending question", () => {
  it('takes the message as its answer, and the turn replies with the note, without a model', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    const asked: { conversationId: string; text: string }[] = [];
    const withQuestion: TurnDeps = {
      ...deps,
      answerPendingQuestion: async (run, text) => {
        asked.push({ conversationId: run.conversationId, text });
        return run.conversationId === conversationId
          ? 'I passed your answer on to the mission “Trip”.'
          : undefined;
      },
    };

    const { run } = await turn(userId, conversationId, 'The train.', withQuestion);

    expect(asked).toEqual([{ conversationId, text: 'The train.' }]);
    expect(prompts).toEqual([]);
    expect(run?.status).toBe('completed');
    const reply = memory.replies.get(run?.replyMessageId ?? '');
    expect(reply?.content).toBe('I passed your answer on to the mission “Trip”.');

    await turn(userId, randomUUID(), 'And what is the weather?', withQuestion);

    expect(prompts).toHaveLength(1);
  });
});

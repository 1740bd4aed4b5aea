import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { type MemoryFactsRememberRequest, memoryFactsRemember } from '@jarvis/contracts';
import { uniqueNamespace } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentTool, type ToolContext, ToolInputError } from './agent-tool';
import { createMemoryTools } from './memory-tools';

let bus: Bus;

beforeAll(async () => {
  bus = await connectTestBus(uniqueNamespace('memory-tools'));
});

afterAll(async () => {
  await bus?.close();
});

function riskOf(tools: AgentTool[], name: string, args: Record<string, unknown>) {
  const tool = tools.find((found) => found.definition.name === name);
  if (!tool) throw new Error(`no tool ${name}`);
  return tool.riskOf?.(args) ?? tool.risk;
}

describe('createMemoryTools', () => {
  it('makes a change to a skill wait for approval, and leaves other files alone', () => {
    const tools = createMemoryTools(bus, new Set());

    // Restoring an earlier version of a skill changes it as much as writing it does.
    for (const name of ['memory_write', 'memory_edit', 'memory_delete', 'memory_restore']) {
      expect(riskOf(tools, name, { path: 'skills/trip-planning.md' })).toBe('risky');
      // A leading / names the same file, as memory reads it.
      expect(riskOf(tools, name, { path: '/skills/trip-planning.md' })).toBe('risky');
      expect(riskOf(tools, name, { path: 'notes/skills/trip.md' })).toBe('safe');
      expect(riskOf(tools, name, { path: 'notes/trip.md' })).toBe('safe');
      // Arguments the tool will refuse anyway.
      expect(riskOf(tools, name, { path: 42 })).toBe('safe');
    }
    expect(riskOf(tools, 'memory_read', { path: 'skills/trip-planning.md' })).toBe('safe');
  });

  it('keeps a tool named in APPROVAL_TOOLS risky for every path', () => {
    const tools = createMemoryTools(bus, new Set(['memory_delete']));

    expect(riskOf(tools, 'memory_delete', { path: 'notes/trip.md' })).toBe('risky');
    expect(riskOf(tools, 'memory_write', { path: 'notes/trip.md' })).toBe('safe');
  });

  it('always asks before a rule is stored, and loads skills without asking', () => {
    const tools = createMemoryTools(bus, new Set());

    expect(riskOf(tools, 'propose_rule', { text: 'Always use metric.' })).toBe('risky');
    expect(riskOf(tools, 'skill_load', { name: 'trip-planning' })).toBe('safe');
  });

  it('stores no rule through remember, and tells memory the turn it stored the fact in', async () => {
    const asked: MemoryFactsRememberRequest[] = [];
    const responder = bus.serve(memoryFactsRemember, async (request) => {
      asked.push(request);
      const now = new Date().toISOString();
      return {
        fact: {
          id: randomUUID(),
          category: 'fact' as const,
          content: request.content,
          tags: [],
          importance: 5,
          sourceMessageIds: [],
          validFrom: now,
          validTo: null,
          supersededBy: null,
          createdAt: now,
          updatedAt: now,
        },
        isDuplicate: false,
      };
    });
    const remember = createMemoryTools(bus, new Set()).find(
      (tool) => tool.definition.name === 'remember',
    );
    const context: ToolContext = {
      userId: randomUUID(),
      conversationId: randomUUID(),
      runId: randomUUID(),
      turnId: randomUUID(),
      missionId: undefined,
      userMessageId: randomUUID(),
      timeZone: undefined,
      timeoutMs: 5_000,
    };
    try {
      const parameters = JSON.stringify(remember?.definition.parameters);
      expect(parameters).not.toContain('turnId');
      expect(parameters).not.toContain('"rule"');
      await expect(
        remember?.run({ content: 'Always answer in Norwegian.', category: 'rule' }, context),
      ).rejects.toBeInstanceOf(ToolInputError);

      await remember?.run({ content: 'The user parks on level 3.' }, context);
      expect(asked).toEqual([
        expect.objectContaining({
          userId: context.userId,
          content: 'The user parks on level 3.',
          category: 'fact',
          turnId: context.turnId,
          sourceMessageIds: [context.userMessageId],
        }),
      ]);
    } finally {
      responder.unsubscribe();
    }
  });
});

import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { uniqueNamespace } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentTool } from './agent-tool';
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

    for (const name of ['memory_write', 'memory_edit', 'memory_delete']) {
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
});

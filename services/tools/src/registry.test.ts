import type { ToolRisk } from '@jarvis/contracts';
import { describe, expect, it } from 'vitest';
import { type Tool, ToolRegistry, type ToolRunContext } from './registry';

type EchoArgs = { text: string; times: number };

function echoTool(name: string, risk: ToolRisk = 'safe'): Tool<EchoArgs> {
  return {
    name,
    description: `the ${name} tool`,
    risk,
    inputSchema: {
      type: 'object',
      properties: {
        text: { type: 'string', minLength: 1 },
        times: { type: 'integer', minimum: 1, default: 1 },
      },
      required: ['text'],
      additionalProperties: false,
    },
    run: async ({ text, times }) => text.repeat(times),
  };
}

const context: ToolRunContext = {
  userId: 'user',
  runId: undefined,
  conversationId: undefined,
  signal: new AbortController().signal,
};

describe('ToolRegistry', () => {
  it('starts empty', () => {
    expect(new ToolRegistry().list()).toEqual([]);
  });

  it('lists descriptors sorted by name, whatever the registration order', () => {
    const registry = new ToolRegistry();
    for (const name of ['web_search', 'browser', 'documents', 'notify']) {
      registry.register(echoTool(name));
    }

    expect(registry.list().map((tool) => tool.name)).toEqual([
      'browser',
      'documents',
      'notify',
      'web_search',
    ]);
    expect(registry.list()[0]).toEqual({
      name: 'browser',
      description: 'the browser tool',
      risk: 'safe',
      inputSchema: echoTool('browser').inputSchema,
    });
  });

  it("puts a tool's own time limit in its descriptor, and none when it has none", () => {
    const registry = new ToolRegistry();
    registry.register({ ...echoTool('run_code'), timeoutMs: 75_000 });
    registry.register(echoTool('notify'));

    expect(registry.list().map((tool) => [tool.name, tool.timeoutMs])).toEqual([
      ['notify', undefined],
      ['run_code', 75_000],
    ]);
    expect('timeoutMs' in (registry.get('notify')?.descriptor ?? {})).toBe(false);
  });

  it('refuses a name registered twice and keeps the first', () => {
    const registry = new ToolRegistry();
    registry.register(echoTool('web_search'));

    expect(() => registry.register(echoTool('web_search', 'risky'))).toThrow(
      'tool web_search is registered twice',
    );
    expect(registry.list().map((tool) => tool.risk)).toEqual(['safe']);
  });

  it('refuses a schema with a keyword it does not know, at registration', () => {
    const tool = echoTool('typo');
    const registry = new ToolRegistry();

    expect(() =>
      registry.register({ ...tool, inputSchema: { ...tool.inputSchema, requierd: ['text'] } }),
    ).toThrow(/requierd/);
  });

  it('runs a tool on arguments that match its schema, with its defaults filled in', async () => {
    const registry = new ToolRegistry();
    registry.register(echoTool('echo'));
    const echo = registry.get('echo');

    expect(await echo?.call({ text: 'ab' }, context)).toBe('ab');
    expect(await echo?.call({ text: 'ab', times: 3 }, context)).toBe('ababab');
  });

  it('answers arguments that do not match with the first problem and where it is', async () => {
    const registry = new ToolRegistry();
    registry.register(echoTool('echo'));
    const echo = registry.get('echo');

    await expect(echo?.call({}, context)).rejects.toMatchObject({
      code: 'bad_request',
      message: "(root): must have required property 'text'",
    });
    await expect(echo?.call({ text: 'a', times: '2' }, context)).rejects.toMatchObject({
      code: 'bad_request',
      message: 'times: must be integer',
    });
    await expect(echo?.call({ text: 'a', loud: true }, context)).rejects.toMatchObject({
      code: 'bad_request',
      message: '(root): unknown property loud',
    });
  });

  it('hands out a copy of the list, so callers cannot change what is registered', () => {
    const registry = new ToolRegistry();
    registry.register(echoTool('notify'));

    registry.list().pop();

    expect(registry.list().map((tool) => tool.name)).toEqual(['notify']);
  });
});

import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { catchBusError, connectTestBus, sendRaw } from '@jarvis/bus/testing';
import { type ToolRisk, toolsInvoke, toolsList } from '@jarvis/contracts';
import { createMetrics } from '@jarvis/telemetry';
import { uniqueNamespace } from '@jarvis/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { registerHandlers } from './handlers';
import { type Tool, ToolRegistry } from './registry';
import { createToolsMetrics, type ToolsMetrics } from './tools-metrics';

type Tools = { client: Bus; close(): Promise<void> };

const started: Tools[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((tools) => tools.close()));
});

// One namespace per registry: two registries serving one subject would share its queue group.
async function serveRegistry(registry: ToolRegistry, metrics?: ToolsMetrics): Promise<Tools> {
  const namespace = uniqueNamespace('tools');
  const server = await connectTestBus(namespace);
  const client = await connectTestBus(namespace);
  const subscriptions = registerHandlers(server, registry, metrics);
  await server.nc.flush();
  const tools = {
    client,
    async close() {
      for (const subscription of subscriptions) subscription.unsubscribe();
      await client.close();
      await server.close();
    },
  };
  started.push(tools);
  return tools;
}

type QueryArgs = { query: string };

function queryTool(
  name: string,
  risk: ToolRisk = 'safe',
  run: Tool<QueryArgs>['run'] = async ({ query }) => ({ answer: `${name}: ${query}` }),
): Tool<QueryArgs> {
  return {
    name,
    description: `the ${name} tool`,
    risk,
    inputSchema: {
      type: 'object',
      properties: { query: { type: 'string' } },
      required: ['query'],
      additionalProperties: false,
    },
    run,
  };
}

async function serveTools(...tools: Tool<QueryArgs>[]) {
  const registry = new ToolRegistry();
  for (const tool of tools) registry.register(tool);
  return serveRegistry(registry);
}

const USER_ID = randomUUID();

describe('tools.list', () => {
  it('answers an empty list from an empty registry', async () => {
    const { client } = await serveRegistry(new ToolRegistry());

    expect(await client.request(toolsList, {})).toEqual({ tools: [] });
  });

  it('answers the registered tools sorted by name, without their code', async () => {
    const { client } = await serveTools(
      queryTool('web_search'),
      queryTool('browser', 'risky'),
      queryTool('notify'),
    );

    const { tools } = await client.request(toolsList, {});

    expect(tools.map((tool) => [tool.name, tool.risk])).toEqual([
      ['browser', 'risky'],
      ['notify', 'safe'],
      ['web_search', 'safe'],
    ]);
    expect(tools[0]).toEqual({
      name: 'browser',
      description: 'the browser tool',
      risk: 'risky',
      inputSchema: queryTool('browser').inputSchema,
    });
  });

  it('sees tools registered after the handler started', async () => {
    const registry = new ToolRegistry();
    const { client } = await serveRegistry(registry);
    registry.register(queryTool('sandbox', 'risky'));

    const { tools } = await client.request(toolsList, {});

    expect(tools.map((tool) => tool.name)).toEqual(['sandbox']);
  });
});

describe('tools.invoke', () => {
  const invoke = (client: Bus, name: string, args: Record<string, unknown>, timeoutMs = 2_000) =>
    client.request(toolsInvoke, { userId: USER_ID, name, arguments: args, timeoutMs });

  it('runs the tool and answers its result, with the caller as context', async () => {
    const runId = randomUUID();
    const conversationId = randomUUID();
    const missionId = randomUUID();
    const { client } = await serveTools(
      queryTool('whoami', 'safe', async ({ query }, context) => ({
        query,
        userId: context.userId,
        runId: context.runId,
        conversationId: context.conversationId,
        missionId: context.missionId,
        skipped: undefined,
      })),
    );

    const reply = await client.request(toolsInvoke, {
      userId: USER_ID,
      name: 'whoami',
      arguments: { query: 'me' },
      runId,
      conversationId,
      missionId,
      timeoutMs: 2_000,
    });

    expect(reply).toEqual({
      result: { query: 'me', userId: USER_ID, runId, conversationId, missionId },
    });
  });

  it('answers arguments that break the schema as bad_request, saying what to fix', async () => {
    let runs = 0;
    const { client } = await serveTools(
      queryTool('search', 'safe', async () => {
        runs += 1;
        return null;
      }),
    );

    const missing = await catchBusError(invoke(client, 'search', {}));
    const wrongType = await catchBusError(invoke(client, 'search', { query: 42 }));

    expect(missing.toInfo()).toEqual({
      code: 'bad_request',
      message: "(root): must have required property 'query'",
    });
    expect(wrongType.toInfo()).toEqual({ code: 'bad_request', message: 'query: must be string' });
    expect(runs).toBe(0);
  });

  it('answers a tool it does not have as not_found', async () => {
    const { client } = await serveTools(queryTool('search'));

    const error = await catchBusError(invoke(client, 'launch_rocket', {}));

    expect(error.toInfo()).toEqual({
      code: 'not_found',
      message: 'there is no tool named launch_rocket',
    });
  });

  it('refuses a malformed request at its edge', async () => {
    const { client } = await serveTools(queryTool('search'));

    const reply = await sendRaw(client, toolsInvoke.subject, {
      userId: 'not-a-uuid',
      name: 'search',
      arguments: { query: 'x' },
      timeoutMs: 1_000,
    });

    expect(reply).toMatchObject({ ok: false, error: { code: 'bad_request' } });
  });

  it('stops a tool at its deadline and answers timeout; the tool is told to stop', async () => {
    let abortReason: unknown;
    const { client } = await serveTools(
      queryTool(
        'slow',
        'safe',
        (_args, context) =>
          new Promise((_resolve, reject) => {
            context.signal.addEventListener('abort', () => {
              abortReason = context.signal.reason;
              // Rejects after the reply went out: the service must shrug it off.
              setTimeout(() => reject(new Error('aborted late')), 50);
            });
          }),
      ),
    );

    const startedAt = Date.now();
    const error = await catchBusError(invoke(client, 'slow', { query: 'x' }, 300));

    expect(error.toInfo()).toEqual({
      code: 'timeout',
      message: 'slow did not finish within 300 ms',
    });
    expect(Date.now() - startedAt).toBeLessThan(1_500);
    expect(abortReason).toMatchObject({ code: 'timeout' });
    // The late rejection has landed; the service still answers.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await client.request(toolsList, {})).toMatchObject({ tools: [{ name: 'slow' }] });
  });

  it('answers a tool that crashes as internal, naming the tool but not its insides', async () => {
    const { client } = await serveTools(
      queryTool('broken', 'safe', async () => {
        throw new Error('secret stack detail');
      }),
      queryTool('circular', 'safe', async () => {
        const loop: Record<string, unknown> = {};
        loop.self = loop;
        return loop;
      }),
    );

    const broken = await catchBusError(invoke(client, 'broken', { query: 'x' }));
    const circular = await catchBusError(invoke(client, 'circular', { query: 'x' }));

    expect(broken.toInfo()).toEqual({ code: 'internal', message: 'broken failed unexpectedly' });
    expect(circular.toInfo()).toEqual({
      code: 'internal',
      message: 'circular failed unexpectedly',
    });
    // Still serving.
    expect(await client.request(toolsList, {})).toMatchObject({ tools: expect.any(Array) });
  });
});

describe('tool execution metrics', () => {
  it('count each call of a tool by its status; a name no tool has is no series', async () => {
    const registry = createMetrics('tools-test');
    const tools = new ToolRegistry();
    tools.register(queryTool('lookup'));
    tools.register(
      queryTool('broken', 'safe', async () => {
        throw new Error('out of order');
      }),
    );
    const { client } = await serveRegistry(tools, createToolsMetrics(registry));
    const call = (name: string) =>
      client.request(toolsInvoke, {
        userId: USER_ID,
        name,
        arguments: { query: 'q' },
        timeoutMs: 2_000,
      });

    await call('lookup');
    await call('lookup');
    await catchBusError(call('broken'));
    await catchBusError(call('made-up'));

    const text = await registry.registry.metrics();
    const service = 'service="tools-test"';
    expect(text).toContain(`jarvis_tool_executions_total{tool="lookup",status="ok",${service}} 2`);
    expect(text).toContain(
      `jarvis_tool_executions_total{tool="broken",status="internal",${service}} 1`,
    );
    expect(text).not.toContain('made-up');
  });
});

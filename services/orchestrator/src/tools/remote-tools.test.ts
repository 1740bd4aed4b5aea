import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { BusError } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import {
  type ToolDescriptor,
  type ToolsInvokeRequest,
  type ToolsInvokeResponse,
  toolsInvoke,
  toolsList,
} from '@jarvis/contracts';
import { createLogger } from '@jarvis/telemetry';
import { uniqueNamespace, waitFor } from '@jarvis/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { type AgentTool, type ToolContext, ToolInputError } from './agent-tool';
import { type RemoteToolsOptions, startRemoteTools } from './remote-tools';

// A stand-in tools service on the real NATS: it lists `offered` and answers invocations with
// `answer`, counting and recording what it was asked.
type StandIn = {
  offered: ToolDescriptor[];
  answer: (request: ToolsInvokeRequest) => Promise<ToolsInvokeResponse['result']>;
  invocations: ToolsInvokeRequest[];
  listings: number;
  serve(): Promise<void>;
};

const closing: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

async function setUp() {
  const namespace = uniqueNamespace('remote-tools');
  const orchestrator = await connectTestBus(namespace);
  const service = await connectTestBus(namespace);
  closing.push(
    () => service.close(),
    () => orchestrator.close(),
  );
  const standIn: StandIn = {
    offered: [],
    answer: async () => null,
    invocations: [],
    listings: 0,
    async serve() {
      service.serve(toolsList, async () => {
        standIn.listings += 1;
        return { tools: standIn.offered };
      });
      service.serve(toolsInvoke, async (request) => {
        standIn.invocations.push(request);
        return { result: await standIn.answer(request) };
      });
      await service.nc.flush();
    },
  };
  const warnings: string[] = [];
  const logger = createLogger(
    'remote-tools-test',
    'warn',
    new Writable({
      write(chunk, _encoding, done) {
        warnings.push(JSON.parse(String(chunk)).msg);
        done();
      },
    }),
  );
  const start = (options: Partial<RemoteToolsOptions> = {}) =>
    startRemoteTools(orchestrator, {
      logger,
      approvalTools: new Set(),
      refreshMs: 60_000,
      ...options,
    });
  return { orchestrator, standIn, warnings, start };
}

function descriptor(name: string, risk: ToolDescriptor['risk'] = 'safe'): ToolDescriptor {
  return {
    name,
    description: `the ${name} tool`,
    risk,
    inputSchema: { type: 'object', properties: { url: { type: 'string' } } },
  };
}

function builtIn(name: string): AgentTool {
  return {
    definition: { name, description: `built-in ${name}`, parameters: { type: 'object' } },
    risk: 'safe',
    run: async () => `built-in ${name} ran`,
  };
}

const names = (tools: AgentTool[]) => tools.map((tool) => tool.definition.name);

const context: ToolContext = {
  userId: randomUUID(),
  conversationId: randomUUID(),
  runId: randomUUID(),
  turnId: randomUUID(),
  missionId: undefined,
  userMessageId: randomUUID(),
  timeZone: undefined,
  timeoutMs: 2_000,
};

describe('remote tools', () => {
  it('offers the tools service tools after the built-in ones, with their schemas and risk', async () => {
    const { standIn, start } = await setUp();
    standIn.offered = [descriptor('web_fetch'), descriptor('browser', 'risky')];
    await standIn.serve();

    const tools = (await start()).withBuiltIn([builtIn('memory_read')]);

    expect(names(tools)).toEqual(['memory_read', 'web_fetch', 'browser']);
    expect(tools[1]?.definition).toEqual({
      name: 'web_fetch',
      description: 'the web_fetch tool',
      parameters: descriptor('web_fetch').inputSchema,
    });
    expect(tools.map((tool) => tool.risk)).toEqual(['safe', 'safe', 'risky']);
  });

  it('makes a tool listed in APPROVAL_TOOLS risky whatever the service says', async () => {
    const { standIn, start } = await setUp();
    standIn.offered = [descriptor('web_fetch')];
    await standIn.serve();

    const tools = (await start({ approvalTools: new Set(['web_fetch']) })).withBuiltIn([]);

    expect(tools.map((tool) => tool.risk)).toEqual(['risky']);
  });

  it('keeps the built-in tool when the service offers the same name, and says so once', async () => {
    const { standIn, start, warnings } = await setUp();
    standIn.offered = [descriptor('memory_read'), descriptor('web_fetch')];
    await standIn.serve();
    const memoryRead = builtIn('memory_read');

    const tools = (await start()).withBuiltIn([memoryRead]);

    expect(names(tools)).toEqual(['memory_read', 'web_fetch']);
    expect(tools[0]).toBe(memoryRead);
    expect(warnings).toEqual(['the tools service offers a built-in tool name; kept the built-in']);
  });

  it('leaves out a tool whose name no model would take', async () => {
    const { standIn, start, warnings } = await setUp();
    standIn.offered = [descriptor('web fetch!'), descriptor('web_fetch')];
    await standIn.serve();

    const tools = (await start()).withBuiltIn([]);

    expect(names(tools)).toEqual(['web_fetch']);
    expect(warnings).toEqual(['left out a tool models cannot take']);
  });

  it('starts without the tools service, and picks its tools up once it answers', async () => {
    const { standIn, start } = await setUp();
    standIn.offered = [descriptor('web_fetch')];

    const tools = (await start({ refreshMs: 100 })).withBuiltIn([builtIn('memory_read')]);
    expect(names(tools)).toEqual(['memory_read']);
    await standIn.serve();

    await waitFor(() => names(tools).includes('web_fetch'), { what: 'web_fetch to be offered' });
    expect(names(tools)).toEqual(['memory_read', 'web_fetch']);
  });

  it('follows what the service offers on each refresh, in the same array', async () => {
    const { standIn, start } = await setUp();
    standIn.offered = [descriptor('web_fetch')];
    await standIn.serve();
    const tools = (await start({ refreshMs: 100 })).withBuiltIn([]);

    standIn.offered = [descriptor('web_fetch'), descriptor('browser', 'risky')];
    await waitFor(() => tools.length === 2, { what: 'browser to be offered' });
    standIn.offered = [descriptor('browser', 'risky')];
    await waitFor(() => tools.length === 1, { what: 'web_fetch to be withdrawn' });

    expect(names(tools)).toEqual(['browser']);
  });

  it('runs a tool over tools.invoke with the run as context, leaving time for its answer', async () => {
    const { standIn, start } = await setUp();
    standIn.offered = [descriptor('web_fetch')];
    standIn.answer = async (request) => ({ fetched: String(request.arguments.url) });
    await standIn.serve();
    const [webFetch] = (await start()).withBuiltIn([]);

    const result = await webFetch?.run({ url: 'https://example.com' }, context);

    expect(result).toEqual({ fetched: 'https://example.com' });
    expect(standIn.invocations).toEqual([
      {
        userId: context.userId,
        name: 'web_fetch',
        arguments: { url: 'https://example.com' },
        runId: context.runId,
        conversationId: context.conversationId,
        timeoutMs: 1_800,
      },
    ]);
  });

  it("sends a mission task's mission id with its calls", async () => {
    const { standIn, start } = await setUp();
    standIn.offered = [descriptor('run_code')];
    await standIn.serve();
    const [runCode] = (await start()).withBuiltIn([]);
    const missionId = randomUUID();

    await runCode?.run({ code: 'print(1)' }, { ...context, missionId });

    expect(standIn.invocations).toEqual([expect.objectContaining({ missionId })]);
  });

  it('gives a tool the time its descriptor declares, and others none of their own', async () => {
    const { standIn, start } = await setUp();
    standIn.offered = [{ ...descriptor('run_code'), timeoutMs: 75_000 }, descriptor('web_fetch')];
    await standIn.serve();

    const [runCode, webFetch] = (await start()).withBuiltIn([]);

    expect(runCode?.timeoutMs).toBe(75_000);
    expect(webFetch?.timeoutMs).toBeUndefined();
  });

  it('hands the model its mistakes as ToolInputError, and other failures as they are', async () => {
    const { standIn, start } = await setUp();
    standIn.offered = [descriptor('web_fetch')];
    await standIn.serve();
    const [webFetch] = (await start()).withBuiltIn([]);

    standIn.answer = async () => {
      throw new BusError('bad_request', 'url: must be string');
    };
    const invalid = await webFetch?.run({ url: 1 }, context).catch((error: unknown) => error);
    standIn.answer = async () => {
      throw new BusError('forbidden', 'localhost is 127.0.0.1, a private address');
    };
    const refused = await webFetch
      ?.run({ url: 'http://localhost' }, context)
      .catch((error: unknown) => error);

    expect(invalid).toBeInstanceOf(ToolInputError);
    expect(invalid).toMatchObject({ message: 'url: must be string' });
    expect(refused).toBeInstanceOf(BusError);
    expect(refused).toMatchObject({ code: 'forbidden', message: /private address/ });
  });

  it('stops refreshing when its bus closes', async () => {
    const { orchestrator, standIn, start } = await setUp();
    await standIn.serve();
    await start({ refreshMs: 100 });

    await orchestrator.close();
    const listings = standIn.listings;
    await new Promise((resolve) => setTimeout(resolve, 300));

    expect(listings).toBeGreaterThan(0);
    expect(standIn.listings).toBe(listings);
  });
});

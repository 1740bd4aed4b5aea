import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { type ToolDescriptor, toolsList } from '@jarvis/contracts';
import { uniqueNamespace } from '@jarvis/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { registerHandlers } from './handlers';
import { ToolRegistry } from './registry';

type Tools = { client: Bus; close(): Promise<void> };

const started: Tools[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((tools) => tools.close()));
});

// One namespace per registry: two registries serving one subject would share its queue group.
async function serveRegistry(registry: ToolRegistry): Promise<Tools> {
  const namespace = uniqueNamespace('tools');
  const server = await connectTestBus(namespace);
  const client = await connectTestBus(namespace);
  const subscriptions = registerHandlers(server, registry);
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

function describeTool(name: string, risk: ToolDescriptor['risk'] = 'safe'): ToolDescriptor {
  return {
    name,
    description: `the ${name} tool`,
    risk,
    inputSchema: { type: 'object', properties: { query: { type: 'string' } } },
  };
}

describe('tools.list', () => {
  it('answers an empty list from an empty registry', async () => {
    const { client } = await serveRegistry(new ToolRegistry());

    expect(await client.request(toolsList, {})).toEqual({ tools: [] });
  });

  it('answers the registered tools sorted by name', async () => {
    const registry = new ToolRegistry();
    const webSearch = describeTool('web_search');
    const browser = describeTool('browser', 'risky');
    const notify = describeTool('notify');
    registry.register(webSearch);
    registry.register(browser);
    registry.register(notify);
    const { client } = await serveRegistry(registry);

    expect(await client.request(toolsList, {})).toEqual({ tools: [browser, notify, webSearch] });
  });

  it('sees tools registered after the handler started', async () => {
    const registry = new ToolRegistry();
    const { client } = await serveRegistry(registry);
    registry.register(describeTool('sandbox', 'risky'));

    const { tools } = await client.request(toolsList, {});

    expect(tools.map((tool) => tool.name)).toEqual(['sandbox']);
  });
});

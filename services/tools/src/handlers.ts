import type { Bus } from '@jarvis/bus';
import { toolsInvoke, toolsList } from '@jarvis/contracts';
import { invokeTool } from './invoke-tool';
import type { ToolRegistry } from './registry';

export function registerHandlers(bus: Bus, registry: ToolRegistry) {
  return [
    bus.serve(toolsList, async () => ({ tools: registry.list() })),
    bus.serve(toolsInvoke, (request) => invokeTool(registry, request, bus.logger)),
  ];
}

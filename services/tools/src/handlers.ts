import { type Bus, isBusError } from '@jarvis/bus';
import { toolsInvoke, toolsList } from '@jarvis/contracts';
import { invokeTool } from './invoke-tool';
import type { ToolRegistry } from './registry';
import type { ToolsMetrics } from './tools-metrics';

export function registerHandlers(bus: Bus, registry: ToolRegistry, metrics?: ToolsMetrics) {
  return [
    bus.serve(toolsList, async () => ({ tools: registry.list() })),
    bus.serve(toolsInvoke, async (request) => {
      try {
        const response = await invokeTool(registry, request, bus.logger);
        metrics?.countExecution(request.name, 'ok');
        return response;
      } catch (error) {
        // Only tools that exist are counted: a name the caller made up is no series.
        if (registry.get(request.name)) {
          metrics?.countExecution(request.name, isBusError(error) ? error.code : 'internal');
        }
        throw error;
      }
    }),
  ];
}

import type { Bus } from '@jarvis/bus';
import { toolsList } from '@jarvis/contracts';
import type { ToolRegistry } from './registry';

export function registerHandlers(bus: Bus, registry: ToolRegistry) {
  return [bus.serve(toolsList, async () => ({ tools: registry.list() }))];
}

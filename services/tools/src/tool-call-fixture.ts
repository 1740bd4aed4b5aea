import { catchBusError } from '@jarvis/bus/testing';
import { type Tool, ToolRegistry } from './registry';

// A tool called as the service calls it, for a tool's own tests: registered, so its arguments
// are checked against its schema (and its defaults filled in) before it runs, for one user
// outside any run.
export function callerOf<Args>(tool: Tool<Args>, signal = new AbortController().signal) {
  const registry = new ToolRegistry();
  registry.register(tool);
  const registered = registry.get(tool.name);
  if (!registered) throw new Error(`${tool.name} is not registered`);
  const context = { userId: 'user', runId: undefined, conversationId: undefined, signal };
  return (args: Record<string, unknown>) => registered.call(args, context);
}

// The code and message of the BusError a call fails with, as the caller would read them.
export async function failure(promise: Promise<unknown>) {
  return (await catchBusError(promise)).toInfo();
}

import type { ToolDescriptor } from '@jarvis/contracts';

// The tools this service offers to the agent, by name. The web, browser, document, sandbox and
// notification tools register here as they land (tools issue); until then it is empty.
export class ToolRegistry {
  private readonly tools = new Map<string, ToolDescriptor>();

  register(tool: ToolDescriptor): void {
    if (this.tools.has(tool.name)) throw new Error(`tool ${tool.name} is registered twice`);
    this.tools.set(tool.name, tool);
  }

  list(): ToolDescriptor[] {
    return [...this.tools.values()].sort((a, b) => a.name.localeCompare(b.name));
  }
}

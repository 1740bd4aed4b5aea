import { BusError } from '@jarvis/bus';
import type { ToolDescriptor, ToolRisk } from '@jarvis/contracts';
import { Ajv, type ErrorObject, type JSONSchemaType } from 'ajv';

export type ToolRunContext = {
  userId: string;
  runId: string | undefined;
  conversationId: string | undefined;
  // Set when a mission's task made the call: run_code keeps its files in the mission's workspace.
  // Optional: a call outside a mission need not name it.
  missionId?: string;
  // Aborted when the call's time is up: a tool stops its work (closes its connections) on it.
  signal: AbortSignal;
};

// A tool as it is written: `inputSchema` is both what the model is shown and what its arguments
// are checked against before `run` sees them, so `run` can trust their types.
export type Tool<Args> = {
  name: string;
  description: string;
  risk: ToolRisk;
  inputSchema: JSONSchemaType<Args>;
  // How long a call may take when the caller's default is too short (run_code's wall time);
  // undefined: the caller's default.
  timeoutMs?: number;
  run(args: Args, context: ToolRunContext): Promise<unknown>;
};

// A registered tool, its argument type hidden behind the schema check that establishes it.
export type RegisteredTool = {
  descriptor: ToolDescriptor;
  // Rejects with a bad_request BusError when the arguments do not match the schema.
  call(args: Record<string, unknown>, context: ToolRunContext): Promise<unknown>;
};

// Strict: a tool schema with a typo in a keyword fails at registration, not silently at call
// time. useDefaults: a schema's defaults fill in what the model left out, so the types hold.
// Defaults are written into the arguments object, which is the service's own decoded copy.
const ajv = new Ajv({ strict: true, useDefaults: true, allErrors: false });

// The tools this service offers to the agent, by name. The browser, document, sandbox and
// notification tools register here as they land (tools issue).
export class ToolRegistry {
  private readonly tools = new Map<string, RegisteredTool>();

  register<Args>(tool: Tool<Args>): void {
    if (this.tools.has(tool.name)) throw new Error(`tool ${tool.name} is registered twice`);
    const validate = ajv.compile<Args>(tool.inputSchema);
    this.tools.set(tool.name, {
      descriptor: {
        name: tool.name,
        description: tool.description,
        risk: tool.risk,
        inputSchema: tool.inputSchema,
        ...(tool.timeoutMs === undefined ? {} : { timeoutMs: tool.timeoutMs }),
      },
      async call(args, context) {
        if (!validate(args)) throw new BusError('bad_request', describeProblem(validate.errors));
        return tool.run(args, context);
      },
    });
  }

  get(name: string): RegisteredTool | undefined {
    return this.tools.get(name);
  }

  list(): ToolDescriptor[] {
    return [...this.tools.values()]
      .map((tool) => tool.descriptor)
      .sort((a, b) => a.name.localeCompare(b.name));
  }
}

// The first problem, with the path of the argument, in the words the model gets back to correct
// its call: "maxChars: must be integer", "(root): must have required property 'url'".
function describeProblem(errors: ErrorObject[] | null | undefined): string {
  const first = errors?.[0];
  if (!first) return 'the arguments do not match the tool schema';
  const path = first.instancePath ? first.instancePath.slice(1).replaceAll('/', '.') : '(root)';
  if (first.keyword === 'additionalProperties') {
    return `${path}: unknown property ${String(first.params.additionalProperty)}`;
  }
  return `${path}: ${first.message ?? 'is invalid'}`;
}

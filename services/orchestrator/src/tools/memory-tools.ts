import type { Bus } from '@jarvis/bus';
import { describeZodError } from '@jarvis/bus';
import {
  memoryFactsForget,
  memoryFactsRemember,
  memoryFilesDelete,
  memoryFilesEdit,
  memoryFilesGrep,
  memoryFilesList,
  memoryFilesRead,
  memoryFilesWrite,
  memorySearch,
  type RpcContract,
} from '@jarvis/contracts';
import type { z } from 'zod';
import { type AgentTool, jsonSchemaOf, type ToolContext, ToolInputError } from './agent-tool';

// The memory service's own request schemas, less what the orchestrator fills in (the user, the
// provenance), are the tools' argument schemas: one definition, validated the same way.
function memoryTool<Req extends z.ZodObject, Res extends z.ZodType>(
  name: string,
  description: string,
  contract: RpcContract<Req, Res>,
  filled: (context: ToolContext) => Record<string, unknown>,
): (bus: Bus) => AgentTool {
  const hidden = Object.fromEntries(
    Object.keys(
      filled({
        userId: '',
        conversationId: '',
        runId: '',
        missionId: undefined,
        userMessageId: '',
        timeZone: undefined,
        timeoutMs: 0,
      }),
    ).map((key) => [key, true as const]),
  );
  const args = contract.request.omit(hidden);
  const parameters = jsonSchemaOf(args);
  return (bus) => ({
    definition: { name, description, parameters },
    risk: 'safe',
    async run(input, context) {
      const parsed = args.safeParse(input);
      if (!parsed.success) throw new ToolInputError(describeZodError(parsed.error));
      return bus.request(contract, { ...parsed.data, ...filled(context) } as z.input<Req>, {
        timeoutMs: context.timeoutMs,
      });
    },
  });
}

const user = (context: ToolContext) => ({ userId: context.userId });

const MEMORY_TOOLS = [
  memoryTool(
    'memory_search',
    "Search everything you remember of the user: past messages, facts, summaries, notes and documents. Dates in the query ('last week', 'in March 2023') narrow it.",
    memorySearch,
    user,
  ),
  memoryTool('memory_ls', 'List your memory files under a path prefix.', memoryFilesList, user),
  memoryTool('memory_read', 'Read one of your memory files.', memoryFilesRead, user),
  memoryTool(
    'memory_write',
    'Create or replace a memory file (notes, plans, procedures); the previous version is kept.',
    memoryFilesWrite,
    user,
  ),
  memoryTool(
    'memory_edit',
    'Replace one exact piece of text in a memory file with another.',
    memoryFilesEdit,
    user,
  ),
  memoryTool(
    'memory_grep',
    'Find lines matching a pattern in your memory files.',
    memoryFilesGrep,
    user,
  ),
  memoryTool(
    'memory_delete',
    'Delete a memory file (its history is kept).',
    memoryFilesDelete,
    user,
  ),
  memoryTool(
    'remember',
    'Store a fact about the user (a preference, a decision, a date) to recall in later turns.',
    memoryFactsRemember,
    (context) => ({
      userId: context.userId,
      sourceMessageIds: context.userMessageId ? [context.userMessageId] : [],
    }),
  ),
  memoryTool(
    'forget',
    'Forget a fact by its id (from memory_search); it stays in its history, no longer believed.',
    memoryFactsForget,
    user,
  ),
];

// `risky`: the names of the tools that wait for the user's approval (APPROVAL_TOOLS).
export function createMemoryTools(bus: Bus, risky: Set<string>): AgentTool[] {
  return MEMORY_TOOLS.map((make) => {
    const tool = make(bus);
    return risky.has(tool.definition.name) ? { ...tool, risk: 'risky' as const } : tool;
  });
}

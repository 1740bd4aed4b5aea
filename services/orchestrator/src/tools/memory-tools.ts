import { type Bus, BusError, describeZodError } from '@jarvis/bus';
import {
  FactCategory,
  FactContent,
  FilePath,
  memoryFactsForget,
  memoryFactsRemember,
  memoryFilesDelete,
  memoryFilesEdit,
  memoryFilesGrep,
  memoryFilesList,
  memoryFilesRead,
  memoryFilesRestore,
  memoryFilesWrite,
  memorySearch,
  memorySkillsLoad,
  type RpcContract,
  SKILLS_FOLDER,
  SkillName,
  type ToolRisk,
} from '@jarvis/contracts';
import { z } from 'zod';
import { type AgentTool, jsonSchemaOf, type ToolContext, ToolInputError } from './agent-tool';

// The memory service's own request schemas, less what the orchestrator fills in (the user, the
// provenance), are the tools' argument schemas: one definition, validated the same way.
function memoryTool<Req extends z.ZodObject, Res extends z.ZodType>(
  name: string,
  description: string,
  contract: RpcContract<Req, Res>,
  filled: (context: ToolContext) => Record<string, unknown>,
  // Arguments narrower for the model than for the memory service's other callers.
  narrowed: z.ZodRawShape = {},
): (bus: Bus) => AgentTool {
  const hidden = Object.fromEntries(
    Object.keys(
      filled({
        userId: '',
        conversationId: '',
        runId: '',
        turnId: '',
        missionId: undefined,
        userMessageId: '',
        timeZone: undefined,
        timeoutMs: 0,
      }),
    ).map((key) => [key, true as const]),
  );
  const args = contract.request.omit(hidden).extend(narrowed);
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
    'Create or replace a memory file (notes, plans, procedures); the previous version is kept. A skill (a procedure the user wants reused) is the file skills/<name>.md beginning "---\\nname: <name>\\ndescription: <one line>\\n---\\n", then the procedure; writing one waits for the user\'s approval.',
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
    'memory_restore',
    "Restore an earlier version of a memory file as its newest one (memory_read shows a file's version and reads an earlier one by its number); the versions between are kept. Restoring a skill waits for the user's approval.",
    memoryFilesRestore,
    user,
  ),
  memoryTool(
    'remember',
    'Store a fact about the user (a preference, a decision, a date) to recall in later turns.',
    memoryFactsRemember,
    (context) => ({
      userId: context.userId,
      sourceMessageIds: context.userMessageId ? [context.userMessageId] : [],
      // The Learned view lists (and undoes) what this turn stored.
      turnId: context.turnId,
    }),
    // A standing rule steers every later prompt: the model proposes one with propose_rule, which
    // waits for the user's approval, and cannot store one here without it.
    { category: FactCategory.exclude(['rule']).default('fact') },
  ),
  memoryTool(
    'forget',
    'Forget a fact by its id (from memory_search); it stays in its history, no longer believed.',
    memoryFactsForget,
    user,
  ),
];

const ProposeRuleArgs = z.strictObject({ text: FactContent });

// A standing rule is in every later prompt, so one the model proposes (or that a fetched page
// talked it into) waits for the user's approval, whatever APPROVAL_TOOLS says.
function proposeRule(bus: Bus): AgentTool {
  return {
    definition: {
      name: 'propose_rule',
      description:
        'Propose a standing rule to follow in every conversation from now on ("always use metric units"), when the user states how you should always work. It is stored once the user approves it. If it is refused, tell the user why.',
      parameters: jsonSchemaOf(ProposeRuleArgs),
    },
    risk: 'risky',
    async run(input, context) {
      const parsed = ProposeRuleArgs.safeParse(input);
      if (!parsed.success) throw new ToolInputError(describeZodError(parsed.error));
      try {
        const { fact, isDuplicate } = await bus.request(
          memoryFactsRemember,
          {
            userId: context.userId,
            content: parsed.data.text,
            category: 'rule',
            sourceMessageIds: context.userMessageId ? [context.userMessageId] : [],
          },
          { timeoutMs: context.timeoutMs },
        );
        return { rule: { id: fact.id, text: fact.content }, isAlreadyARule: isDuplicate };
      } catch (error) {
        // Memory refuses a rule that would take the standing instructions past their cap, and
        // says by how much: the model is to pass that on, not to try again.
        if (error instanceof BusError && error.code === 'bad_request') {
          throw new Error(`the rule was not stored: ${error.message}`);
        }
        throw error;
      }
    },
  };
}

export const SKILL_LOAD = 'skill_load';
const SkillLoadArgs = z.strictObject({ name: SkillName });

function skillLoad(bus: Bus): AgentTool {
  return {
    definition: {
      name: SKILL_LOAD,
      description:
        'Load one of your skills (a procedure the user approved) by its name from the skills index, to follow it.',
      parameters: jsonSchemaOf(SkillLoadArgs),
    },
    risk: 'safe',
    async run(input, context) {
      const parsed = SkillLoadArgs.safeParse(input);
      if (!parsed.success) throw new ToolInputError(describeZodError(parsed.error));
      try {
        return await bus.request(
          memorySkillsLoad,
          { userId: context.userId, name: parsed.data.name },
          { timeoutMs: context.timeoutMs },
        );
      } catch (error) {
        if (error instanceof BusError && error.code === 'not_found') {
          throw new ToolInputError(`there is no skill named ${parsed.data.name}`);
        }
        throw error;
      }
    },
  };
}

// A mission's task loads only the skills its plan names: nobody is there to see it follow a
// procedure the plan did not choose for it.
export function limitSkillLoad(tool: AgentTool, skills: readonly string[]): AgentTool {
  return {
    ...tool,
    async run(input, context) {
      const parsed = SkillLoadArgs.safeParse(input);
      if (parsed.success && !skills.includes(parsed.data.name)) {
        throw new ToolInputError(
          skills.length === 0
            ? `this task may use no skill (its plan names none), so it may not use skill ${parsed.data.name}`
            : `this task may not use skill ${parsed.data.name}; it may use ${skills.join(', ')}`,
        );
      }
      return tool.run(input, context);
    },
  };
}

// Every tool that changes a memory file, which it names by its path. A skill steers later
// prompts, so changing one (restoring an earlier version too) waits for the user's approval as
// a rule does; other files do not. A file-changing tool missing here would change skills
// unasked.
const FILE_CHANGING_TOOLS = new Set([
  'memory_write',
  'memory_edit',
  'memory_delete',
  'memory_restore',
]);

function isSkillChange(args: Record<string, unknown>): boolean {
  const path = FilePath.safeParse(args.path);
  return path.success && path.data.startsWith(SKILLS_FOLDER);
}

// `risky`: the names of the tools that wait for the user's approval (APPROVAL_TOOLS).
export function createMemoryTools(bus: Bus, risky: Set<string>): AgentTool[] {
  const tools = [...MEMORY_TOOLS.map((make) => make(bus)), proposeRule(bus), skillLoad(bus)];
  return tools.map((tool) => {
    const risk: ToolRisk = risky.has(tool.definition.name) ? 'risky' : tool.risk;
    if (!FILE_CHANGING_TOOLS.has(tool.definition.name)) return { ...tool, risk };
    return { ...tool, risk, riskOf: (args) => (isSkillChange(args) ? 'risky' : risk) };
  });
}

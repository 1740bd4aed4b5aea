import { type Bus, isBusError } from '@jarvis/bus';
import { ToolDefinition, type ToolDescriptor, toolsInvoke, toolsList } from '@jarvis/contracts';
import type { Logger } from '@jarvis/telemetry';
import { type AgentTool, ToolInputError } from './agent-tool';

export type RemoteToolsOptions = {
  logger: Logger;
  // Tools that wait for the user's approval whatever the tools service says (APPROVAL_TOOLS).
  approvalTools: Set<string>;
  // How often the list is asked for again, so tools added or removed there reach new turns.
  refreshMs: number;
};

// Until the tools service has answered once, it is asked again this soon (it may simply be
// starting alongside this service).
const RETRY_MS = 1_000;
const LIST_TIMEOUT_MS = 2_000;
// Of the caller's time, what is left for the tools service's own timeout reply to arrive in:
// without it the caller would give up first and report a vaguer "did not answer in time".
const REPLY_MARGIN_MS = 250;

// A list handed out by withBuiltIn: its own built-in tools, and the array the loop reads.
type LiveList = { builtIn: AgentTool[]; live: AgentTool[] };

export type RemoteTools = {
  // A list of these built-in tools followed by the tools service's, kept current in place:
  // each refresh replaces its contents, and the agent loop reads the list at the start of every
  // run (runAgentLoop builds its tool map from it then), so a tool added or removed there
  // reaches the next turn without a restart. Hand the list itself to the loop: a copy is frozen.
  // A name the tools service shares with a built-in tool keeps the built-in one.
  withBuiltIn(builtIn: AgentTool[]): AgentTool[];
};

// Asks the tools service for its tools (`tools.list`) now and every refreshMs. A start never
// fails for want of the tools service: when it is not up yet, the lists hold only their built-in
// tools until it answers. Refreshing stops when the bus closes.
export async function startRemoteTools(
  bus: Bus,
  options: RemoteToolsOptions,
): Promise<RemoteTools> {
  const { logger } = options;
  const lists: LiveList[] = [];
  let remote: AgentTool[] = [];
  // Each problem with a tool is logged once, not on every refresh.
  const reported = new Set<string>();
  const reportOnce = (key: string, report: () => void) => {
    if (reported.has(key)) return;
    reported.add(key);
    report();
  };
  const update = (list: LiveList) => {
    const builtInNames = new Set(list.builtIn.map((tool) => tool.definition.name));
    const offered = remote.filter((tool) => {
      const { name } = tool.definition;
      if (!builtInNames.has(name)) return true;
      reportOnce(`clash:${name}`, () =>
        logger.warn(
          { tool: name },
          'the tools service offers a built-in tool name; kept the built-in',
        ),
      );
      return false;
    });
    list.live.splice(0, list.live.length, ...list.builtIn, ...offered);
  };

  let isLoaded = false;
  let isFailing = false;
  let isStopped = false;
  let timer: NodeJS.Timeout | undefined;

  const refresh = async () => {
    let descriptors: ToolDescriptor[];
    try {
      ({ tools: descriptors } = await bus.request(toolsList, {}, { timeoutMs: LIST_TIMEOUT_MS }));
    } catch (error) {
      if (!isFailing && !isStopped) {
        logger.warn({ err: error }, 'cannot list the tools service tools; asking again later');
      }
      isFailing = true;
      return;
    }
    remote = descriptors.flatMap((descriptor) => {
      // The model gateway refuses a whole request over one bad tool: such a tool is left out.
      const definition = ToolDefinition.safeParse({
        name: descriptor.name,
        description: descriptor.description,
        parameters: descriptor.inputSchema,
      });
      if (!definition.success) {
        reportOnce(`invalid:${descriptor.name}`, () =>
          logger.warn(
            { tool: descriptor.name, err: definition.error },
            'left out a tool models cannot take',
          ),
        );
        return [];
      }
      const isRisky = descriptor.risk === 'risky' || options.approvalTools.has(descriptor.name);
      return [remoteTool(bus, definition.data, isRisky ? 'risky' : 'safe', descriptor.timeoutMs)];
    });
    for (const list of lists) update(list);
    if (!isLoaded || isFailing) {
      logger.info(
        { tools: remote.map((tool) => tool.definition.name) },
        'tools service tools loaded',
      );
    }
    isLoaded = true;
    isFailing = false;
  };

  const schedule = () => {
    if (isStopped) return;
    const delayMs = isLoaded ? options.refreshMs : Math.min(options.refreshMs, RETRY_MS);
    timer = setTimeout(() => void refresh().then(schedule), delayMs);
  };
  void bus.nc.closed().then(() => {
    isStopped = true;
    clearTimeout(timer);
  });
  // Awaited so that the first turns after a start already have the tools when the service is
  // up; when it is not, the answer is immediate (no responders) and the retries go on.
  await refresh();
  schedule();

  return {
    withBuiltIn(builtIn) {
      const list: LiveList = { builtIn: [...builtIn], live: [] };
      update(list);
      lists.push(list);
      return list.live;
    },
  };
}

function remoteTool(
  bus: Bus,
  definition: AgentTool['definition'],
  risk: AgentTool['risk'],
  timeoutMs: number | undefined,
): AgentTool {
  return {
    definition,
    risk,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    async run(args, context) {
      const margin = Math.min(REPLY_MARGIN_MS, Math.floor(context.timeoutMs / 10));
      try {
        const { result } = await bus.request(
          toolsInvoke,
          {
            userId: context.userId,
            name: definition.name,
            arguments: args,
            runId: context.runId,
            conversationId: context.conversationId,
            ...(context.missionId === undefined ? {} : { missionId: context.missionId }),
            timeoutMs: Math.max(context.timeoutMs - margin, 1),
          },
          { timeoutMs: context.timeoutMs },
        );
        return result;
      } catch (error) {
        // The tools service checked the arguments against the schema the model was shown: its
        // words go back to the model as a mistake to correct, like a built-in tool's.
        if (isBusError(error) && (error.code === 'bad_request' || error.code === 'not_found')) {
          throw new ToolInputError(error.message);
        }
        throw error;
      }
    },
  };
}

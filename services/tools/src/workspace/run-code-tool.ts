import { BusError } from '@jarvis/bus';
import { isWorkspacePath, type ToolFile, workspaceFileUrl } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import type { Logger } from '@jarvis/telemetry';
import type { Tool, ToolRunContext } from '../registry';
import type {
  Sandbox,
  SandboxLanguage,
  SandboxLimit,
  SandboxLimits,
  SandboxRunDir,
} from '../sandbox/sandbox';
import type { Workspace } from './workspace-repository';
import {
  listProducedFiles,
  materialiseWorkspace,
  type NotKept,
  placeFile,
  type WorkspaceLimits,
  writeBackWorkspace,
} from './workspace-sync';

export type RunCodeToolDeps = {
  sandbox: Sandbox;
  pool: Pool;
  limits: { sandbox: SandboxLimits; workspace: WorkspaceLimits };
  logger: Logger;
};

type InputFile = { path: string; content: string };

type RunCodeArgs = { language: SandboxLanguage; code: string; files?: InputFile[] };

// The fixed shape, plus what was not kept and where the files are. A list cut short
// says how many it left out.
type RunCodeResult = {
  exitCode: number;
  limit?: SandboxLimit;
  files?: ToolFile[];
  filesNotListed?: number;
  notKept?: NotKept[];
  notKeptNotListed?: number;
  workspace?: Workspace;
  stdout: string;
  stderr: string;
};

const CODE_MAX_CHARS = 100_000;
const INPUT_FILES_MAX = 20;
const INPUT_FILE_MAX_CHARS = 200_000;
// Of each of stdout and stderr in the result. The sandbox's output limit (1 MiB by default) is
// about one NATS message, which the JSON of the whole reply must fit in; the model is shown far
// less anyway (the orchestrator cuts a tool result to TOOL_RESULT_MAX_CHARS).
const RESULT_STREAM_MAX_CHARS = 32_000;
// Entries of `files` and of `notKept` in the result: a run may leave a thousand files, and each
// entry's path may be 512 characters (a url three times that, percent-encoded); the whole reply
// must fit one NATS message.
const RESULT_LIST_MAX = 50;
// A call also waits for a free sandbox, copies the workspace in, and writes it back.
const CALL_OVERHEAD_MS = 15_000;

// The agent runs Python, JavaScript or shell code in the sandbox, on the files of the
// conversation's (or the mission's) workspace at /workspace; what the code writes there is kept.
export function createRunCodeTool(deps: RunCodeToolDeps): Tool<RunCodeArgs> {
  return {
    name: 'run_code',
    description: describeRunCode(deps.limits),
    // Sealed: no network, nothing of the host. An operator who wants each run approved lists
    // run_code in the orchestrator's APPROVAL_TOOLS.
    risk: 'safe',
    timeoutMs: deps.limits.sandbox.wallMs + CALL_OVERHEAD_MS,
    inputSchema: {
      type: 'object',
      properties: {
        language: {
          type: 'string',
          enum: ['python', 'javascript', 'shell'],
          description: 'python (Python 3), javascript (Node.js) or shell (bash).',
        },
        code: {
          type: 'string',
          minLength: 1,
          maxLength: CODE_MAX_CHARS,
          description: 'The program, run with /workspace as its working directory.',
        },
        files: {
          type: 'array',
          nullable: true,
          maxItems: INPUT_FILES_MAX,
          description:
            'Text files written into /workspace before the run (replacing any there), and kept like the files the code writes.',
          items: {
            type: 'object',
            properties: {
              path: {
                type: 'string',
                minLength: 1,
                maxLength: 512,
                description: "Relative to /workspace, e.g. 'data/input.csv'.",
              },
              content: { type: 'string', maxLength: INPUT_FILE_MAX_CHARS },
            },
            required: ['path', 'content'],
            additionalProperties: false,
          },
        },
      },
      required: ['language', 'code'],
      additionalProperties: false,
    },
    async run(args, context) {
      for (const file of args.files ?? []) {
        if (!isWorkspacePath(file.path)) {
          throw new BusError(
            'bad_request',
            `files: ${JSON.stringify(file.path)} is not a relative path inside /workspace`,
          );
        }
      }
      const runDir = await deps.sandbox.open();
      try {
        return await runInWorkspace(deps, args, context, runDir);
      } finally {
        await runDir.dispose();
      }
    },
  };
}

// The workspace a call works in: a mission task's is the mission's, else the conversation's; a
// call outside both gets a /workspace that is not kept.
function workspaceOf(context: ToolRunContext): Workspace | undefined {
  if (context.missionId) return { kind: 'mission', id: context.missionId };
  if (context.conversationId) return { kind: 'conversation', id: context.conversationId };
  return undefined;
}

async function runInWorkspace(
  deps: RunCodeToolDeps,
  args: RunCodeArgs,
  context: ToolRunContext,
  runDir: SandboxRunDir,
): Promise<RunCodeResult> {
  const workspace = workspaceOf(context);
  const dir = runDir.workspaceDir;
  const materialised = workspace
    ? await materialiseWorkspace(deps.pool, context.userId, workspace, dir, deps.logger)
    : new Map();
  for (const file of args.files ?? []) {
    if (!(await placeFile(dir, file.path, Buffer.from(file.content, 'utf8'), 'replace'))) {
      throw new BusError(
        'bad_request',
        `files: ${file.path} cannot be written where a folder or file of the workspace is in its way`,
      );
    }
  }
  const run = await runDir.run({
    language: args.language,
    code: args.code,
    signal: context.signal,
  });
  // The caller has given up (its time is up): nothing is written back for an answer nobody reads.
  context.signal.throwIfAborted();
  const result: Omit<RunCodeResult, 'stdout' | 'stderr'> = { exitCode: run.exitCode };
  if (run.limit) result.limit = run.limit;
  if (workspace) {
    const kept = await writeBackWorkspace(
      deps.pool,
      context.userId,
      workspace,
      dir,
      materialised,
      deps.limits.workspace,
    );
    const files = kept.files.map(({ path, size, mediaType }) => ({
      path,
      size,
      mediaType,
      url: workspaceFileUrl(workspace.kind, workspace.id, path),
    }));
    Object.assign(result, listed(files, kept.notKept), { workspace });
  } else {
    const produced = await listProducedFiles(dir);
    Object.assign(result, listed(produced.files, produced.notKept));
  }
  // Last, so that a result cut to the model's budget loses the end of the output, not the
  // exit code or the files.
  return {
    ...result,
    stdout: cutMiddle(run.stdout, RESULT_STREAM_MAX_CHARS),
    stderr: cutMiddle(run.stderr, RESULT_STREAM_MAX_CHARS),
  };
}

// The result's lists, each left out when empty and cut at RESULT_LIST_MAX.
function listed(files: ToolFile[], notKept: NotKept[]) {
  const lists: Pick<RunCodeResult, 'files' | 'filesNotListed' | 'notKept' | 'notKeptNotListed'> =
    {};
  if (files.length > 0) lists.files = files.slice(0, RESULT_LIST_MAX);
  if (files.length > RESULT_LIST_MAX) lists.filesNotListed = files.length - RESULT_LIST_MAX;
  if (notKept.length > 0) lists.notKept = notKept.slice(0, RESULT_LIST_MAX);
  if (notKept.length > RESULT_LIST_MAX) {
    lists.notKeptNotListed = notKept.length - RESULT_LIST_MAX;
  }
  return lists;
}

// Its start and its end, which say the most (what ran, how it failed), with the middle left out.
export function cutMiddle(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const half = Math.floor(maxChars / 2);
  const left = text.length - 2 * half;
  return `${text.slice(0, half)}\n[... ${left} characters left out ...]\n${text.slice(-half)}`;
}

function formatMib(bytes: number): string {
  const mib = bytes / 1_048_576;
  return Number.isInteger(mib) ? `${mib} MiB` : `${(bytes / 1_048_576).toFixed(1)} MiB`;
}

// What the model reads: what runs, where its files live, what it cannot do, and its limits.
function describeRunCode(limits: RunCodeToolDeps['limits']): string {
  const { sandbox, workspace } = limits;
  return [
    'Run code in a sealed sandbox and get its stdout, stderr and exit code.',
    'Languages: python (Python 3 with numpy, pandas and matplotlib), javascript (Node.js), shell (bash).',
    "The working directory /workspace holds the files of this conversation (of the mission, in a mission's task) and persists between calls: what the code writes there is kept, and the user can see and download it.",
    'An image saved in /workspace (a matplotlib chart as PNG, for example) is shown to the user.',
    'Anything outside /workspace (/tmp included) is gone after the call.',
    'There is no network: nothing can be downloaded or installed.',
    `Limits of one run: ${Math.round(sandbox.wallMs / 1000)} s of wall time, ${sandbox.cpuSeconds} s of CPU, ${formatMib(sandbox.memoryBytes)} of memory, ${sandbox.processes} processes, ${formatMib(sandbox.outputBytes)} of output, ${formatMib(workspace.fileMaxBytes)} per file kept; \`limit\` in the result names the one that stopped the run.`,
    '`files` in the result lists the files the run created or changed, `notKept` what it left that was not kept and why.',
  ].join(' ');
}

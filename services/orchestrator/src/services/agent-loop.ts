import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import {
  ChatMessage,
  ModelChatChunk,
  type ModelChatResponse,
  modelChat,
  modelChatCancel,
  screenshotOf,
  ToolCall,
  type ToolFile,
  type ToolRisk,
  type ToolScreenshot,
  type TurnEvent,
  toolFilesOf,
  Usage,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { type Span, withSpan } from '@jarvis/telemetry';
import { z } from 'zod';
import { insertStep, type NewStep, type StepTarget } from '../repositories/steps-repository';
import { type AgentTool, type ToolContext, ToolInputError } from '../tools/agent-tool';
import type { TurnMeter } from './agent-metrics';
import { endToolSpan, executeToolAttributes } from './agent-spans';

export type LoopSettings = {
  // Model calls per turn; tool results go back to the model until it answers or this is reached.
  maxSteps: number;
  toolTimeoutMs: number;
  // The whole turn, every model and tool call included.
  turnDeadlineMs: number;
  // Characters of one tool result the model sees.
  toolResultMaxChars: number;
  // Output tokens of one model call, and of all the turn's calls together.
  maxOutputTokens: number;
  turnOutputTokenCap: number;
  modelCallTimeoutMs: number;
};

export type LoopRun = {
  id: string;
  turnId: string;
  userId: string;
  conversationId: string;
  // Set for a mission's task: the mission it works for.
  missionId?: string;
  // The message a turn answers (a mission's task answers none).
  userMessageId: string | undefined;
  // The user's zone, when the run knows it (a mission's task does not).
  timeZone: string | undefined;
};

// Limits the run shares with others (a mission's caps, its cancellation): asked before each
// model call, told what each one cost.
export type LoopBudget = {
  // Why no more model calls may be made, in words for the user; undefined while they may.
  exhausted(): Promise<string | undefined>;
  charge(answer: ModelChatResponse): Promise<void>;
};

export type LoopResult = {
  content: string;
  provider: string;
  model: string;
  usage: Usage;
  costUsd: number;
  // Set when a guardrail ended the turn: what tripped.
  guardrail?: string;
  // Set when a tool call waits for the user: the call, the loop to go on with, and what the user
  // is asked for (an approval of a risky call, or the answer to a tool's question).
  paused?: { call: ToolCall; state: LoopState; kind: PauseKind };
};

type PauseKind = 'approval' | 'question';

// Where the loop stands: enough to go on later, after a restart (it is stored as JSON with the
// approval it waits for, and checked when read back).
export const LoopStateSchema = z.object({
  messages: z.array(ChatMessage),
  // Tool calls of the model's last answer not yet run, in order.
  pending: z.array(ToolCall),
  usage: Usage,
  costUsd: z.number().nonnegative(),
  steps: z.number().int().nonnegative(),
  // How often each call (tool and arguments) was made.
  calls: z.record(z.string(), z.number().int()),
  last: z.object({ content: z.string(), provider: z.string(), model: z.string() }).optional(),
});
type LoopState = z.infer<typeof LoopStateSchema>;

// What the user said about the call the loop paused on: their approval of a risky call, or
// their answer to a question (null when it expired unanswered).
type LoopDecision =
  | { toolCallId: string; status: 'approved' | 'denied' | 'expired' }
  | { toolCallId: string; status: 'answered'; answer: string | null };

export type LoopStart = { prompt: ChatMessage[] } | { state: LoopState; decision: LoopDecision };

// A model error: final for the turn (model-gateway already retried and fell back).
export class ModelFailure extends Error {
  constructor(cause: unknown) {
    super('model call failed', { cause });
  }
}

// The user cancelled the turn: final, and recorded as a `cancelled` guardrail step.
export class TurnCancelled extends Error {
  constructor() {
    super('the turn was cancelled');
  }
}

export type StepRecorder = {
  // Stores a step beside the run's next move rather than before it: a turn would otherwise wait
  // for a write after its recall and after each model call.
  record(step: NewStep): void;
  // A risky call its user denied or did not approve in time: never run, so no step to store;
  // only the turn's metrics count it.
  recordDenied(tool: string): void;
  // Waits until every step recorded so far is stored; throws the first that could not be.
  // Before a run is marked finished, so a finished run always shows all its steps.
  flush(): Promise<void>;
  count(): number;
};

// Steps are numbered in the order they happen within one attempt of the run. Every step also
// goes to the turn's meter: the one place that sees each model call, tool call and guardrail.
export function createStepRecorder(
  pool: Pool,
  target: StepTarget,
  meter?: TurnMeter,
): StepRecorder {
  let seq = 0;
  let pending: Promise<void>[] = [];
  let failure: unknown;
  return {
    record(step) {
      meter?.observeStep(step);
      seq += 1;
      pending.push(
        insertStep(pool, target, seq, step).catch((error: unknown) => {
          failure ??= error;
        }),
      );
    },
    async flush() {
      const writes = pending;
      pending = [];
      await Promise.all(writes);
      if (failure !== undefined) throw failure;
    },
    recordDenied(tool) {
      meter?.observeDeniedCall(tool);
    },
    count: () => seq,
  };
}

export type LoopDeps = {
  bus: Bus;
  tools: AgentTool[];
  settings: LoopSettings;
  recorder: StepRecorder;
  emit: (event: TurnEvent) => void;
  // Whether the model streams its answer as delta events (someone follows the turn).
  isStreamed: boolean;
  budget?: LoopBudget;
  // Aborted when the user cancels the turn: it stops before its next step, and a model call in
  // flight is cancelled.
  signal?: AbortSignal;
};

// The tool loop: the model answers or asks for tools; their results (validated, time-limited,
// capped) go back to it until it answers. Guardrails end a turn that runs too long, too many
// steps, too many tokens, or in circles, with words the user can read. A risky tool call pauses
// the loop until its user decides, and a tool's question until they answer; the loop then starts
// again from its saved state.
export async function runAgentLoop(
  deps: LoopDeps,
  run: LoopRun,
  start: LoopStart,
): Promise<LoopResult> {
  const { settings } = deps;
  const deadline = Date.now() + settings.turnDeadlineMs;
  const byName = new Map(deps.tools.map((tool) => [tool.definition.name, tool]));
  const definitions = deps.tools.map((tool) => tool.definition);
  const state: LoopState =
    'prompt' in start
      ? {
          messages: [...start.prompt],
          pending: [],
          usage: { inputTokens: 0, outputTokens: 0 },
          costUsd: 0,
          steps: 0,
          calls: {},
        }
      : structuredClone(start.state);
  const decision = 'decision' in start ? start.decision : undefined;
  const result = (content: string, extra: Partial<LoopResult> = {}): LoopResult => ({
    content,
    provider: state.last?.provider ?? 'none',
    model: state.last?.model ?? 'none',
    usage: state.usage,
    costUsd: state.costUsd,
    ...extra,
  });
  const stop = (guardrail: string, explanation: string): LoopResult =>
    result([state.last?.content.trim(), explanation].filter(Boolean).join('\n\n'), { guardrail });

  for (;;) {
    while (state.pending.length > 0) {
      stopIfCancelled(deps);
      const call = state.pending[0] as ToolCall;
      const tool = byName.get(call.name);
      const decided = decision?.toolCallId === call.id ? decision : undefined;
      if (tool?.pausesForAnswer && decided === undefined) {
        return result(state.last?.content.trim() ?? '', {
          paused: { call, state, kind: 'question' },
        });
      }
      if (tool && riskOf(tool, call) === 'risky' && decided === undefined) {
        return result(askApproval(call), { paused: { call, state, kind: 'approval' } });
      }
      state.pending.shift();
      const key = `${call.name}:${canonical(call.arguments)}`;
      const seen = (state.calls[key] ?? 0) + 1;
      state.calls[key] = seen;
      if (seen > 2) {
        tripped(deps, 'repeated_call', { tool: call.name });
        return stop(
          'repeated_call',
          `I stopped because I kept repeating the same ${call.name} call without getting further.`,
        );
      }
      let content: string;
      if (decided?.status === 'answered') {
        content = answerOf(deps, call, decided.answer);
      } else if (decided?.status === 'denied' || decided?.status === 'expired') {
        recordDeniedCall(call, decided.status);
        deps.recorder.recordDenied(call.name);
        content = JSON.stringify({
          error:
            decided.status === 'denied'
              ? 'The user denied this call. Do not try it again; answer without it.'
              : 'The user did not approve this call in time. Answer without it.',
        });
      } else if (seen === 2) {
        content =
          'You already made this exact call in this turn; its result is above. Use it, or try something else.';
      } else {
        content = await withSpan(
          `execute_tool ${byName.has(call.name) ? call.name : UNKNOWN_TOOL}`,
          { attributes: executeToolAttributes(call) },
          (span) => callTool(deps, run, tool, call, deadline, span),
        );
      }
      state.messages.push({ role: 'tool', toolCallId: call.id, content });
    }

    if (state.steps >= settings.maxSteps) {
      tripped(deps, 'max_steps', { limit: settings.maxSteps });
      return stop(
        'max_steps',
        `I stopped after ${settings.maxSteps} steps without finishing (that is the limit for one message). Ask me to go on if you want more.`,
      );
    }
    const remaining = deadline - Date.now();
    if (remaining < 1_000) {
      tripped(deps, 'deadline', { limitMs: settings.turnDeadlineMs });
      return stop(
        'deadline',
        `I ran out of time for this message (the limit is ${Math.round(settings.turnDeadlineMs / 1_000)} s) before finishing.`,
      );
    }
    const exhausted = await deps.budget?.exhausted();
    if (exhausted) {
      tripped(deps, 'budget', { reason: exhausted });
      return stop('budget', exhausted);
    }
    stopIfCancelled(deps);
    state.steps += 1;
    const answer = await callModel(deps, run, state.messages, definitions, remaining);
    await deps.budget?.charge(answer);
    state.usage.inputTokens += answer.usage.inputTokens;
    state.usage.outputTokens += answer.usage.outputTokens;
    state.costUsd += answer.costUsd;
    state.last = { content: answer.content, provider: answer.provider, model: answer.model };
    if (answer.toolCalls.length === 0) return result(answer.content);
    if (state.usage.outputTokens >= settings.turnOutputTokenCap) {
      tripped(deps, 'output_tokens', { limit: settings.turnOutputTokenCap });
      return stop(
        'output_tokens',
        `I stopped because this answer reached the limit of ${settings.turnOutputTokenCap} output tokens for one message.`,
      );
    }
    state.messages.push({
      role: 'assistant',
      content: answer.content,
      toolCalls: answer.toolCalls,
    });
    state.pending = [...answer.toolCalls];
  }
}

// A tool may weigh a call by its arguments (a memory write is risky only for a skill's file);
// the arguments are the model's, unchecked, so riskOf must not trust their shape.
function riskOf(tool: AgentTool, call: ToolCall): ToolRisk {
  return tool.riskOf?.(call.arguments) ?? tool.risk;
}

// The user's answer to a tool's question is that call's result: the tool never runs. Recorded as
// the call's step, so the run shows what was asked and what came back.
function answerOf(deps: LoopDeps, call: ToolCall, answer: string | null): string {
  const content = JSON.stringify(answer === null ? { answer: null, expired: true } : { answer });
  deps.recorder.record({
    kind: 'tool',
    name: call.name,
    status: 'ok',
    input: call.arguments,
    output: { result: cap(content, 500) },
    startedAt: new Date(),
    durationMs: 0,
  });
  return content;
}

function askApproval(call: ToolCall): string {
  return `I'd like to run ${call.name} with ${JSON.stringify(call.arguments)}. It needs your approval: approve or deny it, and I'll go on.`;
}

async function callModel(
  deps: LoopDeps,
  run: LoopRun,
  messages: ChatMessage[],
  tools: AgentTool['definition'][],
  remainingMs: number,
): Promise<ModelChatResponse> {
  const startedAt = new Date();
  const timeoutMs = Math.min(deps.settings.modelCallTimeoutMs, remainingMs);
  const requestId = randomUUID();
  const cancel = () =>
    deps.bus.publish(modelChatCancel.subject, modelChatCancel.payload, { requestId });
  deps.signal?.addEventListener('abort', cancel, { once: true });
  const request = {
    purpose: 'chat' as const,
    userId: run.userId,
    requestId,
    messages,
    ...(tools.length > 0 ? { tools } : {}),
    maxTokens: deps.settings.maxOutputTokens,
    deadlineMs: Math.max(timeoutMs - 500, 100),
  };
  let response: ModelChatResponse;
  try {
    response = deps.isStreamed
      ? await deps.bus.requestStreaming(
          modelChat,
          request,
          ModelChatChunk,
          (chunk) => {
            if (chunk.type === 'delta') {
              deps.emit({ type: 'delta', turnId: run.turnId, runId: run.id, text: chunk.text });
            }
          },
          { timeoutMs },
        )
      : await deps.bus.request(modelChat, request, { timeoutMs });
  } catch (error) {
    deps.recorder.record({
      kind: 'model',
      name: 'chat',
      status: 'error',
      input: { messages: messages.length, tools: tools.length },
      error: error instanceof Error ? error.message : String(error),
      startedAt,
      durationMs: Date.now() - startedAt.getTime(),
    });
    stopIfCancelled(deps);
    throw new ModelFailure(error);
  } finally {
    deps.signal?.removeEventListener('abort', cancel);
  }
  deps.recorder.record({
    kind: 'model',
    name: `${response.provider}/${response.model}`,
    status: 'ok',
    input: { messages: messages.length, tools: tools.length },
    output: {
      finishReason: response.finishReason,
      toolCalls: response.toolCalls.map((call) => call.name),
      characters: response.content.length,
      attempts: response.attempts,
    },
    inputTokens: response.usage.inputTokens,
    outputTokens: response.usage.outputTokens,
    costUsd: response.costUsd,
    startedAt,
    durationMs: Date.now() - startedAt.getTime(),
  });
  return response;
}

// One tool call, whatever happens: the model gets a result or an error it can act on, never an
// exception. Results are data from outside, so they are capped and passed on as text.
// The step's and the span's name for a call of a tool that does not exist.
const UNKNOWN_TOOL = 'unknown';

async function callTool(
  deps: LoopDeps,
  run: LoopRun,
  tool: AgentTool | undefined,
  call: ToolCall,
  deadline: number,
  span: Span,
): Promise<string> {
  const startedAt = new Date();
  deps.emit({
    type: 'tool_started',
    turnId: run.turnId,
    runId: run.id,
    toolCallId: call.id,
    name: call.name,
    arguments: call.arguments,
  });
  const toolTimeoutMs = tool?.timeoutMs ?? deps.settings.toolTimeoutMs;
  const timeoutMs = Math.max(Math.min(toolTimeoutMs, deadline - Date.now()), 1);
  const context: ToolContext = {
    userId: run.userId,
    conversationId: run.conversationId,
    runId: run.id,
    turnId: run.turnId,
    missionId: run.missionId,
    userMessageId: run.userMessageId,
    timeZone: run.timeZone,
    timeoutMs,
  };
  let content: string;
  let error: string | undefined;
  // Kept whole beside the capped result: the chat and the run view show them (a screenshot the
  // tool took, the files run_code wrote).
  let screenshot: ToolScreenshot | undefined;
  let files: ToolFile[] | undefined;
  try {
    if (!tool) throw new ToolInputError(`there is no tool named ${call.name}`);
    const result = await withTimeout(tool.run(call.arguments, context), timeoutMs, call.name);
    content = cap(JSON.stringify(result ?? null), deps.settings.toolResultMaxChars);
    screenshot = screenshotOf(result);
    files = toolFilesOf(result);
  } catch (failure) {
    error = failure instanceof Error ? failure.message : String(failure);
    const isInputError = failure instanceof ToolInputError;
    const prefix = isInputError ? 'invalid arguments' : 'the tool failed';
    content = JSON.stringify({ error: `${prefix}: ${error}` });
    endToolSpan(span, 'error', isInputError ? 'invalid_arguments' : 'tool_failed');
  }
  if (error === undefined) endToolSpan(span, 'ok');
  const durationMs = Date.now() - startedAt.getTime();
  deps.recorder.record({
    kind: 'tool',
    // The name is the model's to choose: one that names no tool is recorded as `unknown`, so
    // that it cannot add label values to the tool metrics (nor span names to Tempo's span
    // metrics) without bound; what it asked for stays in the step's input.
    name: tool ? call.name : UNKNOWN_TOOL,
    status: error === undefined ? 'ok' : 'error',
    input: tool
      ? call.arguments
      : { requestedTool: cap(call.name, 200), arguments: call.arguments },
    output: {
      result: cap(content, 500),
      ...(screenshot ? { screenshot } : {}),
      ...(files ? { files } : {}),
    },
    ...(error === undefined ? {} : { error }),
    startedAt,
    durationMs,
  });
  deps.emit({
    type: 'tool_finished',
    turnId: run.turnId,
    runId: run.id,
    toolCallId: call.id,
    name: call.name,
    isError: error !== undefined,
    durationMs,
    ...(screenshot ? { screenshot } : {}),
    ...(files ? { files } : {}),
  });
  return content;
}

// A call the user denied, or did not approve in time, never runs: its span says so, at once.
function recordDeniedCall(call: ToolCall, decided: 'denied' | 'expired'): void {
  void withSpan(
    `execute_tool ${call.name}`,
    { attributes: executeToolAttributes(call) },
    async (span) => endToolSpan(span, 'denied', decided),
  );
}

function stopIfCancelled(deps: LoopDeps): void {
  if (!deps.signal?.aborted) return;
  tripped(deps, 'cancelled', {});
  throw new TurnCancelled();
}

function tripped(deps: LoopDeps, name: string, output: Record<string, unknown>): void {
  deps.recorder.record({
    kind: 'guardrail',
    name,
    status: 'error',
    output,
    startedAt: new Date(),
    durationMs: 0,
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number, name: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${name} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function cap(text: string, max: number): string {
  return text.length <= max
    ? text
    : `${text.slice(0, max)}… [${text.length - max} more characters cut]`;
}

// Same arguments in another key order are the same call.
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => a.localeCompare(b));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonical(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

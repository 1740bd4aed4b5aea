import type { MemoryRecallResponse } from '@jarvis/contracts';
import { GEN_AI, JARVIS, type Span, SpanStatusCode } from '@jarvis/telemetry';

// The name an agent span gives for the whole assistant (gen_ai.agent.name).
const AGENT_NAME = 'jarvis';
// Where recall reads from (gen_ai.data_source.id).
const MEMORY_DATA_SOURCE = 'jarvis-memory';

export type ToolStatus = 'ok' | 'error' | 'denied';

// A mission's task knows its run only once inside its span (the run records the span's trace).
type AgentRun = { id?: string; userId: string; conversationId: string };

// invoke_agent: a turn, or a mission's task, from its start to its outcome.
export function invokeAgentAttributes(
  run: AgentRun,
  mission?: { missionId: string; taskId: string },
): Record<string, string> {
  return {
    [GEN_AI.operation]: 'invoke_agent',
    [GEN_AI.agentName]: AGENT_NAME,
    [GEN_AI.conversationId]: run.conversationId,
    ...(run.id === undefined ? {} : { [JARVIS.runId]: run.id }),
    [JARVIS.userId]: run.userId,
    ...(mission ? { [JARVIS.missionId]: mission.missionId, [JARVIS.taskId]: mission.taskId } : {}),
  };
}

// execute_tool <name>: one tool call the model asked for.
export function executeToolAttributes(call: { id: string; name: string }): Record<string, string> {
  return {
    [GEN_AI.operation]: 'execute_tool',
    [GEN_AI.toolName]: call.name,
    [GEN_AI.toolCallId]: call.id,
    [GEN_AI.toolType]: 'function',
  };
}

// A call that failed or was not allowed to run shows as an error in trace views, with why.
export function endToolSpan(span: Span, status: ToolStatus, errorType?: string): void {
  span.setAttribute(JARVIS.toolStatus, status);
  if (status === 'ok') return;
  span.setAttribute(GEN_AI.errorType, errorType ?? status);
  span.setStatus({ code: SpanStatusCode.ERROR });
}

export const RETRIEVAL_ATTRIBUTES = {
  [GEN_AI.operation]: 'retrieval',
  [GEN_AI.dataSourceId]: MEMORY_DATA_SOURCE,
};

// How much recall brought back: relevant items in all (jarvis.retrieval.items) and by kind
// (jarvis.retrieval.relevant.<kind>), and the profile facts, summaries and recent messages.
export function recordRetrieval(span: Span, recall: MemoryRecallResponse): void {
  recordFound(span, recall.relevant);
  span.setAttributes({
    'jarvis.retrieval.profile': recall.profile.length,
    'jarvis.retrieval.summaries': recall.summaries.length,
    'jarvis.retrieval.recent': recall.recent.length,
  });
}

// What recall found among the relevant items, by kind.
function recordFound(span: Span, items: { kind: string }[]): void {
  const byKind = new Map<string, number>();
  for (const item of items) byKind.set(item.kind, (byKind.get(item.kind) ?? 0) + 1);
  span.setAttributes({
    [JARVIS.retrievalItems]: items.length,
    ...Object.fromEntries(
      [...byKind].map(([kind, count]) => [`jarvis.retrieval.relevant.${kind}`, count]),
    ),
  });
}

// A turn that ends without its answer: the span says so, with the failure's code.
export function markAgentFailed(span: Span, code: string): void {
  span.setAttribute(GEN_AI.errorType, code);
  span.setStatus({ code: SpanStatusCode.ERROR });
}

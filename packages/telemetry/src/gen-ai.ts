// The OpenTelemetry GenAI semantic conventions this code follows, pinned: the names below are
// those of this version (1.37 is the first with gen_ai.provider.name), and every span says so
// through its tracer's schema URL, so a backend can tell which spelling it reads.
export const GEN_AI_SEMCONV_VERSION = '1.37.0';

export const GEN_AI_SCHEMA_URL = `https://opentelemetry.io/schemas/${GEN_AI_SEMCONV_VERSION}`;

// Span attribute names as the conventions spell them, declared once for every service, so
// Grafana's and other tools' GenAI views understand the traces.
export const GEN_AI = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  finishReasons: 'gen_ai.response.finish_reasons',
  maxTokens: 'gen_ai.request.max_tokens',
  temperature: 'gen_ai.request.temperature',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  agentName: 'gen_ai.agent.name',
  conversationId: 'gen_ai.conversation.id',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  dataSourceId: 'gen_ai.data_source.id',
  errorType: 'error.type',
} as const;

// What the conventions have no name for: Jarvis's own attributes, under its own prefix.
export const JARVIS = {
  costUsd: 'jarvis.usage.cost_usd',
  runId: 'jarvis.run.id',
  userId: 'jarvis.user.id',
  missionId: 'jarvis.mission.id',
  taskId: 'jarvis.task.id',
  toolStatus: 'jarvis.tool.status',
  retrievalItems: 'jarvis.retrieval.items',
  scheduleId: 'jarvis.schedule.id',
  scheduleActionType: 'jarvis.schedule.action_type',
  scheduleLatenessMs: 'jarvis.schedule.lateness_ms',
} as const;

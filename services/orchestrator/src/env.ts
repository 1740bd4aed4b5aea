import { baseEnvShape, databaseEnvShape, parseEnv, redisEnvShape } from '@jarvis/service-kit';
import { z } from 'zod';

const Env = z.object({
  ...baseEnvShape,
  ...databaseEnvShape,
  ...redisEnvShape,
  // Port of /healthz, /readyz and /metrics.
  HTTP_PORT: z.coerce.number().int().min(0).max(65_535).default(8081),
  // A turn not acknowledged within this time is redelivered to another worker (its worker died).
  // Live workers extend it while they work, so it bounds crash recovery, not turn length.
  TURN_ACK_WAIT_MS: z.coerce.number().int().min(500).default(30_000),
  // How often the submissions a dying submit left unqueued are looked for, and how old one must
  // be to count as left (longer than a submit takes): its turn is then queued by the sweep.
  TURN_SUBMIT_SWEEP_MS: z.coerce.number().int().min(100).default(5_000),
  TURN_SUBMIT_STALE_MS: z.coerce.number().int().min(100).default(15_000),
  // Crash tests only: every submit exits the process at this step, as a crash there would.
  FAULT_EXIT_AFTER: z.enum(['message_stored', 'run_recorded']).optional(),
  // Attempts at one turn (starts, crashed ones included; waiting for its conversation is none)
  // before it is given up as failed. Also the deliveries of a mission step.
  TURN_MAX_DELIVER: z.coerce.number().int().min(1).default(5),
  // Turns this process works on at once (of different conversations).
  TURN_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(8),
  // Most tokens of context memory may fill per turn (profile, recalled items, summaries, recent
  // turns), in the tokens of the chat model expected to answer (model-gateway.route). A smaller
  // window gives less: what it has left after MODEL_MAX_OUTPUT_TOKENS, the tool definitions and
  // the prompt's fixed part. When the gateway cannot say, four characters count as a token.
  CONTEXT_TOKEN_BUDGET: z.coerce.number().int().min(500).default(8_000),
  // Most recent messages put in the prompt.
  HISTORY_LIMIT: z.coerce.number().int().min(1).max(500).default(50),
  // Longest wait for one model call, including the model gateway's own retries.
  MODEL_CALL_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(180_000),
  // Guardrails of the tool loop; when one trips, the user is told which.
  // Model calls per turn (each may ask for tools).
  MAX_STEPS_PER_TURN: z.coerce.number().int().min(1).max(100).default(8),
  // Longest one tool call may take, unless the tool declares a time of its own (run_code declares
  // its sandbox's wall time and more); the turn's deadline cuts both.
  TOOL_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  // Longest a whole turn may take, every model and tool call included.
  TURN_DEADLINE_MS: z.coerce.number().int().min(1_000).default(300_000),
  // Characters of one tool result shown to the model.
  TOOL_RESULT_MAX_CHARS: z.coerce.number().int().min(200).default(8_000),
  // Output tokens of one model call (kept free of the context in the model's window), and of all
  // the calls of one turn.
  MODEL_MAX_OUTPUT_TOKENS: z.coerce.number().int().min(16).max(64_000).default(4_096),
  TURN_OUTPUT_TOKEN_CAP: z.coerce.number().int().min(16).default(16_000),
  // Tools that wait for the user's approval before they run (comma-separated names; `none`
  // for none: an empty value means "not set", as compose passes a variable unset in .env).
  APPROVAL_TOOLS: z
    .string()
    .default('memory_delete,forget')
    .transform(
      (value) =>
        new Set(
          value
            .split(',')
            .map((name) => name.trim())
            .filter((name) => name !== '' && name !== 'none'),
        ),
    ),
  // How often the tools service's list of tools is asked for again (tools.list).
  TOOLS_REFRESH_MS: z.coerce.number().int().min(100).default(60_000),
  // How long an approval waits for its user; then the run goes on without the call.
  APPROVAL_TTL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(24 * 3600_000),
  // How often expired approvals, and mission questions, are looked for.
  APPROVAL_SWEEP_MS: z.coerce.number().int().min(100).default(10_000),
  // Missions: the caps of one mission unless it sets its own (planning, every task and the
  // report together), how many tasks this process runs at once, and each task's tool loop.
  MISSION_MAX_TOKENS: z.coerce.number().int().min(1_000).default(200_000),
  MISSION_MAX_COST_USD: z.coerce.number().positive().default(2),
  MISSION_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(3),
  MISSION_TASK_MAX_STEPS: z.coerce.number().int().min(1).max(100).default(12),
  MISSION_TASK_DEADLINE_MS: z.coerce.number().int().min(1_000).default(600_000),
  // How long a mission task's question (ask_user) waits for its user; then the task goes on
  // without an answer. Looked for as often as expired approvals (APPROVAL_SWEEP_MS).
  MISSION_QUESTION_TTL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(24 * 3600_000),
});
export type Env = z.infer<typeof Env>;

export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  return parseEnv(Env, source);
}

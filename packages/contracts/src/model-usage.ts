import { z } from 'zod';
import { Id } from './common';
import { defineEvent, defineRpc } from './define';

// Token and cost accounting of model calls. Every call the model gateway makes is one usage event,
// sent on JetStream with the others of its batch; the gateway rolls the events up in Postgres per
// user, model, purpose and UTC day, and keeps today's totals in Redis to enforce the per-user
// budgets.

// What the call was for: the chat purposes, and embeddings (memory indexing, search).
export const UsagePurpose = z.enum(['chat', 'utility', 'embed']);
export type UsagePurpose = z.infer<typeof UsagePurpose>;

// The widest range one usage request may ask for, both ends included.
export const USAGE_RANGE_MAX_DAYS = 366;
// The range when none is given: the last 30 days, today included.
export const USAGE_RANGE_DEFAULT_DAYS = 30;

// JetStream stream (before the namespace prefix) that carries the usage events.
export const MODEL_USAGE_STREAM = 'model_usage';

const Timestamp = z.iso.datetime({ offset: true });
const TokenCount = z.number().int().nonnegative();
const CostUsd = z.number().nonnegative();
// A UTC calendar day, YYYY-MM-DD, of the years Postgres takes as text (not 0000).
export const UsageDay = z.iso
  .date()
  .refine((day) => !day.startsWith('0000'), 'year must be 0001-9999');

// One model call, published once it has answered. `id` is the call's requestId: the rollup
// counts each id once, however often the event is delivered.
export const ModelUsageEvent = z.object({
  id: Id,
  // Whose budget paid; system work without a user is accounted under no one.
  userId: Id.optional(),
  provider: z.string().min(1).max(200),
  model: z.string().min(1).max(200),
  purpose: UsagePurpose,
  inputTokens: TokenCount,
  outputTokens: TokenCount,
  costUsd: CostUsd,
  // When the call answered; its UTC day is the day the usage counts for.
  at: Timestamp,
});
export type ModelUsageEvent = z.input<typeof ModelUsageEvent>;

// Most events one stream message carries: about 150 KB, well inside NATS's 1 MB payload limit.
export const USAGE_BATCH_MAX = 500;

// The calls the meter sends together (those that answered within 20 ms of each other): one
// stream message and one rollup statement for all of them, instead of one each.
export const ModelUsageBatch = z.object({
  events: z.array(ModelUsageEvent).min(1).max(USAGE_BATCH_MAX),
});
export type ModelUsageBatch = z.input<typeof ModelUsageBatch>;

// A message of the usage stream: a batch, or a single event, which is what gateways published
// before batches (a stream may still hold some of those after an upgrade).
export const ModelUsageRecorded = z.union([ModelUsageBatch, ModelUsageEvent]);
export type ModelUsageRecorded = z.infer<typeof ModelUsageRecorded>;
export const modelUsageRecorded = defineEvent('model-gateway.usage.recorded', ModelUsageRecorded);

// The events a message of the usage stream carries, whichever its shape.
export function usageEventsOf(message: ModelUsageRecorded): z.infer<typeof ModelUsageEvent>[] {
  return 'events' in message ? message.events : [message];
}

// What is wrong with a from/to range, if anything, and on which side. Shared by the schemas
// below and the service, which checks again once it has filled in the defaults.
export function findUsageRangeProblem(
  from: string,
  to: string,
): { field: 'from' | 'to'; message: string } | undefined {
  if (from > to) return { field: 'to', message: 'must not be before from' };
  const days = (Date.parse(to) - Date.parse(from)) / 86_400_000 + 1;
  if (days > USAGE_RANGE_MAX_DAYS) {
    return { field: 'from', message: `the range may cover at most ${USAGE_RANGE_MAX_DAYS} days` };
  }
  return undefined;
}

const rangeFields = {
  // First day, UTC; default: USAGE_RANGE_DEFAULT_DAYS - 1 days before `to`.
  from: UsageDay.optional(),
  // Last day, UTC, included; default: today.
  to: UsageDay.optional(),
};

function checkRange(
  range: { from?: string | undefined; to?: string | undefined },
  ctx: z.RefinementCtx,
): void {
  if (range.from === undefined || range.to === undefined) return;
  const problem = findUsageRangeProblem(range.from, range.to);
  if (problem) ctx.addIssue({ code: 'custom', message: problem.message, path: [problem.field] });
}

export const UsageTotals = z.object({
  inputTokens: TokenCount,
  outputTokens: TokenCount,
  costUsd: CostUsd,
  requests: z.number().int().nonnegative(),
});
export type UsageTotals = z.infer<typeof UsageTotals>;

// One user's usage of one model for one purpose on one UTC day.
export const UsageDayRow = UsageTotals.extend({
  day: UsageDay,
  provider: z.string(),
  model: z.string(),
  purpose: UsagePurpose,
});
export type UsageDayRow = z.infer<typeof UsageDayRow>;

// model-gateway.usage: a user's usage, its limits and what is left of them today.
export const ModelUsageRequest = z.object({ userId: Id, ...rangeFields }).superRefine(checkRange);
export type ModelUsageRequest = z.input<typeof ModelUsageRequest>;

export const ModelUsageResponse = z.object({
  from: UsageDay,
  to: UsageDay,
  // Rolled up from the usage events (a moment behind the calls), newest day first.
  days: z.array(UsageDayRow),
  // Today's totals as the budgets see them, live.
  today: UsageTotals.extend({ day: UsageDay }),
  // null: no limit.
  limits: z.object({
    dailyTokens: z.number().int().positive().nullable(),
    dailyCostUsd: z.number().positive().nullable(),
    requestsPerMinute: z.number().int().positive().nullable(),
  }),
  // What is left today (and of the request rate, right now); null: no limit.
  remaining: z.object({
    dailyTokens: z.number().int().nonnegative().nullable(),
    dailyCostUsd: z.number().nonnegative().nullable(),
    requestsThisMinute: z.number().int().nonnegative().nullable(),
  }),
  // When the daily budgets start afresh: the next UTC midnight.
  resetsAt: Timestamp,
});
export type ModelUsageResponse = z.infer<typeof ModelUsageResponse>;

export const modelUsage = defineRpc('model-gateway.usage', ModelUsageRequest, ModelUsageResponse);

// HTTP: GET /v1/usage?from=YYYY-MM-DD&to=YYYY-MM-DD, always for the key's user.
export const UsageQuery = z.strictObject(rangeFields).superRefine(checkRange);

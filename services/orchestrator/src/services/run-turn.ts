import { randomUUID } from 'node:crypto';
import { type Bus, BusError, type Outcome, publishUserEvent, publishWork } from '@jarvis/bus';
import {
  type ErrorInfo,
  EXTRACTION_RECALLED_MAX,
  extractionRequested,
  memoryAppend,
  memoryRecall,
  type RoutedModel,
  type TurnEvent,
  type TurnRequested,
  USER_EVENT_TEXT_MAX_CHARS,
} from '@jarvis/contracts';
import { type Pool, withTransaction } from '@jarvis/db';
import { type Logger, type Span, withSpan } from '@jarvis/telemetry';
import type { Redis } from 'ioredis';
import { type ConversationLock, tryLockConversation } from '../conversation-lock';
import {
  countRunApprovals,
  findApproval,
  findLatestApproval,
  insertApproval,
  publicApproval,
  type StoredApproval,
} from '../repositories/approvals-repository';
import {
  findTurnToRun,
  markRunCompleted,
  markRunFailed,
  markRunStarted,
  markRunWaiting,
  type Run,
} from '../repositories/runs-repository';
import { recordRunTotals } from '../repositories/steps-repository';
import type { AgentTool } from '../tools/agent-tool';
import { loadActiveState } from './active-state';
import {
  createStepRecorder,
  type LoopDeps,
  type LoopResult,
  type LoopSettings,
  LoopStateSchema,
  ModelFailure,
  runAgentLoop,
  type StepRecorder,
  TurnCancelled,
} from './agent-loop';
import type { AgentMetrics, TurnMeter } from './agent-metrics';
import {
  invokeAgentAttributes,
  markAgentFailed,
  RETRIEVAL_ATTRIBUTES,
  recordRetrieval,
} from './agent-spans';
import { buildPrompt } from './build-prompt';
import type { TurnCancellation, TurnCancellations } from './cancel-turn';
import type { ChatRoute } from './chat-route';
import { describeContext, fitContext, planContextBudget } from './context-budget';
import { announce, approvalRequest, describeOutcome } from './turn-outcome';

export type TurnDeps = {
  bus: Bus;
  pool: Pool;
  redis: Redis;
  logger: Logger;
  historyLimit: number;
  // Most tokens memory may fill with profile, recalled items, summaries and recent messages;
  // the answering model's window may leave less (context-budget.ts).
  contextTokenBudget: number;
  // Lease of the conversation lock; renewed while the turn runs.
  lockLeaseMs: number;
  // Attempts (starts, crashes included) after which a turn that keeps failing is given up.
  maxAttempts: number;
  tools: AgentTool[];
  loop: LoopSettings;
  // How long a risky tool call waits for its user before it counts as not approved.
  approvalTtlMs: number;
  // Tells a turn this process runs that its user cancelled it, through whichever replica.
  cancellations: TurnCancellations;
  // Which model is expected to answer, which the context is sized for.
  chatRoute: ChatRoute;
  // Counts and times turns, their tool calls, guardrails and tokens; none in tests that do not
  // look at them.
  metrics?: AgentMetrics;
  // Takes a message as the answer to a mission's question waiting in its conversation, and
  // answers the note the turn replies with instead of a model's answer; undefined when no
  // question waits there (missions/mission-questions.ts). Once per turn: a turn run again gets
  // the same note, and its message answers no second question.
  answerPendingQuestion?: (
    run: { userId: string; conversationId: string; turnId: string },
    text: string,
  ) => Promise<string | undefined>;
};

// Another turn of the same conversation is running: look again shortly.
const LOCKED_RETRY_MS = 250;

export async function runTurn(
  deps: TurnDeps,
  turn: TurnRequested,
  deliveryCount: number,
): Promise<Outcome> {
  // Which model will answer is asked at once (when not known already), beside loading and
  // starting the run: the answer is there when the turn sizes its context. A turn that ends
  // early, or resumes (its context is in its saved state), never reads it.
  const expected = deps.chatRoute.expectModel();
  expected.catch(() => {});
  const { run, lock, isBehindEarlierTurn } = await findRunAndLock(deps, turn);
  // If Redis is gone the lease simply expires; the turn's outcome stands either way.
  const letGo = () => lock?.release().catch(() => {});
  if (!run) {
    await letGo();
    deps.logger.error({ turnId: turn.turnId }, 'turn has no run; dropping');
    return { type: 'drop' };
  }
  const { approval, latest } = await readApprovals(deps, turn, run).catch(
    async (error: unknown) => {
      await letGo();
      throw error;
    },
  );
  // A resume goes on only from the approval the run last paused on; anything else (a turn that
  // already finished or paused, a stale resume) only needs its outcome announced again.
  const canResume =
    approval !== undefined &&
    approval.status !== 'pending' &&
    latest?.id === approval.id &&
    (run.status === 'waiting_approval' || run.status === 'running');
  const isDone =
    run.status === 'completed' || run.status === 'failed' || run.status === 'waiting_approval';
  if (turn.approvalId ? !canResume : isDone) {
    await letGo();
    announce(deps.bus, await describeOutcome(deps.bus, run, latest));
    return { type: 'ack' };
  }
  if (!lock) return { type: 'retry', delayMs: LOCKED_RETRY_MS };
  // Messages sent at once are answered in the order they were stored, each with the context up
  // to its own: this one waits for the earlier ones (a resume goes on: its turn came before).
  if (isBehindEarlierTurn && !turn.approvalId) {
    await letGo();
    return { type: 'retry', delayMs: LOCKED_RETRY_MS };
  }
  return withSpan('invoke_agent', { attributes: invokeAgentAttributes(run) }, (span) =>
    workOnTurn(
      deps,
      { turn, run, approval, canResume, lock, letGo, expected },
      deliveryCount,
      span,
    ),
  );
}

// What a turn holds once it may run: its run, the approval it resumes from, its lock.
type TurnInHand = {
  turn: TurnRequested;
  run: Run;
  approval: StoredApproval | undefined;
  canResume: boolean;
  lock: ConversationLock;
  letGo: () => Promise<void> | undefined;
  expected: Promise<RoutedModel | undefined>;
};

// The turn itself, inside its invoke_agent span: answered (or resumed), or failed.
async function workOnTurn(
  deps: TurnDeps,
  { turn, run, approval, canResume, lock, letGo, expected }: TurnInHand,
  deliveryCount: number,
  span: Span,
): Promise<Outcome> {
  // A reply, or the note that takes its place, is stored under this key: never two.
  const replyKey =
    approval && canResume ? `approval:${approval.id}:reply` : `turn:${run.turnId}:reply`;
  const renewal = setInterval(
    () => {
      lock.renew().then(
        (isHeld) => {
          if (!isHeld) deps.logger.warn({ turnId: run.turnId }, 'conversation lock lease lost');
        },
        (error: unknown) => deps.logger.warn({ err: error }, 'conversation lock renewal failed'),
      );
    },
    Math.max(deps.lockLeaseMs / 3, 100),
  );
  let cancellation: TurnCancellation | undefined;
  let attempt: number | undefined;
  let recorder: StepRecorder | undefined;
  const meter = deps.metrics?.startTurn(run.scheduleId ? 'scheduled' : 'chat', run.userId);
  try {
    // Attempts that died with their process (a crash each time) end here, before another.
    if (await isOutOfAttempts(deps, run, run.attempts)) {
      throw new BusError('internal', `the turn failed ${run.attempts} times`);
    }
    // Side by side: a cancel found now stops the run at its first step, as one that comes later.
    const [watched, started] = await Promise.allSettled([
      deps.cancellations.watch(run.turnId),
      markRunStarted(deps.pool, run.id),
    ]);
    cancellation = watched.status === 'fulfilled' ? watched.value : undefined;
    attempt = started.status === 'fulfilled' ? started.value : undefined;
    if (watched.status === 'rejected') throw watched.reason;
    if (started.status === 'rejected') throw started.reason;
    const loop = loopDeps(
      deps,
      started.value,
      run,
      watched.value.signal,
      turn.stream === true,
      meter,
    );
    recorder = loop.recorder;
    const { event, queued } =
      approval && canResume
        ? await resume(deps, loop, run, approval, replyKey)
        : await answer(deps, loop, run, turn.message, replyKey, expected);
    announce(deps.bus, event);
    meter?.end(event.type === 'done' && event.approval ? 'paused' : 'completed');
    // The turn is acked once what it leaves behind is queued, not before.
    await queued;
    return { type: 'ack' };
  } catch (error) {
    const info = describeFailure(error);
    markAgentFailed(span, info.code);
    // Model errors are final (the model gateway already retried and fell back), and so is the
    // user's cancel; anything else is worth another attempt until the last one. A failure
    // before the turn started (Redis or the database away) is retried until they are back.
    const isFinal =
      error instanceof ModelFailure ||
      error instanceof TurnCancelled ||
      (await isOutOfAttempts(deps, run, attempt ?? run.attempts));
    deps.logger.warn({ turnId: run.turnId, err: error, isFinal }, 'turn failed');
    // The steps that led here are stored whatever happens next; one that cannot be is no
    // reason to keep the failure from being told.
    await recorder?.flush().catch(() => {});
    if (!isFinal) return { type: 'retry', delayMs: Math.min(1_000 * deliveryCount, 10_000) };
    meter?.end(error instanceof TurnCancelled ? 'cancelled' : 'failed');
    await announceScheduleResult(deps, run, 'failed', info.message);
    await markRunFailed(deps.pool, run.id, info);
    await storeFailureNote(deps, run, info, replyKey);
    announce(deps.bus, {
      type: 'failed',
      turnId: run.turnId,
      runId: run.id,
      conversationId: run.conversationId,
      error: info,
    });
    return { type: 'ack' };
  } finally {
    cancellation?.release();
    clearInterval(renewal);
    await letGo();
  }
}

// The run, and its conversation's lock when free, read and taken side by side: the turn's message
// names the run's conversation (its publishers take it from the run). A message that did not
// would have the lock taken again, on the run's own conversation.
async function findRunAndLock(
  deps: TurnDeps,
  turn: TurnRequested,
): Promise<{
  run: Run | undefined;
  lock: ConversationLock | undefined;
  isBehindEarlierTurn: boolean;
}> {
  const lockFor = (conversationId: string) =>
    tryLockConversation(deps.redis, deps.bus.namespace, conversationId, deps.lockLeaseMs);
  const [found, locked] = await Promise.allSettled([
    findTurnToRun(deps.pool, turn.userId, turn.turnId),
    lockFor(turn.conversationId),
  ]);
  if (found.status === 'rejected') {
    if (locked.status === 'fulfilled') await locked.value?.release().catch(() => {});
    throw found.reason;
  }
  if (locked.status === 'rejected') throw locked.reason;
  const lock = locked.value;
  const run = found.value?.run;
  const isBehindEarlierTurn = found.value?.isBehindEarlierTurn ?? false;
  if (!run || run.conversationId === turn.conversationId) return { run, lock, isBehindEarlierTurn };
  deps.logger.error(
    { turnId: turn.turnId },
    "turn message names another conversation than its run's",
  );
  await lock?.release();
  return { run, lock: await lockFor(run.conversationId), isBehindEarlierTurn };
}

// The approval a resume names, and the one the run last paused on: needed only to resume, or to
// announce a run that waits for an approval.
async function readApprovals(
  deps: TurnDeps,
  turn: TurnRequested,
  run: Run,
): Promise<{ approval: StoredApproval | undefined; latest: StoredApproval | undefined }> {
  const [approval, latest] = await Promise.all([
    turn.approvalId ? findApproval(deps.pool, run.userId, turn.approvalId) : undefined,
    turn.approvalId || run.status === 'waiting_approval'
      ? findLatestApproval(deps.pool, run.id)
      : undefined,
  ]);
  return { approval, latest };
}

// A run starts once per delivery that reaches it and once more per approval it resumes from.
async function isOutOfAttempts(deps: TurnDeps, run: Run, attempts: number): Promise<boolean> {
  if (attempts < deps.maxAttempts) return false;
  return attempts >= deps.maxAttempts + (await countRunApprovals(deps.pool, run.id));
}

async function answer(
  deps: TurnDeps,
  loop: LoopDeps,
  run: Run,
  message: string | undefined,
  replyKey: string,
  expected: Promise<RoutedModel | undefined>,
): Promise<Finished> {
  // Only the user's own message answers a mission's question: a scheduled prompt sent into the
  // same conversation is the scheduler's words, not theirs.
  const passedOn =
    message === undefined || run.scheduleId
      ? undefined
      : await deps.answerPendingQuestion?.(run, message);
  if (passedOn !== undefined) {
    return finish(deps, loop, run, noteResult(passedOn), replyKey, { costUsd: 0 }, []);
  }
  const recallStarted = new Date();
  // Read beside recall: it never fails, and gives up after 500 ms (active-state.ts).
  const active = loadActiveState(deps, run.userId, recallStarted);
  const budget = await planContextBudget(
    deps,
    await expected,
    recallStarted,
    run.timeZone ?? 'UTC',
  );
  const recall = await withSpan('retrieval', { attributes: RETRIEVAL_ATTRIBUTES }, async (span) => {
    const recalled = await deps.bus.request(memoryRecall, {
      userId: run.userId,
      conversationId: run.conversationId,
      messageId: run.userMessageId,
      query: message,
      tokenLimit: budget.tokenBudget,
      tokenizer: budget.tokenizer,
      recentLimit: deps.historyLimit,
    });
    recordRetrieval(span, recalled);
    return recalled;
  });
  const fitted = fitContext(recall, budget.tokenBudget, {
    active: await active,
    count: budget.count,
  });
  const context = describeContext(budget, fitted, run.userMessageId);
  loop.recorder.record({
    kind: 'recall',
    name: 'memory.recall',
    status: 'ok',
    output: {
      ...context,
      items: fitted.relevant.map((item) => ({ kind: item.kind, id: item.id })),
    },
    startedAt: recallStarted,
    durationMs: Date.now() - recallStarted.getTime(),
  });
  const result = await runAgentLoop(loop, run, {
    prompt: buildPrompt(fitted, new Date(), run.timeZone),
  });
  // The idempotency key makes a retried turn find the reply a crashed attempt already stored,
  // so a conversation never shows two replies to one message.
  return finish(deps, loop, run, result, replyKey, { context, costUsd: result.costUsd }, [
    ...fitted.relevant.map((item) => item.id),
    ...fitted.profile.map((fact) => fact.id),
  ]);
}

// A reply the turn gives without a model: no tokens, no cost.
function noteResult(content: string): LoopResult {
  return {
    content,
    provider: 'none',
    model: 'none',
    usage: { inputTokens: 0, outputTokens: 0 },
    costUsd: 0,
  };
}

// The run goes on from where it paused, with the user's decision on the call it paused on.
async function resume(
  deps: TurnDeps,
  loop: LoopDeps,
  run: Run,
  approval: StoredApproval,
  replyKey: string,
): Promise<Finished> {
  const state = LoopStateSchema.parse(approval.loopState);
  const result = await runAgentLoop(loop, run, {
    state,
    // A pending approval never gets here (runTurn checks); counted as not approved if it did.
    decision: {
      toolCallId: approval.toolCallId,
      status: approval.status === 'pending' ? 'expired' : approval.status,
    },
  });
  return finish(deps, loop, run, result, replyKey, { costUsd: result.costUsd }, []);
}

function loopDeps(
  deps: TurnDeps,
  attempt: number,
  run: Run,
  signal: AbortSignal,
  isStreamed: boolean,
  meter: TurnMeter | undefined,
): LoopDeps {
  return {
    bus: deps.bus,
    tools: deps.tools,
    settings: deps.loop,
    recorder: createStepRecorder(deps.pool, { runId: run.id, userId: run.userId, attempt }, meter),
    emit: (event: TurnEvent) => announce(deps.bus, event),
    isStreamed,
    signal,
  };
}

// What a turn announces, and the fact extraction it queues, if any: the user need not wait for
// that queueing (a JetStream ack), only the turn's own ack does.
type Finished = { event: TurnEvent; queued?: Promise<void> };

// Stores the reply, the run's steps and totals; then the run is complete, or paused on an
// approval the reply asks for.
async function finish(
  deps: TurnDeps,
  loop: LoopDeps,
  run: Run,
  result: LoopResult,
  replyKey: string,
  totals: Parameters<typeof recordRunTotals>[2],
  recalledIds: string[],
): Promise<Finished> {
  const append = deps.bus.request(memoryAppend, {
    userId: run.userId,
    conversationId: run.conversationId,
    role: 'assistant',
    content: result.content,
    idempotencyKey: replyKey,
    metadata: { replyTo: run.userMessageId },
  });
  await settleAll([append, loop.recorder.flush(), recordRunTotals(deps.pool, run.id, totals)]);
  const { message } = await append;
  const completion = {
    replyMessageId: message.id,
    provider: result.provider,
    model: result.model,
    usage: result.usage,
  };
  const done = {
    type: 'done' as const,
    turnId: run.turnId,
    runId: run.id,
    conversationId: run.conversationId,
    reply: { id: message.id, role: 'assistant' as const, content: message.content },
    usage: result.usage,
  };
  const paused = result.paused;
  if (paused) {
    const approval = await withTransaction(deps.pool, async (db) => {
      const stored = await insertApproval(db, {
        id: randomUUID(),
        runId: run.id,
        turnId: run.turnId,
        userId: run.userId,
        conversationId: run.conversationId,
        toolCallId: paused.call.id,
        toolName: paused.call.name,
        arguments: paused.call.arguments,
        loopState: paused.state,
        ttlMs: deps.approvalTtlMs,
      });
      await markRunWaiting(db, run.id, completion);
      return stored;
    });
    await publishUserEvent(deps.bus, run.userId, `approval:${approval.id}:requested`, {
      type: 'approval_requested',
      occurredAt: approval.createdAt,
      approval: publicApproval(approval),
    });
    return { event: { ...done, approval: approvalRequest(approval) } };
  }
  // Extraction is keyed by the turn, so a retry after a crash between the two queues it once.
  // It never fails (requestExtraction logs instead), so a failed completion leaves nothing
  // unhandled behind it.
  const queued = requestExtraction(deps, run, message.id, recalledIds);
  await announceScheduleResult(deps, run, 'done', message.content);
  await markRunCompleted(deps.pool, run.id, completion);
  return { event: done, queued };
}

// A turn that a schedule's occurrence submitted tells the user how it ended, on their event
// stream, where their notification channels pick it up. Told before the run is marked ended: a
// crash in between ends the turn again, and the event's id keeps the stream from holding it
// twice (and the channels from getting it twice).
async function announceScheduleResult(
  deps: TurnDeps,
  run: Run,
  status: 'done' | 'failed',
  text: string,
): Promise<void> {
  if (!run.scheduleId) return;
  await publishUserEvent(deps.bus, run.userId, `schedule-result:${run.turnId}`, {
    type: 'schedule_result',
    occurredAt: new Date().toISOString(),
    scheduleId: run.scheduleId,
    turnId: run.turnId,
    conversationId: run.conversationId,
    status,
    text: cutEventText(text),
  });
}

// A reply or report as a user event carries it: whole up to USER_EVENT_TEXT_MAX_CHARS, cut
// with an ellipsis beyond.
export function cutEventText(text: string): string {
  if (text.length <= USER_EVENT_TEXT_MAX_CHARS) return text;
  return `${text.slice(0, USER_EVENT_TEXT_MAX_CHARS - 1)}…`;
}

// Fact extraction is a by-product of the turn: if it cannot be queued (the memory service has
// not created its stream yet, NATS hiccups), the user still gets the reply.
async function requestExtraction(
  deps: TurnDeps,
  run: Run,
  replyMessageId: string,
  recalledIds: string[],
): Promise<void> {
  try {
    await publishWork(
      deps.bus,
      extractionRequested,
      {
        userId: run.userId,
        conversationId: run.conversationId,
        runId: run.id,
        turnId: run.turnId,
        userMessageId: run.userMessageId,
        replyMessageId,
        recalledIds: [...new Set(recalledIds)].slice(0, EXTRACTION_RECALLED_MAX),
        // "until Friday" ends at the user's midnight, not UTC's.
        ...(run.timeZone ? { timeZone: run.timeZone } : {}),
      },
      `extract:${run.turnId}`,
    );
  } catch (error) {
    deps.logger.warn({ err: error, turnId: run.turnId }, 'could not queue fact extraction');
  }
}

// Promise.all, but it waits for every write to end before it throws the first failure: the
// failure path stores a note under the reply's key, which must not race the reply itself.
async function settleAll(writes: Promise<unknown>[]): Promise<void> {
  const outcomes = await Promise.allSettled(writes);
  const failed = outcomes.find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
}

// The conversation says why there is no answer, in the reply's place (same idempotency key,
// so a turn never has both). Best effort: memory itself may be what failed.
async function storeFailureNote(
  deps: TurnDeps,
  run: Run,
  info: ErrorInfo,
  replyKey: string,
): Promise<void> {
  try {
    await deps.bus.request(memoryAppend, {
      userId: run.userId,
      conversationId: run.conversationId,
      role: 'assistant',
      content: failureNote(info),
      idempotencyKey: replyKey,
      metadata: { error: info.code, replyTo: run.userMessageId },
    });
  } catch (error) {
    deps.logger.warn({ err: error, turnId: run.turnId }, 'could not store the failure note');
  }
}

function failureNote(info: ErrorInfo): string {
  switch (info.code) {
    case 'cancelled':
      return 'Stopped at your request.';
    case 'budget_exceeded':
      return `I can't answer this now: ${info.message}.`;
    case 'unavailable':
      return `I couldn't reach a language model to answer this (${info.message}). Your message is saved; ask again when it is back.`;
    case 'timeout':
      return `The language model took too long to answer this (${info.message}). Your message is saved; ask again.`;
    case 'payload_too_large':
      return `This is too long for the language models I can use (${info.message}).`;
    default:
      return `Something went wrong while answering this (${info.message}).`;
  }
}

// A model failure carries the model gateway's typed error; anything else is ours.
export function describeFailure(error: unknown): ErrorInfo {
  if (error instanceof TurnCancelled) {
    return { code: 'cancelled', message: 'the turn was stopped at your request' };
  }
  const cause = error instanceof ModelFailure ? error.cause : error;
  if (cause instanceof BusError) return cause.toInfo();
  if (error instanceof ModelFailure) {
    return { code: 'unavailable', message: 'the model could not be reached' };
  }
  return { code: 'internal', message: 'the turn failed' };
}

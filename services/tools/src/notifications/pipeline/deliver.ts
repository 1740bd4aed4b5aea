import type { ChannelType } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import type { Logger } from '@jarvis/telemetry';
import type { ToolsMetrics } from '../../tools-metrics';
import { type ChannelSender, type SecretBox, SendError, type StoredChannel } from '../channel';
import { getChannel } from '../channels-repository';
import {
  claimDelivery,
  markFailed,
  markRetrying,
  markSent,
  type StoredDelivery,
} from './deliveries-repository';

type RetrySettings = {
  // The first retry's delay; each later one doubles it, up to maxDelayMs.
  baseDelayMs: number;
  maxDelayMs: number;
};

export type DeliverDeps = {
  pool: Pool;
  box: SecretBox;
  senders: ReadonlyMap<ChannelType, ChannelSender>;
  logger: Logger;
  // Longest one attempt takes (NOTIFY_SEND_TIMEOUT_MS); a send past it counts as a timeout.
  sendTimeoutMs: number;
  // Attempts before a delivery is recorded as failed (NOTIFY_MAX_ATTEMPTS).
  maxAttempts: number;
  retry: RetrySettings;
  // Counts each attempt's outcome; none in tests that do not look at it.
  metrics?: ToolsMetrics;
};

// What became of one look at a delivery.
type DeliverResult =
  | { status: 'sent' }
  | { status: 'failed'; error: string }
  | { status: 'retrying'; error: string }
  // Not for now: it ended already, waits (for quiet hours to end, for its next attempt), or
  // another attempt has it. The sweeper queues it again when it is due.
  | { status: 'skipped' };

// A Retry-After is honoured up to this: a receiver asking for a day must not park a reminder
// for a day, and the attempts left still bound how long it is tried.
const RETRY_AFTER_MAX_MS = 60 * 60_000;
// The lease past the send's own timeout: the database writes around the send.
const LEASE_MARGIN_MS = 30_000;

// One attempt at a delivery, the one way anything is sent: by the queue's worker and by the test
// RPC. The row is claimed first (its attempt counted, leased), so a duplicate work message or a
// second replica never sends it twice at once; the outcome is written before it is answered. A
// retry waits in the database (retrying, next_attempt_at), not in the queue: work messages held
// back there would count against the queue's pending limit, and a channel that is down for long
// would then stall the deliveries to every other channel.
export async function deliver(
  deps: DeliverDeps,
  deliveryId: string,
  options: { maxAttempts?: number; sendTimeoutMs?: number } = {},
): Promise<DeliverResult> {
  const sendTimeoutMs = options.sendTimeoutMs ?? deps.sendTimeoutMs;
  const delivery = await claimDelivery(deps.pool, deliveryId, sendTimeoutMs + LEASE_MARGIN_MS);
  if (!delivery) return { status: 'skipped' };
  const failure = await attempt(deps, delivery, sendTimeoutMs);
  if (!failure) {
    await markSent(deps.pool, delivery.id);
    deps.metrics?.countDelivery(delivery.channel, 'sent');
    return { status: 'sent' };
  }
  const maxAttempts = options.maxAttempts ?? deps.maxAttempts;
  if (!failure.isRetryable || delivery.attempts >= maxAttempts) {
    const error =
      failure.isRetryable && delivery.attempts > 1
        ? `gave up after ${delivery.attempts} attempts: ${failure.message}`
        : failure.message;
    await markFailed(deps.pool, delivery.id, error);
    deps.metrics?.countDelivery(delivery.channel, 'failed');
    return { status: 'failed', error };
  }
  const retryInMs = Math.max(
    backoffMs(delivery.attempts, deps.retry),
    Math.min(failure.retryAfterMs ?? 0, RETRY_AFTER_MAX_MS),
  );
  await markRetrying(deps.pool, delivery.id, failure.message, new Date(Date.now() + retryInMs));
  deps.metrics?.countDelivery(delivery.channel, 'retried');
  return { status: 'retrying', error: failure.message };
}

// The attempt's failure as a SendError, or undefined when it was sent.
async function attempt(
  deps: DeliverDeps,
  delivery: StoredDelivery,
  sendTimeoutMs: number,
): Promise<SendError | undefined> {
  const sender = deps.senders.get(delivery.channel);
  if (!sender) {
    return new SendError(`this install cannot send to ${delivery.channel}`, {
      isRetryable: false,
    });
  }
  let channel: StoredChannel | undefined;
  try {
    channel = await getChannel(deps.pool, deps.box, delivery.userId, delivery.channel);
  } catch (error) {
    // Its secrets do not open (the install's key changed) or the database failed: counted as an
    // attempt, so that a channel that can never be read ends as failed instead of forever retried.
    deps.logger.error(
      { deliveryId: delivery.id, channel: delivery.channel, errorName: nameOf(error) },
      'a notification channel could not be read',
    );
    return new SendError('the channel could not be read', { isRetryable: true });
  }
  if (!channel) return new SendError('the channel was removed', { isRetryable: false });
  if (!channel.isConfirmed) {
    return new SendError('the email address is not confirmed yet', { isRetryable: false });
  }
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      const error = new SendError(`no answer within ${sendTimeoutMs} ms`, { isRetryable: true });
      controller.abort(error);
      reject(error);
    }, sendTimeoutMs);
  });
  try {
    // The race also covers a sender that does not stop on the signal.
    await Promise.race([sender.send(channel, delivery.notification, controller.signal), timedOut]);
    return undefined;
  } catch (error) {
    if (error instanceof SendError) return error;
    // Not a SendError: a fault of ours, or a library's error whose message may carry a secret
    // (a Bot API URL holds its token), so neither the message nor the error is kept or logged.
    deps.logger.error(
      { deliveryId: delivery.id, channel: delivery.channel, errorName: nameOf(error) },
      'a notification send failed unexpectedly',
    );
    return new SendError('the send failed unexpectedly', { isRetryable: true });
  } finally {
    clearTimeout(timer);
  }
}

function nameOf(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

// Exponential backoff with jitter: retries of many deliveries that failed together (a channel
// that was down) spread out instead of coming back as one wave.
function backoffMs(attempts: number, retry: RetrySettings): number {
  const ceiling = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** Math.max(attempts - 1, 0));
  return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
}

import { createHash } from 'node:crypto';
import { Agent, type RequestOptions } from 'node:https';
import type { Duplex } from 'node:stream';
import { URGENT_KINDS, type WebPushPayload } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { type OutboundGuard, OutboundRefusedError } from '@jarvis/net-guard';
import type { Logger } from '@jarvis/telemetry';
import webPush, { WebPushError } from 'web-push';
import { type ChannelSender, type Notification, SendError } from '../channel';
import {
  deletePushSubscription,
  listPushSubscriptions,
  markPushSucceeded,
  type PushSubscriptionRecord,
} from '../push/push-repository';
import type { VapidDetails } from '../push/vapid-keys';
import { parseRetryAfter } from './http-post';

export type WebPushSenderDeps = {
  pool: Pool;
  guard: OutboundGuard;
  vapid: VapidDetails;
  logger: Logger;
  // Certificates trusted instead of the system's: a test's stand-in push service. Unset in the
  // service, where push services have public certificates.
  ca?: string;
};

// How long a push service keeps a message for a device that is off: a reminder or an approval
// told a day late is still worth seeing; after that it is stale, and the history has it.
const TTL_SECONDS = 24 * 60 * 60;
// Push services take 4,096 bytes of encrypted payload at most (RFC 8291 leaves room for about
// 3,990 of JSON); under this the JSON is safe, whatever the characters.
const PAYLOAD_MAX_BYTES = 3_000;
const TITLE_MAX_CHARS = 120;
// A phone shows a few lines; the rest is one tap away in the UI.
const BODY_MAX_CHARS = 600;
// When the notification names no place in the UI (an operations alert, a note).
const DEFAULT_PATH = '/';
// A push service answers a status and a line of text at most; web-push keeps the whole answer in
// memory, so a destination streaming one without end is cut off past this.
const ANSWER_MAX_BYTES = 64 * 1_024;
const ANSWER_TOO_LARGE = 'EANSWERTOOLARGE';
// A status that says the subscription is gone for good (unsubscribed, expired): its row goes.
const GONE_STATUSES = new Set([404, 410]);

// Sends the notification to every device of the user, as web-push builds it: the payload
// encrypted to the device's keys (aes128gcm, RFC 8291) and signed with the install's VAPID key.
// Each connection goes through an agent whose lookup is the outbound guard's, so a push endpoint
// on a private address is never reached, whatever its name resolves to at send time.
//
// A delivery counts as sent when no device failed in a way worth retrying and at least one took
// it. A retry sends to every device again: the payload's tag (the event's) makes a device that
// had it already replace the notification rather than show a second.
export function createWebPushSender(deps: WebPushSenderDeps): ChannelSender {
  return {
    type: 'webpush',
    async send(channel, notification, signal) {
      const devices = await listPushSubscriptions(deps.pool, channel.userId);
      if (devices.length === 0) {
        throw new SendError('no device is subscribed to Web Push', { isRetryable: false });
      }
      const payload = JSON.stringify(pushPayload(notification));
      const outcomes = await Promise.all(
        devices.map((device) => sendToDevice(deps, device, notification, payload, signal)),
      );
      await markPushSucceeded(
        deps.pool,
        devices.filter((_, index) => outcomes[index] === 'sent').map((device) => device.id),
      );
      const gone = devices.filter((_, index) => outcomes[index] === 'gone');
      for (const device of gone) {
        await deletePushSubscription(deps.pool, device.userId, device.id);
        deps.logger.info(
          { userId: device.userId, endpointHost: new URL(device.endpoint).host },
          'a push subscription is gone: removed',
        );
      }
      const failures = outcomes.filter((outcome) => outcome instanceof SendError);
      const retryable = failures.filter((failure) => failure.isRetryable);
      const counted = (failure: SendError) =>
        devices.length === 1
          ? failure.message
          : `${failures.length} of ${devices.length} devices failed: ${failure.message}`;
      const [firstRetryable] = retryable;
      if (firstRetryable) {
        throw new SendError(counted(firstRetryable), {
          isRetryable: true,
          retryAfterMs:
            Math.max(0, ...retryable.map((failure) => failure.retryAfterMs ?? 0)) || undefined,
        });
      }
      if (outcomes.includes('sent')) return;
      const [firstFailure] = failures;
      if (firstFailure) throw new SendError(counted(firstFailure), { isRetryable: false });
      throw new SendError(
        `the push service answered that ${gone.length === 1 ? 'the device is' : 'every device is'} no longer subscribed: removed`,
        { isRetryable: false },
      );
    },
  };
}

// What the device's service worker shows: the web UI's path of the thing, on the origin it was
// subscribed from (the worker opens nothing else).
export function pushPayload(notification: Notification): WebPushPayload {
  const title = cut(notification.title, TITLE_MAX_CHARS);
  const url = notification.path ?? DEFAULT_PATH;
  const tag = notification.eventId;
  let body = cut(notification.text, BODY_MAX_CHARS);
  // Characters outside ASCII take up to 4 bytes, and JSON escapes some into 6: shortened until
  // the whole payload fits.
  while (
    body.length > 0 &&
    Buffer.byteLength(JSON.stringify({ title, body, url, tag })) > PAYLOAD_MAX_BYTES
  ) {
    body = cut(body, Math.floor([...body].length * 0.8));
  }
  return { title, body, url, tag };
}

type DeviceOutcome = 'sent' | 'gone' | SendError;

async function sendToDevice(
  deps: WebPushSenderDeps,
  device: PushSubscriptionRecord,
  notification: Notification,
  payload: string,
  signal: AbortSignal,
): Promise<DeviceOutcome> {
  const url = new URL(device.endpoint);
  let agent: Agent;
  try {
    // Throws at once for a refused address written in the URL, which no lookup would see.
    const { lookup } = deps.guard.connectOptions(url);
    // An agent of its own per send: no pooled connection outlives the check, and aborting can
    // destroy exactly this send's sockets.
    agent = new CappedAgent({ lookup, keepAlive: false, ...(deps.ca ? { ca: deps.ca } : {}) });
  } catch (error) {
    if (error instanceof OutboundRefusedError) {
      return new SendError(error.message, { isRetryable: false });
    }
    throw error;
  }
  const onAbort = () => agent.destroy();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    await webPush.sendNotification(
      { endpoint: device.endpoint, keys: { p256dh: device.p256dh, auth: device.auth } },
      payload,
      {
        vapidDetails: deps.vapid,
        TTL: TTL_SECONDS,
        contentEncoding: 'aes128gcm',
        urgency: URGENT_KINDS.includes(notification.kind) ? 'high' : 'normal',
        // A message not yet delivered to a device that is off is replaced by the same event's
        // retry rather than queued beside it.
        topic: topicOf(notification.eventId),
        agent,
      },
    );
    return 'sent';
  } catch (error) {
    return toOutcome(error, url, signal);
  } finally {
    signal.removeEventListener('abort', onAbort);
    agent.destroy();
  }
}

function toOutcome(error: unknown, url: URL, signal: AbortSignal): DeviceOutcome {
  if (error instanceof WebPushError) {
    if (GONE_STATUSES.has(error.statusCode)) return 'gone';
    const answer = `${url.host} answered ${error.statusCode}`;
    if (error.statusCode === 429 || error.statusCode >= 500) {
      return new SendError(answer, {
        isRetryable: true,
        retryAfterMs: parseRetryAfter(retryAfterOf(error)),
      });
    }
    // 400 (a malformed subscription), 401/403 (the VAPID key is not the one the browser
    // subscribed with), 413: sending again changes nothing.
    return new SendError(answer, { isRetryable: false });
  }
  if (error instanceof OutboundRefusedError) {
    return new SendError(error.message, { isRetryable: false });
  }
  if (signal.aborted) {
    return new SendError(`${url.host} did not answer in time`, { isRetryable: true });
  }
  const code = error instanceof Error && 'code' in error ? ` (${String(error.code)})` : '';
  if (code === ` (${ANSWER_TOO_LARGE})`) {
    return new SendError(`${url.host} answered more than ${ANSWER_MAX_BYTES} bytes`, {
      isRetryable: false,
    });
  }
  // The message only by its code: an error of the library may quote the endpoint, whose path is
  // the device's capability.
  return new SendError(`${url.host} could not be reached${code}`, { isRetryable: true });
}

// Counts what each connection receives (decrypted) and destroys it past ANSWER_MAX_BYTES.
class CappedAgent extends Agent {
  override createConnection(
    options: RequestOptions,
    callback?: (error: Error | null, stream: Duplex) => void,
  ): Duplex | null | undefined {
    const socket = super.createConnection(options, callback);
    let received = 0;
    socket?.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received <= ANSWER_MAX_BYTES) return;
      socket.destroy(Object.assign(new Error('answer too large'), { code: ANSWER_TOO_LARGE }));
    });
    return socket;
  }
}

// Push services' topics are at most 32 base64url characters: the event's id, hashed.
function topicOf(eventId: string): string {
  return createHash('sha256').update(eventId).digest('base64url').slice(0, 32);
}

function retryAfterOf(error: WebPushError): string | undefined {
  const value = error.headers['retry-after'];
  return value === undefined ? undefined : String(value);
}

function cut(text: string, maxChars: number): string {
  const chars = [...text];
  return chars.length <= maxChars ? text : `${chars.slice(0, maxChars - 1).join('')}…`;
}

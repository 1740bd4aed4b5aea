import { randomBytes } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { type ChannelType, DEFAULT_CHANNEL_EVENTS, type NotificationKind } from '@jarvis/contracts';
import { createPool } from '@jarvis/db';
import { createLogger } from '@jarvis/telemetry';
import { startHttpRecorder, type TestDatabase, uniqueNamespace } from '@jarvis/testkit';
import { startToolsDatabase } from '../../tools-database-fixture';
import { type ChannelSender, SendError } from '../channel';
import { putChannel } from '../channels-repository';
import { createSecretBox } from '../secret-box';
import type { DeliverDeps } from './deliver';
import {
  type NotificationPipeline,
  type PipelineDeps,
  startNotificationPipeline,
} from './pipeline';

// The pipeline as its tests meet it: the tools schema on a test database, a NATS namespace of its
// own, and a real HTTP server as every user's channel, which a test tells how to answer.

export type ReceivedRequest = {
  path: string;
  body: { id: string; type: string; title: string; text: string; occurredAt: string };
  at: number;
  status: number;
};

// How the receiver answers one request: a status and, for 429/503, a Retry-After in seconds;
// after a delay, to stand for a server that hangs.
type Answer = { status: number; retryAfterSeconds?: number; delayMs?: number };

type Receiver = {
  url: string;
  requests: ReceivedRequest[];
  answer: (request: ReceivedRequest) => Answer;
  close(): Promise<void>;
};

// The test kit's recorder, answering as `answer` says and keeping each request's body parsed
// with the status it got.
async function startReceiver(): Promise<Receiver> {
  const recorder = await startHttpRecorder();
  const receiver: Receiver = {
    url: recorder.url,
    requests: [],
    answer: () => ({ status: 200 }),
    close: () => recorder.close(),
  };
  recorder.respondWith((request, response) => {
    const received: ReceivedRequest = {
      path: request.path,
      body: JSON.parse(request.body),
      at: request.receivedAt,
      status: 0,
    };
    const answer = receiver.answer(received);
    received.status = answer.status;
    receiver.requests.push(received);
    if (answer.retryAfterSeconds !== undefined) {
      response.setHeader('retry-after', String(answer.retryAfterSeconds));
    }
    setTimeout(() => response.writeHead(answer.status).end(), answer.delayMs ?? 0);
  });
  return receiver;
}

// A channel sender for the tests: POSTs the notification's webhook body to the channel's URL, a
// real request, and reads the answer as the channel senders do (429 and 5xx retryable, with
// Retry-After; any other 4xx final).
function createPostingSender(type: ChannelType): ChannelSender {
  return {
    type,
    async send(channel, notification, signal) {
      if (channel.config.type !== 'webhook' && channel.config.type !== 'ntfy') {
        throw new Error('the test sender posts to webhook and ntfy channels only');
      }
      const response = await fetch(channel.config.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          id: notification.eventId,
          type: notification.kind,
          occurredAt: notification.occurredAt,
          title: notification.title,
          text: notification.text,
        }),
        signal,
      }).catch((error: unknown) => {
        throw new SendError(`could not connect (${String(error)})`, { isRetryable: true });
      });
      await response.arrayBuffer();
      if (response.ok) return;
      const retryAfter = Number(response.headers.get('retry-after'));
      const isRetryable = response.status === 429 || response.status >= 500;
      throw new SendError(`the server answered ${response.status}`, {
        isRetryable,
        ...(Number.isFinite(retryAfter) && retryAfter > 0
          ? { retryAfterMs: retryAfter * 1000 }
          : {}),
      });
    },
  };
}

export type PipelineFixture = {
  db: TestDatabase;
  bus: Bus;
  receiver: Receiver;
  deps: PipelineDeps;
  // A webhook (and, with `ntfy`, an ntfy) channel of the user, posting to <receiver>/<userId>/<type>.
  addChannels(
    userId: string,
    options?: { ntfy?: boolean; events?: NotificationKind[] },
  ): Promise<void>;
  startPipeline(): Promise<NotificationPipeline>;
  // The deliveries of a user, by status.
  statuses(userId: string): Promise<Record<string, number>>;
  stop(): Promise<void>;
};

export async function startPipelineFixture(
  label: string,
  // The senders default to a plain POST of the webhook body, for webhook and ntfy channels.
  settings: Partial<Omit<DeliverDeps, 'pool' | 'box' | 'logger'>> &
    Partial<Pick<PipelineDeps, 'sweepIntervalMs' | 'overdueMs'>> = {},
): Promise<PipelineFixture> {
  const stoppers: Array<() => Promise<unknown>> = [];
  const stop = async () => {
    for (const stopOne of stoppers.splice(0).reverse()) await stopOne();
  };
  try {
    const db = await startToolsDatabase();
    stoppers.push(() => db.stop());
    const bus = await connectTestBus(uniqueNamespace(label));
    stoppers.push(() => bus.close());
    const receiver = await startReceiver();
    stoppers.push(() => receiver.close());
    const box = createSecretBox(randomBytes(32));
    // As many connections as the service's pool has by default: the test database's own pool is
    // smaller, and a burst's sends would queue for its connections.
    const pool = createPool({ url: db.url, applicationName: 'tools-test', max: 10 });
    stoppers.push(() => pool.end());
    const deps: PipelineDeps = {
      bus,
      pool,
      box,
      senders: new Map([
        ['webhook', createPostingSender('webhook')],
        ['ntfy', createPostingSender('ntfy')],
      ]),
      logger: createLogger('notifications-test', 'silent'),
      sendTimeoutMs: 2_000,
      maxAttempts: 3,
      retry: { baseDelayMs: 200, maxDelayMs: 2_000 },
      publicUrl: 'https://jarvis.example.com',
      sweepIntervalMs: 500,
      overdueMs: 5_000,
      ...settings,
    };
    return {
      db,
      bus,
      receiver,
      deps,
      async addChannels(userId, options = {}) {
        const events = options.events ?? DEFAULT_CHANNEL_EVENTS;
        await putChannel(db.pool, box, {
          userId,
          config: { type: 'webhook', url: `${receiver.url}/${userId}/webhook`, format: 'jarvis' },
          secrets: { secret: 'a-webhook-secret-of-the-test' },
          events,
          isConfirmed: true,
        });
        if (options.ntfy) {
          await putChannel(db.pool, box, {
            userId,
            config: {
              type: 'ntfy',
              url: `${receiver.url}/${userId}/ntfy`,
              topic: 't',
              priority: 3,
            },
            secrets: {},
            events,
            isConfirmed: true,
          });
        }
      },
      async startPipeline() {
        const pipeline = await startNotificationPipeline(deps);
        stoppers.push(() => pipeline.stop());
        return pipeline;
      },
      async statuses(userId) {
        const { rows } = await db.pool.query<{ status: string; count: string }>(
          `SELECT status, count(*) AS count FROM tools.notification_deliveries
           WHERE user_id = $1 GROUP BY status`,
          [userId],
        );
        return Object.fromEntries(rows.map((row) => [row.status, Number(row.count)]));
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

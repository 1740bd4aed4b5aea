import { randomBytes, randomUUID } from 'node:crypto';
import { type Bus, publishUserEvent } from '@jarvis/bus';
import { catchBusError, connectTestBus } from '@jarvis/bus/testing';
import { notificationsDeliveriesList, notificationsTest } from '@jarvis/contracts';
import { missionEnded, reminderFired, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { putChannel } from '../channels-repository';
import { createNotifyTool } from '../notify-tool';
import { createSecretBox } from '../secret-box';
import { putSettings } from '../settings-repository';
import { insertDeliveries } from './deliveries-repository';
import { registerDeliveryHandlers } from './delivery-handlers';
import { storeNotification } from './pipeline';
import {
  type PipelineFixture,
  type ReceivedRequest,
  startPipelineFixture,
} from './pipeline-fixture';

// The pipeline end to end: events published on the user event stream as their producers publish
// them, real HTTP requests to a local server as the channel, Postgres as the record.

let fixture: PipelineFixture;
let client: Bus;

beforeAll(async () => {
  fixture = await startPipelineFixture('notify-pipeline');
  await fixture.startPipeline();
  registerDeliveryHandlers(fixture.deps);
  client = await connectTestBus(fixture.bus.namespace);
});

afterAll(async () => {
  await client?.close();
  await fixture?.stop();
});

function requestsOf(userId: string): ReceivedRequest[] {
  return fixture.receiver.requests.filter((request) => request.path.startsWith(`/${userId}/`));
}

async function settle(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

describe('the notification pipeline', () => {
  it('delivers an event once to each subscribed channel, however often it comes', async () => {
    const userId = randomUUID();
    await fixture.addChannels(userId, { ntfy: true });
    const event = reminderFired('Call the plumber').event;

    // Published twice, as a scheduler retrying its delivery would.
    await publishUserEvent(fixture.bus, userId, 'schedule-run:plumber', event);
    await publishUserEvent(fixture.bus, userId, 'schedule-run:plumber', event);

    await waitFor(() => requestsOf(userId).length === 2, { what: 'one request per channel' });
    await waitFor(async () => (await fixture.statuses(userId)).sent === 2, { what: 'both sent' });
    // And once more as a consumer redelivering the event would handle it: the rows are found.
    const again = await storeNotification(
      fixture.db.pool,
      userId,
      {
        eventId: 'schedule-run:plumber',
        kind: 'reminder',
        occurredAt: event.occurredAt,
        title: 'x',
        text: 'Call the plumber',
      },
      true,
    );
    expect(again.toPublish).toEqual([]);
    await settle(1_000);
    const requests = requestsOf(userId);
    expect(requests.map((request) => request.path).sort()).toEqual([
      `/${userId}/ntfy`,
      `/${userId}/webhook`,
    ]);
    for (const request of requests) {
      expect(request.body).toMatchObject({
        id: 'schedule-run:plumber',
        type: 'reminder',
        title: 'Reminder: Call the plumber',
        text: 'Call the plumber',
      });
    }
    expect(await fixture.statuses(userId)).toEqual({ sent: 2 });
  });

  it('sends a channel only the kinds it subscribes to, and no unconfirmed address', async () => {
    const userId = randomUUID();
    await fixture.addChannels(userId, { events: ['reminder'] });
    await putChannel(fixture.db.pool, fixture.deps.box, {
      userId,
      config: { type: 'email', to: 'ann@example.com' },
      secrets: {},
      events: ['reminder', 'mission_report'],
      isConfirmed: false,
    });

    await publishUserEvent(fixture.bus, userId, `mission:${randomUUID()}:ended`, missionEnded('r'));
    await publishUserEvent(
      fixture.bus,
      userId,
      `schedule-run:${randomUUID()}`,
      reminderFired('Tea').event,
    );

    await waitFor(() => requestsOf(userId).length === 1, { what: 'the reminder' });
    await settle(1_000);
    expect(requestsOf(userId).map((request) => request.body.type)).toEqual(['reminder']);
    expect(await fixture.statuses(userId)).toEqual({ sent: 1 });
  });

  it('holds what is not urgent until quiet hours end, and lets reminders through', async () => {
    const userId = randomUUID();
    await fixture.addChannels(userId);
    const now = new Date();
    const wall = (offsetHours: number) =>
      new Date(now.getTime() + offsetHours * 3_600_000).toISOString().slice(11, 16);
    await putSettings(fixture.db.pool, userId, {
      quietHours: { start: wall(-1), end: wall(1) },
      timeZone: 'UTC',
    });

    await publishUserEvent(
      fixture.bus,
      userId,
      `mission:${randomUUID()}:ended`,
      missionEnded('Flat found.'),
    );
    await publishUserEvent(
      fixture.bus,
      userId,
      `schedule-run:${randomUUID()}`,
      reminderFired('Pills').event,
    );

    await waitFor(() => requestsOf(userId).length === 1, { what: 'the reminder' });
    expect(requestsOf(userId)[0]?.body.type).toBe('reminder');
    const held = await waitFor(
      async () => {
        const { rows } = await fixture.db.pool.query<{ next_attempt_at: Date }>(
          `SELECT next_attempt_at FROM tools.notification_deliveries
           WHERE user_id = $1 AND status = 'held'`,
          [userId],
        );
        return rows[0];
      },
      { what: 'the held mission report' },
    );
    // Held until the end of quiet hours: the start of the minute an hour from now.
    const end = Math.floor((now.getTime() + 3_600_000) / 60_000) * 60_000;
    expect(held.next_attempt_at.getTime()).toBe(end);
    await settle(1_000);
    expect(requestsOf(userId)).toHaveLength(1);

    // Quiet hours end: the sweeper queues it.
    await fixture.db.pool.query(
      `UPDATE tools.notification_deliveries SET next_attempt_at = now() - interval '1 second'
       WHERE user_id = $1 AND status = 'held'`,
      [userId],
    );
    await waitFor(() => requestsOf(userId).length === 2, { what: 'the mission report' });
    expect(requestsOf(userId)[1]?.body).toMatchObject({
      type: 'mission_report',
      text: 'Flat found.',
    });
    await waitFor(async () => (await fixture.statuses(userId)).sent === 2, { what: 'both sent' });
  });

  it('retries after the Retry-After a 429 asks for, then sends', { timeout: 20_000 }, async () => {
    const userId = randomUUID();
    await fixture.addChannels(userId);
    const previous = fixture.receiver.answer;
    fixture.receiver.answer = (request) =>
      request.path.startsWith(`/${userId}/`) && requestsOf(userId).length === 0
        ? { status: 429, retryAfterSeconds: 2 }
        : previous(request);

    await publishUserEvent(
      fixture.bus,
      userId,
      `schedule-run:${randomUUID()}`,
      reminderFired('Gym').event,
    );

    await waitFor(() => requestsOf(userId).length === 1, { what: 'the first attempt' });
    const retrying = await waitFor(
      async () => {
        const { deliveries } = await client.request(notificationsDeliveriesList, { userId });
        return deliveries[0]?.status === 'retrying' ? deliveries[0] : undefined;
      },
      { what: 'the delivery retrying' },
    );
    expect(retrying).toMatchObject({ attempts: 1, error: 'the server answered 429' });
    await waitFor(() => requestsOf(userId).length === 2, { what: 'the retry' });
    const [first, second] = requestsOf(userId);
    // Retry-After (2 s) rather than the first backoff (at most 200 ms).
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(1_900);
    const sent = await waitFor(
      async () => {
        const { deliveries } = await client.request(notificationsDeliveriesList, { userId });
        return deliveries[0]?.status === 'sent' ? deliveries[0] : undefined;
      },
      { what: 'the delivery sent' },
    );
    expect(sent).toMatchObject({ attempts: 2, error: null });
    fixture.receiver.answer = previous;
  });

  it(
    'retries a send that does not answer within the send timeout',
    { timeout: 20_000 },
    async () => {
      const userId = randomUUID();
      await fixture.addChannels(userId);
      const previous = fixture.receiver.answer;
      fixture.receiver.answer = (request) =>
        request.path.startsWith(`/${userId}/`) && requestsOf(userId).length === 0
          ? { status: 200, delayMs: 4_000 }
          : previous(request);

      await publishUserEvent(
        fixture.bus,
        userId,
        `schedule-run:${randomUUID()}`,
        reminderFired('Oven').event,
      );

      await waitFor(() => requestsOf(userId).length === 2, {
        timeoutMs: 10_000,
        what: 'the attempt after the timeout',
      });
      const { deliveries } = await client.request(notificationsDeliveriesList, { userId });
      // sendTimeoutMs is 2 s here: the first attempt counted as a timeout.
      expect(deliveries[0]).toMatchObject({ attempts: 2 });
      await waitFor(
        async () =>
          (await client.request(notificationsDeliveriesList, { userId })).deliveries[0]?.status ===
          'sent',
        { what: 'the delivery sent' },
      );
      const [first, second] = requestsOf(userId);
      expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(1_900);
      fixture.receiver.answer = previous;
    },
  );

  it('records a delivery that finally fails with its reason', { timeout: 20_000 }, async () => {
    const failing = randomUUID();
    const refused = randomUUID();
    await fixture.addChannels(failing);
    await fixture.addChannels(refused);
    const previous = fixture.receiver.answer;
    fixture.receiver.answer = (request) => {
      if (request.path.startsWith(`/${failing}/`)) return { status: 503 };
      if (request.path.startsWith(`/${refused}/`)) return { status: 404 };
      return previous(request);
    };

    await publishUserEvent(
      fixture.bus,
      failing,
      `schedule-run:${randomUUID()}`,
      reminderFired('A').event,
    );
    await publishUserEvent(
      fixture.bus,
      refused,
      `schedule-run:${randomUUID()}`,
      reminderFired('B').event,
    );

    const gaveUp = await waitFor(
      async () => {
        const { deliveries } = await client.request(notificationsDeliveriesList, {
          userId: failing,
        });
        return deliveries[0]?.status === 'failed' ? deliveries[0] : undefined;
      },
      { what: 'the delivery to fail' },
    );
    // maxAttempts 3: a 5xx is retried, then given up.
    expect(gaveUp).toMatchObject({
      attempts: 3,
      error: 'gave up after 3 attempts: the server answered 503',
      nextAttemptAt: null,
    });
    expect(requestsOf(failing)).toHaveLength(3);
    // A 404 is final at once.
    const { deliveries } = await client.request(notificationsDeliveriesList, { userId: refused });
    expect(deliveries[0]).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: 'the server answered 404',
    });
    expect(requestsOf(refused)).toHaveLength(1);
    fixture.receiver.answer = previous;
  });

  it(
    'fails a delivery whose channel cannot be read, after its attempts',
    { timeout: 20_000 },
    async () => {
      const userId = randomUUID();
      // Sealed with another key than the install's (a key file lost and made anew).
      await putChannel(fixture.db.pool, createSecretBox(randomBytes(32)), {
        userId,
        config: {
          type: 'webhook',
          url: `${fixture.receiver.url}/${userId}/webhook`,
          format: 'jarvis',
        },
        secrets: { secret: 'sealed-with-another-key' },
        events: ['reminder'],
        isConfirmed: true,
      });

      await publishUserEvent(
        fixture.bus,
        userId,
        `schedule-run:${randomUUID()}`,
        reminderFired('Key').event,
      );

      const failed = await waitFor(
        async () => {
          const { deliveries } = await client.request(notificationsDeliveriesList, { userId });
          return deliveries[0]?.status === 'failed' ? deliveries[0] : undefined;
        },
        { timeoutMs: 15_000, what: 'the delivery to fail' },
      );
      expect(failed).toMatchObject({
        attempts: 3,
        error: 'gave up after 3 attempts: the channel could not be read',
      });
      expect(requestsOf(userId)).toEqual([]);
    },
  );

  it('queues again a delivery whose work message was lost', async () => {
    const userId = randomUUID();
    await fixture.addChannels(userId);
    const id = randomUUID();
    // Stored, but its process died before publishing its work.
    await insertDeliveries(fixture.db.pool, [
      {
        id,
        userId,
        channel: 'webhook',
        notification: {
          eventId: 'lost-one',
          kind: 'reminder',
          occurredAt: new Date().toISOString(),
          title: 'Lost',
          text: 'found again',
        },
        isUrgent: true,
        heldUntil: undefined,
      },
    ]);
    await fixture.db.pool.query(
      "UPDATE tools.notification_deliveries SET updated_at = now() - interval '1 minute' WHERE id = $1",
      [id],
    );

    await waitFor(() => requestsOf(userId).length === 1, { what: 'the lost delivery' });
    expect(requestsOf(userId)[0]?.body).toMatchObject({ id: 'lost-one', text: 'found again' });
  });
});

describe('notifications.test', () => {
  it('sends now and answers sent, kept in the history', async () => {
    const userId = randomUUID();
    await fixture.addChannels(userId);

    const { delivery } = await client.request(
      notificationsTest,
      { userId, channel: 'webhook' },
      { timeoutMs: 10_000 },
    );

    expect(delivery).toMatchObject({ channel: 'webhook', status: 'sent', error: null });
    expect(requestsOf(userId).map((request) => request.body.type)).toEqual(['test']);
    const { deliveries } = await client.request(notificationsDeliveriesList, { userId });
    expect(deliveries).toMatchObject([{ id: delivery.id, kind: 'test', status: 'sent' }]);
  });

  it('answers failed with the reason, after one attempt', async () => {
    const userId = randomUUID();
    await fixture.addChannels(userId);
    const previous = fixture.receiver.answer;
    fixture.receiver.answer = (request) =>
      request.path.startsWith(`/${userId}/`) ? { status: 500 } : previous(request);

    const { delivery } = await client.request(
      notificationsTest,
      { userId, channel: 'webhook' },
      { timeoutMs: 10_000 },
    );

    expect(delivery).toMatchObject({ status: 'failed', error: 'the server answered 500' });
    expect(requestsOf(userId)).toHaveLength(1);
    fixture.receiver.answer = previous;
  });

  it('answers not_found for a channel the user does not have', async () => {
    const userId = randomUUID();
    await fixture.addChannels(randomUUID());

    const error = await catchBusError(
      client.request(notificationsTest, { userId, channel: 'webhook' }),
    );

    expect(error.code).toBe('not_found');
  });
});

describe('notifications.deliveries.list', () => {
  it("pages through a user's deliveries, newest first, each once, and no one else's", async () => {
    const userId = randomUUID();
    await fixture.addChannels(userId, { ntfy: true });
    await fixture.addChannels(randomUUID(), { ntfy: true });
    for (let index = 0; index < 4; index++) {
      await storeNotification(
        fixture.db.pool,
        userId,
        {
          eventId: `page-${index}`,
          kind: 'reminder',
          occurredAt: new Date().toISOString(),
          title: `Reminder ${index}`,
          text: 'x',
        },
        true,
      );
    }

    const seen: string[] = [];
    let before: string | undefined;
    do {
      const page = await client.request(notificationsDeliveriesList, { userId, limit: 3, before });
      seen.push(...page.deliveries.map((delivery) => `${delivery.eventId}/${delivery.channel}`));
      before = page.nextBefore;
    } while (before);

    // Two channels per event, the two of one event never split across pages.
    expect(seen).toEqual([
      'page-3/ntfy',
      'page-3/webhook',
      'page-2/ntfy',
      'page-2/webhook',
      'page-1/ntfy',
      'page-1/webhook',
      'page-0/ntfy',
      'page-0/webhook',
    ]);
    const { deliveries } = await client.request(notificationsDeliveriesList, {
      userId,
      channel: 'ntfy',
    });
    expect(deliveries.map((delivery) => delivery.channel)).toEqual([
      'ntfy',
      'ntfy',
      'ntfy',
      'ntfy',
    ]);
  });
});

describe('the notify tool', () => {
  const context = (userId: string) => ({
    userId,
    runId: undefined,
    conversationId: undefined,
    signal: new AbortController().signal,
  });

  it('sends a note now, up to the hourly limit, then says why not', async () => {
    const userId = randomUUID();
    await fixture.addChannels(userId);
    const notify = createNotifyTool({ ...fixture.deps, perHour: 2 });

    expect(
      await notify.run({ text: 'The build is green.', urgent: false }, context(userId)),
    ).toEqual({ sent: true, channels: ['webhook'] });
    await notify.run({ text: 'Second.', title: 'Builds', urgent: true }, context(userId));
    const third = await catchBusError(
      notify.run({ text: 'Third.', urgent: false }, context(userId)),
    );

    expect(third.code).toBe('rate_limited');
    expect(third.message).toContain('at most 2 notes an hour');
    await waitFor(() => requestsOf(userId).length === 2, { what: 'two notes' });
    expect(
      requestsOf(userId)
        .map((request) => `${request.body.type}: ${request.body.title}`)
        .sort(),
    ).toEqual(['note: Builds', 'note: The build is green.']);
  });

  it('holds a note that is not urgent until quiet hours end, and says so', async () => {
    const userId = randomUUID();
    await fixture.addChannels(userId);
    const wall = (offsetHours: number) =>
      new Date(Date.now() + offsetHours * 3_600_000).toISOString().slice(11, 16);
    await putSettings(fixture.db.pool, userId, {
      quietHours: { start: wall(-1), end: wall(1) },
      timeZone: 'UTC',
    });
    const notify = createNotifyTool({ ...fixture.deps, perHour: 5 });

    expect(await notify.run({ text: 'Later.', urgent: false }, context(userId))).toEqual({
      sent: true,
      channels: ['webhook'],
      heldUntilQuietHoursEnd: true,
    });
    expect(await notify.run({ text: 'Now!', urgent: true }, context(userId))).toEqual({
      sent: true,
      channels: ['webhook'],
    });

    await waitFor(() => requestsOf(userId).length === 1, { what: 'the urgent note' });
    await settle(1_000);
    expect(requestsOf(userId).map((request) => request.body.text)).toEqual(['Now!']);
    expect(await fixture.statuses(userId)).toEqual({ held: 1, sent: 1 });
  });

  it('tells the model when the user has no channel for notes', async () => {
    const userId = randomUUID();
    await fixture.addChannels(userId, { events: ['reminder'] });
    const notify = createNotifyTool({ ...fixture.deps, perHour: 2 });

    expect(await notify.run({ text: 'Hello', urgent: false }, context(userId))).toMatchObject({
      sent: false,
    });
  });
});

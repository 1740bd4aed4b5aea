import { randomBytes, randomUUID } from 'node:crypto';
import { type Bus, publishUserEvent } from '@jarvis/bus';
import { catchBusError, connectTestBus } from '@jarvis/bus/testing';
import {
  notificationsChannelsDelete,
  notificationsChannelsList,
  notificationsChannelsPut,
  notificationsPushKey,
  notificationsPushSubscribe,
  notificationsPushSubscriptionsList,
  notificationsPushUnsubscribe,
  notificationsTest,
  WebPushPayload,
} from '@jarvis/contracts';
import { createOutboundGuard, OutboundAllowedHosts } from '@jarvis/net-guard';
import { createLogger } from '@jarvis/telemetry';
import {
  type BrowserKeys,
  makeBrowserKeys,
  missionEnded,
  type PushServiceStandIn,
  reminderFired,
  startPushServiceStandIn,
  verifyVapid,
  waitFor,
} from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredChannel } from '../channel';
import { registerDeliveryHandlers } from '../pipeline/delivery-handlers';
import { type PipelineFixture, startPipelineFixture } from '../pipeline/pipeline-fixture';
import { registerPushHandlers } from '../push/push-handlers';
import { listPushSubscriptions, savePushSubscription } from '../push/push-repository';
import { loadVapidKeys, type VapidDetails } from '../push/vapid-keys';
import { createSecretBox } from '../secret-box';
import { registerSettingsHandlers } from '../settings-handlers';
import { createWebPushSender, pushPayload } from './web-push';

// Web Push end to end in the tools service: devices subscribe over the bus as the gateway
// forwards them, a test notification and a user event go through the delivery pipeline, and a
// local HTTPS push service (an allowed host, its certificate trusted) receives what a browser
// vendor's would: VAPID-signed, encrypted to the subscription's keys.

const SUBJECT = 'mailto:ops@jarvis.example.com';
// The stand-in is on loopback, which the operator allows here as OUTBOUND_ALLOWED_HOSTS would.
const guard = createOutboundGuard(OutboundAllowedHosts.parse('127.0.0.1'));
const logger = createLogger('web-push-test', 'silent');

let fixture: PipelineFixture;
let client: Bus;
let pushService: PushServiceStandIn;
let vapid: VapidDetails;

beforeAll(async () => {
  pushService = await startPushServiceStandIn();
  fixture = await startPipelineFixture('web-push');
  const { pool, box } = fixture.deps;
  vapid = await loadVapidKeys({ pool, box, logger }, SUBJECT);
  fixture.deps.senders = new Map([
    ['webpush', createWebPushSender({ pool, guard, vapid, logger, ca: pushService.ca })],
  ]);
  registerDeliveryHandlers(fixture.deps);
  registerSettingsHandlers({
    ...fixture.deps,
    guard,
    installSmtp: undefined,
    smtpTimeoutMs: 1_000,
  });
  registerPushHandlers({ bus: fixture.bus, pool, guard, logger, publicKey: vapid.publicKey });
  await fixture.startPipeline();
  client = await connectTestBus(fixture.bus.namespace);
  // A database to migrate and a certificate to make: longer than vitest's 10 s on a busy machine.
}, 60_000);

afterAll(async () => {
  await client?.close();
  await fixture?.stop();
  await pushService?.close();
});

// A browser subscribing over the API, as push.ts in the web UI does.
async function subscribe(userId: string, browser: BrowserKeys, name = 'Phone') {
  const endpoint = `${pushService.url}/push/${userId}/${randomUUID()}`;
  const { subscription } = await client.request(notificationsPushSubscribe, {
    userId,
    subscription: { endpoint, expirationTime: null, keys: browser.keys, deviceName: name },
  });
  return { endpoint, subscription };
}

function approvalOf() {
  const now = new Date();
  return {
    id: randomUUID(),
    runId: randomUUID(),
    turnId: randomUUID(),
    conversationId: randomUUID(),
    toolName: 'send_email',
    arguments: { to: 'ann@example.com' },
    status: 'pending' as const,
    createdAt: now.toISOString(),
    expiresAt: new Date(now.getTime() + 3_600_000).toISOString(),
    decidedAt: null,
  };
}

function pushesTo(endpoint: string) {
  return pushService.pushes.filter((push) => endpoint.endsWith(push.path));
}

describe('Web Push', () => {
  it('makes the VAPID key pair once, keeps it sealed, and a new secret key replaces it and its devices', async () => {
    const { pool, box } = fixture.deps;
    const again = await loadVapidKeys({ pool, box, logger }, SUBJECT);
    expect(again).toEqual(vapid);
    expect(Buffer.from(vapid.publicKey, 'base64url')).toHaveLength(65);
    const { publicKey } = await client.request(notificationsPushKey, { userId: randomUUID() });
    expect(publicKey).toBe(vapid.publicKey);
    const { rows } = await pool.query<{ private_key: Buffer }>(
      'SELECT private_key FROM tools.vapid_keys',
    );
    expect(rows).toHaveLength(1);
    const sealed = rows[0]?.private_key ?? Buffer.alloc(0);
    expect(sealed.toString('latin1')).not.toContain(vapid.privateKey);
    expect(sealed.includes(Buffer.from(vapid.privateKey, 'base64url'))).toBe(false);

    // On a database of its own: the other tests' devices stay.
    const other = await startPipelineFixture('web-push-rekey');
    try {
      const first = await loadVapidKeys(
        { pool: other.deps.pool, box: other.deps.box, logger },
        SUBJECT,
      );
      const userId = randomUUID();
      await savePushSubscription(other.deps.pool, {
        id: randomUUID(),
        userId,
        endpoint: `${pushService.url}/push/old`,
        ...makeBrowserKeys().keys,
        deviceName: undefined,
      });
      const rekeyed = await loadVapidKeys(
        { pool: other.deps.pool, box: createSecretBox(randomBytes(32)), logger },
        SUBJECT,
      );
      expect(rekeyed.publicKey).not.toBe(first.publicKey);
      expect(await listPushSubscriptions(other.deps.pool, userId)).toEqual([]);
    } finally {
      await other.stop();
    }
  });

  it('subscribes a device, showing only its push service host, and makes the webpush channel', async () => {
    const userId = randomUUID();
    const browser = makeBrowserKeys();
    const { endpoint, subscription } = await subscribe(userId, browser, 'Pixel 8');

    expect(subscription).toEqual({
      id: expect.any(String),
      deviceName: 'Pixel 8',
      endpointHost: new URL(pushService.url).host,
      createdAt: expect.any(String),
      lastSuccessAt: null,
    });
    const { channels } = await client.request(notificationsChannelsList, { userId });
    expect(channels).toEqual([
      expect.objectContaining({
        type: 'webpush',
        devices: 1,
        events: expect.arrayContaining(['reminder', 'approval_request', 'mission_report']),
      }),
    ]);

    // The same browser again (after a reload) is the same device, with the keys it sends now.
    const again = await client.request(notificationsPushSubscribe, {
      userId,
      subscription: { endpoint, keys: makeBrowserKeys().keys },
    });
    expect(again.subscription).toMatchObject({ id: subscription.id, deviceName: 'Pixel 8' });
    const { subscriptions } = await client.request(notificationsPushSubscriptionsList, { userId });
    expect(subscriptions).toHaveLength(1);
    expect(JSON.stringify(subscriptions)).not.toContain(endpoint);
  });

  it('refuses an endpoint that is not https, or on a private address the operator has not allowed', async () => {
    const userId = randomUUID();
    const keys = makeBrowserKeys().keys;
    const plain = await catchBusError(
      client.request(notificationsPushSubscribe, {
        userId,
        subscription: { endpoint: 'http://push.example.com/x', keys },
      }),
    );
    expect(plain.code).toBe('bad_request');
    const lan = await catchBusError(
      client.request(notificationsPushSubscribe, {
        userId,
        subscription: { endpoint: 'https://10.1.2.3/push/x', keys },
      }),
    );
    expect(lan).toMatchObject({ code: 'bad_request' });
    expect(lan.message).toMatch(/^endpoint: 10\.1\.2\.3 is a private or local address/);
    const { subscriptions } = await client.request(notificationsPushSubscriptionsList, { userId });
    expect(subscriptions).toEqual([]);
  });

  it('sends a test notification: VAPID-signed, with TTL, aes128gcm, and a payload that decrypts to {title, body, url, tag}', async () => {
    const userId = randomUUID();
    const browser = makeBrowserKeys();
    const { endpoint, subscription } = await subscribe(userId, browser);

    const { delivery } = await client.request(notificationsTest, { userId, channel: 'webpush' });

    expect(delivery).toMatchObject({ channel: 'webpush', status: 'sent', error: null });
    const [push, ...more] = pushesTo(endpoint);
    expect(more).toEqual([]);
    if (!push) throw new Error('no push arrived');
    expect(push.headers).toMatchObject({
      ttl: '86400',
      'content-encoding': 'aes128gcm',
      urgency: 'high',
    });
    expect(push.headers.topic).toMatch(/^[\w-]{32}$/);
    const { publicKey, claims } = verifyVapid(push.headers.authorization);
    expect(publicKey).toBe(vapid.publicKey);
    expect(claims.aud).toBe(pushService.url);
    expect(claims.sub).toBe(SUBJECT);
    expect(claims.exp * 1_000).toBeGreaterThan(Date.now());
    const payload = WebPushPayload.parse(JSON.parse(browser.decrypt(push.body)));
    expect(payload).toEqual({
      title: 'Jarvis test notification',
      body: 'This webpush channel works: Jarvis can reach you here.',
      url: '/settings',
      tag: `test:${delivery.id}`,
    });
    // Another browser's keys do not open it.
    expect(() => makeBrowserKeys().decrypt(push.body)).toThrow();
    const { subscriptions } = await client.request(notificationsPushSubscriptionsList, { userId });
    expect(subscriptions[0]).toMatchObject({
      id: subscription.id,
      lastSuccessAt: expect.any(String),
    });
  });

  it('pushes a reminder and a mission report through the pipeline to every device, opening their place in the UI', async () => {
    const userId = randomUUID();
    const phone = makeBrowserKeys();
    const laptop = makeBrowserKeys();
    const onPhone = (await subscribe(userId, phone, 'Phone')).endpoint;
    const onLaptop = (await subscribe(userId, laptop, 'Laptop')).endpoint;

    const reminder = reminderFired('Call the plumber');
    await publishUserEvent(fixture.bus, userId, reminder.id, reminder.event);
    const mission = missionEnded('Three flats found.');
    await publishUserEvent(fixture.bus, userId, `mission:${randomUUID()}:ended`, mission);

    await waitFor(() => pushesTo(onPhone).length === 2 && pushesTo(onLaptop).length === 2, {
      what: 'two pushes on each device',
    });
    const read = (browser: BrowserKeys, endpoint: string) =>
      pushesTo(endpoint).map((push) =>
        WebPushPayload.parse(JSON.parse(browser.decrypt(push.body))),
      );
    const onPhonePayloads = read(phone, onPhone);
    expect(read(laptop, onLaptop)).toEqual(onPhonePayloads);
    expect(onPhonePayloads).toEqual(
      expect.arrayContaining([
        {
          title: 'Reminder: Call the plumber',
          body: 'Call the plumber',
          url: '/chat',
          tag: reminder.id,
        },
        expect.objectContaining({
          title: 'Mission completed: Find a flat',
          body: 'Three flats found.',
          url: `/missions/${mission.type === 'mission_updated' ? mission.mission.id : ''}`,
        }),
      ]),
    );
    await waitFor(async () => (await fixture.statuses(userId)).sent === 2, {
      what: 'both deliveries recorded as sent',
    });
  });

  it('removes a device its push service says is gone (410), and the channel with the last one', async () => {
    const userId = randomUUID();
    const { endpoint } = await subscribe(userId, makeBrowserKeys());
    pushService.respondWith((push, response) => {
      response.writeHead(endpoint.endsWith(push.path) ? 410 : 201).end();
    });
    try {
      const { delivery } = await client.request(notificationsTest, { userId, channel: 'webpush' });
      expect(delivery.status).toBe('failed');
      expect(delivery.error).toMatch(/no longer subscribed: removed/);
    } finally {
      pushService.respondWith((_push, response) => response.writeHead(201).end());
    }
    expect(pushesTo(endpoint)).toHaveLength(1);
    const { subscriptions } = await client.request(notificationsPushSubscriptionsList, { userId });
    expect(subscriptions).toEqual([]);
    const { channels } = await client.request(notificationsChannelsList, { userId });
    expect(channels).toEqual([]);
  });

  it('retries a push service that answers 503, after its Retry-After', async () => {
    const userId = randomUUID();
    const { endpoint } = await subscribe(userId, makeBrowserKeys());
    pushService.respondWith((push, response) => {
      response.writeHead(endpoint.endsWith(push.path) ? 503 : 201, { 'retry-after': '30' }).end();
    });
    try {
      const { delivery } = await client.request(notificationsTest, { userId, channel: 'webpush' });
      // A test is tried once: what a retry would be is in its error.
      expect(delivery).toMatchObject({
        status: 'failed',
        error: `${new URL(pushService.url).host} answered 503`,
      });
    } finally {
      pushService.respondWith((_push, response) => response.writeHead(201).end());
    }
    const { subscriptions } = await client.request(notificationsPushSubscriptionsList, { userId });
    expect(subscriptions).toHaveLength(1);
  });

  it('takes its kinds by PUT once a device subscribed, and its DELETE removes every device', async () => {
    const userId = randomUUID();
    const early = await catchBusError(
      client.request(notificationsChannelsPut, {
        userId,
        channel: { type: 'webpush', events: ['reminder'] },
      }),
    );
    expect(early.code).toBe('bad_request');
    expect(early.message).toMatch(/subscribe a device first/);

    const phone = makeBrowserKeys();
    const { endpoint } = await subscribe(userId, phone);
    await subscribe(userId, makeBrowserKeys(), 'Laptop');
    const { channel } = await client.request(notificationsChannelsPut, {
      userId,
      channel: { type: 'webpush', events: ['approval_request'] },
    });
    expect(channel).toMatchObject({ type: 'webpush', devices: 2, events: ['approval_request'] });

    // Not a kind it takes any more: the pipeline makes no delivery, nothing is pushed.
    const reminder = reminderFired('Not pushed');
    await publishUserEvent(fixture.bus, userId, reminder.id, reminder.event);
    // A later event it does take arrives: by then the reminder would have, too.
    await publishUserEvent(fixture.bus, userId, `approval:${randomUUID()}`, {
      type: 'approval_requested',
      occurredAt: new Date().toISOString(),
      approval: approvalOf(),
    });
    await waitFor(() => pushesTo(endpoint).length === 1, { what: 'the approval request pushed' });
    // Events are consumed several at once: time for the reminder, had it been pushed.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(pushesTo(endpoint)).toHaveLength(1);
    const [approvalPush] = pushesTo(endpoint);
    expect(approvalPush?.headers.urgency).toBe('high');
    expect(JSON.parse(phone.decrypt(approvalPush?.body ?? Buffer.alloc(0)))).toMatchObject({
      title: 'Approve send_email?',
      url: '/approvals',
    });

    await client.request(notificationsChannelsDelete, { userId, type: 'webpush' });
    const { subscriptions } = await client.request(notificationsPushSubscriptionsList, { userId });
    expect(subscriptions).toEqual([]);
  });

  it('cuts off a push service that answers without end, and does not retry it', async () => {
    const userId = randomUUID();
    const { endpoint } = await subscribe(userId, makeBrowserKeys());
    pushService.respondWith((push, response) => {
      if (!endpoint.endsWith(push.path)) return void response.writeHead(201).end();
      // 10 MB, well past what any push service answers.
      response.writeHead(400);
      const chunk = Buffer.alloc(64 * 1_024, 'x');
      for (let sent = 0; sent < 160; sent += 1) response.write(chunk);
      response.end();
    });
    try {
      const { delivery } = await client.request(notificationsTest, { userId, channel: 'webpush' });
      expect(delivery).toMatchObject({
        status: 'failed',
        error: `${new URL(pushService.url).host} answered more than 65536 bytes`,
      });
    } finally {
      pushService.respondWith((_push, response) => response.writeHead(201).end());
    }
  });

  it('unsubscribes a device by id; another user cannot', async () => {
    const userId = randomUUID();
    const { subscription } = await subscribe(userId, makeBrowserKeys());
    const stranger = await catchBusError(
      client.request(notificationsPushUnsubscribe, { userId: randomUUID(), id: subscription.id }),
    );
    expect(stranger.code).toBe('not_found');
    await client.request(notificationsPushUnsubscribe, { userId, id: subscription.id });
    const { channels } = await client.request(notificationsChannelsList, { userId });
    expect(channels).toEqual([]);
  });

  it('never connects to a push endpoint whose name resolves to an address the guard refuses', async () => {
    const userId = randomUUID();
    const browser = makeBrowserKeys();
    // Stored as a subscription saved before the operator narrowed OUTBOUND_ALLOWED_HOSTS would be.
    const endpoint = `${pushService.url.replace('127.0.0.1', 'localhost')}/push/${randomUUID()}`;
    await savePushSubscription(fixture.deps.pool, {
      id: randomUUID(),
      userId,
      endpoint,
      ...browser.keys,
      deviceName: undefined,
    });
    const channel: StoredChannel = {
      userId,
      type: 'webpush',
      config: { type: 'webpush' },
      secrets: {},
      events: ['reminder'],
      isConfirmed: true,
      updatedAt: new Date(),
    };
    const strict = createWebPushSender({
      pool: fixture.deps.pool,
      guard: createOutboundGuard([]),
      vapid,
      logger,
      ca: pushService.ca,
    });
    const before = pushService.pushes.length;

    const error = await strict
      .send(
        channel,
        { eventId: 'e', kind: 'reminder', occurredAt: '', title: 't', text: 'x' },
        AbortSignal.timeout(5_000),
      )
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );

    expect(error).toMatchObject({ isRetryable: false });
    expect(String(error)).toMatch(/localhost is .*a private or local address/);
    expect(pushService.pushes.length).toBe(before);
  });
});

describe('the push payload', () => {
  it('fits a push message whatever the text, and opens / when the notification names no place', () => {
    const payload = pushPayload({
      eventId: 'note:1',
      kind: 'note',
      occurredAt: '2026-11-29T00:00:00.000Z',
      title: 'A long note',
      text: '🦊\u0001'.repeat(5_000),
    });
    expect(payload.url).toBe('/');
    expect(payload.tag).toBe('note:1');
    expect(Buffer.byteLength(JSON.stringify(payload))).toBeLessThanOrEqual(3_000);
    expect(payload.body.endsWith('…')).toBe(true);
  });
});

import {
  ChannelsListResponse,
  PushKeyResponse,
  PushSubscriptionResponse,
  PushSubscriptionsListResponse,
  ScheduleResponse,
  TestResponse,
  WebPushPayload,
} from '@jarvis/contracts';
import {
  makeBrowserKeys,
  type PushServiceStandIn,
  type StackFixture,
  startPushServiceStandIn,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Web Push through the whole stack. Headless Chromium cannot subscribe without a browser
// vendor's push service, so the test is the browser: it makes a subscription's keys, registers
// it through the API pointing at a local HTTPS push service (on loopback, which the stack allows;
// its certificate trusted through NODE_EXTRA_CA_CERTS), and reads what arrives there as a push
// service would: the VAPID signature, TTL, aes128gcm, and a payload that decrypts with its keys.
describe('Web Push through the whole stack', () => {
  let fixture: StackFixture;
  let pushService: PushServiceStandIn;
  let key: string;

  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? (JSON.parse(text) as unknown) : undefined };
  };

  beforeAll(async () => {
    pushService = await startPushServiceStandIn();
    fixture = await startStackFixture({
      NODE_EXTRA_CA_CERTS: pushService.caFile,
      VAPID_SUBJECT: 'mailto:ops@jarvis.example.com',
    });
    key = (await fixture.createUser('paz')).apiKey;
  }, 180_000);

  afterAll(async () => {
    await fixture?.close();
    await pushService?.close();
  });

  it('registers a device through the API and pushes a test and a reminder to it, signed and encrypted', async () => {
    const keyReply = await api('GET', '/v1/notifications/push/key');
    expect(keyReply.status).toBe(200);
    const { publicKey } = PushKeyResponse.parse(keyReply.body);

    const browser = makeBrowserKeys();
    const endpoint = `${pushService.url}/wpush/v2/e2e-device`;
    const created = await api('POST', '/v1/notifications/push/subscriptions', {
      endpoint,
      expirationTime: null,
      keys: browser.keys,
      deviceName: 'Test phone',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { subscription } = PushSubscriptionResponse.parse(created.body);
    expect(subscription).toMatchObject({
      deviceName: 'Test phone',
      endpointHost: new URL(pushService.url).host,
    });
    const listed = PushSubscriptionsListResponse.parse(
      (await api('GET', '/v1/notifications/push/subscriptions')).body,
    );
    expect(listed.subscriptions.map((device) => device.id)).toEqual([subscription.id]);
    const channels = ChannelsListResponse.parse(
      (await api('GET', '/v1/notifications/channels')).body,
    );
    expect(channels.channels).toEqual([expect.objectContaining({ type: 'webpush', devices: 1 })]);

    // Not https, or a private address the install does not allow: refused at once.
    const plain = await api('POST', '/v1/notifications/push/subscriptions', {
      endpoint: 'http://push.example.com/x',
      keys: browser.keys,
    });
    expect(plain.status).toBe(400);
    const lan = await api('POST', '/v1/notifications/push/subscriptions', {
      endpoint: 'https://192.168.7.7/x',
      keys: browser.keys,
    });
    expect(lan.status).toBe(400);
    expect(JSON.stringify(lan.body)).toMatch(/private or local address/);

    const tested = await api('POST', '/v1/notifications/test', { channel: 'webpush' });
    expect(tested.status, JSON.stringify(tested.body)).toBe(200);
    const { delivery } = TestResponse.parse(tested.body);
    expect(delivery).toMatchObject({ status: 'sent', error: null });

    const [push] = pushService.pushes;
    if (!push) throw new Error('no push arrived');
    expect(push.path).toBe('/wpush/v2/e2e-device');
    expect(push.headers).toMatchObject({ ttl: '86400', 'content-encoding': 'aes128gcm' });
    const authorization = push.headers.authorization ?? '';
    expect(authorization).toMatch(/^vapid t=[\w-]+\.[\w-]+\.[\w-]+, k=[\w-]+$/);
    const vapidKey = /k=([\w-]+)$/.exec(authorization)?.[1];
    expect(vapidKey).toBe(publicKey);
    const claims = JSON.parse(
      Buffer.from(authorization.split('.')[1] ?? '', 'base64url').toString('utf8'),
    );
    expect(claims).toMatchObject({ aud: pushService.url, sub: 'mailto:ops@jarvis.example.com' });
    expect(WebPushPayload.parse(JSON.parse(browser.decrypt(push.body)))).toEqual({
      title: 'Jarvis test notification',
      body: 'This webpush channel works: Jarvis can reach you here.',
      url: '/settings',
      tag: `test:${delivery.id}`,
    });

    // A reminder made through the API, fired by the scheduler, pushed by the pipeline.
    const schedule = await api('POST', '/v1/schedules', {
      kind: 'once',
      at: new Date(Date.now() + 2_000).toISOString(),
      action: { type: 'remind', text: 'Water the basil' },
    });
    expect(schedule.status, JSON.stringify(schedule.body)).toBe(201);
    ScheduleResponse.parse(schedule.body);
    const reminder = await waitFor(() => pushService.pushes[1], {
      timeoutMs: 30_000,
      what: 'the reminder at the push service',
    });
    expect(reminder.headers.urgency).toBe('high');
    expect(WebPushPayload.parse(JSON.parse(browser.decrypt(reminder.body)))).toMatchObject({
      body: 'Water the basil',
      url: '/chat',
    });

    // The device removed: the channel goes with it.
    const removed = await api('DELETE', `/v1/notifications/push/subscriptions/${subscription.id}`);
    expect(removed.status).toBe(204);
    const after = ChannelsListResponse.parse((await api('GET', '/v1/notifications/channels')).body);
    expect(after.channels).toEqual([]);
  });
});

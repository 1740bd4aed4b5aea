import { createHmac, randomBytes } from 'node:crypto';
import {
  ChannelResponse,
  ChannelsListResponse,
  DeliveriesListResponse,
  SECRET_MASK,
  SettingsResponse,
  TestResponse,
} from '@jarvis/contracts';
import { type HttpRecorder, startHttpRecorder } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser } from '../services/api-keys';
import {
  badRequest,
  type Reply,
  type RouterFixture,
  startRouterFixture,
  type TestUser,
} from './router-fixture';

// /v1/notifications through the gateway, in front of the real tools service as its own process
// (its database schema, sealed secrets, senders): auth, a 400 naming the field, each user's
// channels their own, and secrets never answered. Local HTTP servers stand in for a webhook
// receiver and an ntfy server; OUTBOUND_ALLOWED_HOSTS lets the tools service reach them on
// loopback, and only there.
const SECRET_KEY = randomBytes(32).toString('base64');
const WEBHOOK_SECRET = `whsec-${randomBytes(12).toString('hex')}`;
const NTFY_TOKEN = `tk_${randomBytes(12).toString('hex')}`;

let harness: RouterFixture;
let webhook: HttpRecorder;
let ntfy: HttpRecorder;
// Every answer of the file, to look for secrets in.
const answers: string[] = [];

beforeAll(async () => {
  webhook = await startHttpRecorder();
  ntfy = await startHttpRecorder();
  harness = await startRouterFixture('/v1', {
    services: ['tools'],
    // Every log line there is, for the secret scan at the end.
    serviceEnv: {
      JARVIS_SECRET_KEY: SECRET_KEY,
      OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
      LOG_LEVEL: 'trace',
    },
  });
});

afterAll(async () => {
  await harness?.stop();
  await webhook?.close();
  await ntfy?.close();
});

async function call(
  method: string,
  route: string,
  options?: { key?: string | undefined; body?: unknown },
): Promise<Reply> {
  const reply = await harness.call(method, route, options);
  answers.push(JSON.stringify(reply.body ?? null));
  return reply;
}

async function newUser(name: string): Promise<TestUser> {
  const created = await createUser(harness.db.pool, name);
  return { id: created.user.id, key: created.apiKey };
}

async function channels(key: string) {
  const reply = await call('GET', '/notifications/channels', { key });
  expect(reply.status).toBe(200);
  return ChannelsListResponse.parse(reply.body).channels;
}

async function putChannel(key: string, type: string, body: unknown) {
  const reply = await call('PUT', `/notifications/channels/${type}`, { key, body });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return ChannelResponse.parse(reply.body).channel;
}

async function deliveries(key: string) {
  const reply = await call('GET', '/notifications/deliveries', { key });
  expect(reply.status).toBe(200);
  return DeliveriesListResponse.parse(reply.body).deliveries;
}

const webhookBody = () => ({ url: `${webhook.url}/hook`, secret: WEBHOOK_SECRET });

describe('without a key', () => {
  it.each([
    ['GET', '/notifications/channels'],
    ['PUT', '/notifications/channels/webhook'],
    ['DELETE', '/notifications/channels/webhook'],
    ['POST', '/notifications/channels/email/confirm'],
    ['POST', '/notifications/test'],
    ['GET', '/notifications/deliveries'],
    ['GET', '/notifications/settings'],
    ['PUT', '/notifications/settings'],
    ['POST', '/notifications/telegram/link'],
  ])('%s %s answers 401', async (method, route) => {
    const body = method === 'GET' || method === 'DELETE' ? undefined : {};
    expect((await call(method, route, { body })).status).toBe(401);
  });
});

describe('channels', () => {
  it('starts with none', async () => {
    expect(await channels((await newUser('fresh')).key)).toEqual([]);
  });

  it('keeps a webhook, its secret shown only as the mask', async () => {
    const user = await newUser('hooked');
    const saved = await putChannel(user.key, 'webhook', webhookBody());

    expect(saved).toEqual({
      type: 'webhook',
      url: `${webhook.url}/hook`,
      format: 'jarvis',
      secret: SECRET_MASK,
      events: expect.arrayContaining(['reminder', 'approval_request']),
      updatedAt: expect.any(String),
    });
    expect(await channels(user.key)).toEqual([saved]);
  });

  it('keeps a stored ntfy token when a PUT leaves it out, and sends with it', async () => {
    const user = await newUser('pushed');
    const body = { url: ntfy.url, topic: 'jarvis-alerts', priority: 4 };
    expect(await putChannel(user.key, 'ntfy', { ...body, token: NTFY_TOKEN })).toMatchObject({
      ...body,
      token: SECRET_MASK,
    });
    expect(await putChannel(user.key, 'ntfy', { ...body, priority: 5 })).toMatchObject({
      priority: 5,
      token: SECRET_MASK,
    });

    const tested = await call('POST', '/notifications/test', {
      key: user.key,
      body: { channel: 'ntfy' },
    });
    expect(tested.status, JSON.stringify(tested.body)).toBe(200);
    expect(TestResponse.parse(tested.body).delivery).toMatchObject({
      channel: 'ntfy',
      status: 'sent',
      error: null,
    });
    const request = ntfy.requests.at(-1);
    expect(request?.path).toBe('/jarvis-alerts');
    expect(request?.headers.authorization).toBe(`Bearer ${NTFY_TOKEN}`);
  });

  it('removes a channel with 204, and a second time answers 404', async () => {
    const user = await newUser('removing');
    await putChannel(user.key, 'webhook', webhookBody());

    expect(
      (await call('DELETE', '/notifications/channels/webhook', { key: user.key })).status,
    ).toBe(204);
    expect(await channels(user.key)).toEqual([]);
    expect(
      (await call('DELETE', '/notifications/channels/webhook', { key: user.key })).status,
    ).toBe(404);
  });

  // Bodies are made in the test: the stand-ins' addresses are known only once they listen.
  it.each<[string, string, () => unknown, RegExp]>([
    ['a URL that is not one', 'webhook', () => ({ ...webhookBody(), url: 'not a url' }), /^url: /],
    [
      'a URL of another scheme',
      'webhook',
      () => ({ ...webhookBody(), url: 'ftp://example.com/x' }),
      /^url: /,
    ],
    ['a short secret', 'webhook', () => ({ ...webhookBody(), secret: 'short' }), /secret/],
    ['a new webhook without a secret', 'webhook', () => ({ url: webhookBody().url }), /secret/],
    // Not on OUTBOUND_ALLOWED_HOSTS: refused as web_fetch refuses it.
    [
      'a private address',
      'webhook',
      () => ({ ...webhookBody(), url: 'http://10.20.30.40/hook' }),
      /url/,
    ],
    ['a topic with spaces', 'ntfy', () => ({ url: ntfy.url, topic: 'my topic' }), /^topic: /],
    [
      'a priority out of range',
      'ntfy',
      () => ({ url: ntfy.url, topic: 't', priority: 9 }),
      /^priority: /,
    ],
    ['an address that is not one', 'email', () => ({ to: 'someone' }), /^to: /],
    ['a field of no channel', 'webhook', () => ({ ...webhookBody(), colour: 'red' }), /colour/],
    [
      'an unknown kind of event',
      'webhook',
      () => ({ ...webhookBody(), events: ['weather'] }),
      /^events/,
    ],
    ['a type that is set up otherwise', 'telegram', () => ({ url: ntfy.url }), /type/],
  ])('answers 400 naming the field to %s, storing nothing', async (_label, type, body, message) => {
    const user = await newUser('careless');

    expect(
      await call('PUT', `/notifications/channels/${type}`, { key: user.key, body: body() }),
    ).toEqual(badRequest(message));
    expect(await channels(user.key)).toEqual([]);
  });
});

describe("a user's channels are their own", () => {
  it("lists, tests, removes and tells of no other user's channel", async () => {
    const owner = await newUser('owner');
    const other = await newUser('other');
    await putChannel(owner.key, 'webhook', webhookBody());
    const tested = await call('POST', '/notifications/test', {
      key: owner.key,
      body: { channel: 'webhook' },
    });
    expect(tested.status).toBe(200);

    expect(await channels(other.key)).toEqual([]);
    expect(await deliveries(other.key)).toEqual([]);
    expect(
      (await call('POST', '/notifications/test', { key: other.key, body: { channel: 'webhook' } }))
        .status,
    ).toBe(404);
    expect(
      (await call('DELETE', '/notifications/channels/webhook', { key: other.key })).status,
    ).toBe(404);
    expect(await channels(owner.key)).toHaveLength(1);
    expect(await deliveries(owner.key)).toEqual([
      expect.objectContaining({ kind: 'test', channel: 'webhook', status: 'sent' }),
    ]);
  });
});

describe('test and deliveries', () => {
  it('sends a signed test to the webhook and records it', async () => {
    const user = await newUser('tester');
    await putChannel(user.key, 'webhook', webhookBody());
    const before = webhook.requests.length;

    const reply = await call('POST', '/notifications/test', {
      key: user.key,
      body: { channel: 'webhook' },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const { delivery } = TestResponse.parse(reply.body);
    expect(delivery).toMatchObject({ channel: 'webhook', status: 'sent', error: null });
    expect(webhook.requests.length).toBe(before + 1);
    const request = webhook.requests.at(-1);
    const timestamp = String(request?.headers['x-jarvis-timestamp']);
    const signature = createHmac('sha256', WEBHOOK_SECRET)
      .update(`${timestamp}.${request?.body}`)
      .digest('hex');
    expect(request?.headers['x-jarvis-signature']).toBe(`sha256=${signature}`);
    expect(Math.abs(Number(timestamp) - Date.now() / 1_000)).toBeLessThan(60);
    expect(JSON.parse(request?.body ?? '')).toMatchObject({
      id: expect.any(String),
      type: 'test',
      occurredAt: expect.any(String),
      title: expect.any(String),
      text: expect.any(String),
    });

    expect(await deliveries(user.key)).toEqual([
      expect.objectContaining({ id: delivery.id, kind: 'test', status: 'sent', attempts: 1 }),
    ]);
  });

  it('answers 404 to a test of a channel not set up, and 400 to one that is no channel', async () => {
    const user = await newUser('untested');
    expect(
      (await call('POST', '/notifications/test', { key: user.key, body: { channel: 'ntfy' } }))
        .status,
    ).toBe(404);
    expect(
      await call('POST', '/notifications/test', { key: user.key, body: { channel: 'fax' } }),
    ).toEqual(badRequest(/^channel: /));
  });

  it('refuses a bad page of the history', async () => {
    const user = await newUser('pager');
    expect(await call('GET', '/notifications/deliveries?limit=0', { key: user.key })).toEqual(
      badRequest(/^limit: /),
    );
    expect(await call('GET', '/notifications/deliveries?channel=fax', { key: user.key })).toEqual(
      badRequest(/^channel: /),
    );
  });
});

describe('settings', () => {
  it("keeps quiet hours, read in the user's zone", async () => {
    const user = await newUser('sleeper');
    const initial = await call('GET', '/notifications/settings', { key: user.key });
    expect(initial).toEqual({
      status: 200,
      body: { settings: { quietHours: null, timeZone: 'UTC' } },
    });
    expect(
      (await call('PATCH', '/me', { key: user.key, body: { timeZone: 'Europe/Oslo' } })).status,
    ).toBe(200);

    const quietHours = { start: '22:30', end: '07:00' };
    const saved = await call('PUT', '/notifications/settings', {
      key: user.key,
      body: { quietHours },
    });
    expect(saved.status).toBe(200);
    expect(SettingsResponse.parse(saved.body).settings).toEqual({
      quietHours,
      timeZone: 'Europe/Oslo',
    });
    expect((await call('GET', '/notifications/settings', { key: user.key })).body).toEqual(
      saved.body,
    );

    const cleared = await call('PUT', '/notifications/settings', {
      key: user.key,
      body: { quietHours: null },
    });
    expect(SettingsResponse.parse(cleared.body).settings.quietHours).toBeNull();
  });

  it('answers 400 naming the field to a time that is not one', async () => {
    const user = await newUser('insomniac');
    expect(
      await call('PUT', '/notifications/settings', {
        key: user.key,
        body: { quietHours: { start: '25:00', end: '07:00' } },
      }),
    ).toEqual(badRequest(/^quietHours\.start: /));
  });
});

describe('Telegram and email on an install without a bot or SMTP', () => {
  it('answers 503 to a link code', async () => {
    const user = await newUser('telegrammer');
    const reply = await call('POST', '/notifications/telegram/link', { key: user.key });
    expect(reply).toEqual({
      status: 503,
      // Said by the tools service: not the gateway's answer when nothing serves the RPC.
      body: { error: { code: 'unavailable', message: expect.stringMatching(/telegram|bot/i) } },
    });
  });

  it('answers 400 naming the field to a code that is not six digits', async () => {
    const user = await newUser('confirmer');
    expect(
      await call('POST', '/notifications/channels/email/confirm', {
        key: user.key,
        body: { code: '12ab' },
      }),
    ).toEqual(badRequest(/^code: /));
  });
});

// Last: every answer of the file, errors included, and all the tools service logged.
describe('secrets', () => {
  it('appear in no answer and no log line', () => {
    expect(answers.length).toBeGreaterThan(40);
    const lines = harness.services.output('tools').split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(1);
    for (const secret of [WEBHOOK_SECRET, NTFY_TOKEN, SECRET_KEY]) {
      expect(answers.filter((answer) => answer.includes(secret))).toEqual([]);
      expect(lines.filter((line) => line.includes(secret))).toEqual([]);
    }
  });
});

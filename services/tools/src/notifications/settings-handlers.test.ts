import { randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { Bus } from '@jarvis/bus';
import { catchBusError, connectTestBus } from '@jarvis/bus/testing';
import {
  type ChannelSettings,
  notificationsChannelsDelete,
  notificationsChannelsList,
  notificationsChannelsPut,
  notificationsEmailConfirm,
  notificationsSettingsGet,
  notificationsSettingsPut,
  SECRET_MASK,
} from '@jarvis/contracts';
import { createOutboundGuard, OutboundAllowedHosts, type OutboundGuard } from '@jarvis/net-guard';
import { createLogger } from '@jarvis/telemetry';
import { type TestDatabase, uniqueNamespace } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { startToolsDatabase } from '../tools-database-fixture';
import { getChannel } from './channels-repository';
import { createSecretBox } from './secret-box';
import { registerSettingsHandlers } from './settings-handlers';
import { type SmtpServerFixture, startSmtpServer } from './smtp-server-fixture';

// The settings RPCs through the real bus, on a real database, against a real SMTP server (the
// install's, and a user's own with a login); loopback stands in for a self-hosted server the
// operator allowed.
const ALLOWED = createOutboundGuard(OutboundAllowedHosts.parse('127.0.0.1'));
const LOGIN = { user: 'owner@example.net', password: 'own-smtp-password-31337' };
const NTFY_TOKEN = 'tk_settings_token_0123456789';
const WEBHOOK_SECRET = 'webhook-secret-0123456789abcdef';

let db: TestDatabase;
let installSmtp: SmtpServerFixture;
let ownSmtp: SmtpServerFixture;
const box = createSecretBox(randomBytes(32));
const logLines: string[] = [];
const served: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  [db, installSmtp, ownSmtp] = await Promise.all([
    startToolsDatabase(),
    startSmtpServer(),
    startSmtpServer(LOGIN),
  ]);
});
afterAll(async () => {
  await Promise.all(served.map((server) => server.close()));
  await Promise.all([db?.stop(), installSmtp?.close(), ownSmtp?.close()]);
  // No secret was ever logged, whatever the test did with it.
  const logged = logLines.join('');
  expect(logged).toContain('notification channel saved');
  for (const secret of [NTFY_TOKEN, WEBHOOK_SECRET, LOGIN.password]) {
    expect(logged).not.toContain(secret);
  }
});

// The handlers in a namespace of their own, with this guard, and a client to ask them.
async function serve(guard: OutboundGuard = ALLOWED): Promise<Bus> {
  const namespace = uniqueNamespace('notify-settings');
  const [server, client] = await Promise.all([
    connectTestBus(namespace),
    connectTestBus(namespace),
  ]);
  const logger = createLogger(
    'tools-test',
    'info',
    new Writable({
      write(chunk, _encoding, done) {
        logLines.push(String(chunk));
        done();
      },
    }),
  );
  const subscriptions = registerSettingsHandlers({
    bus: server,
    pool: db.pool,
    box,
    guard,
    logger,
    installSmtp: {
      host: installSmtp.host,
      port: installSmtp.port,
      security: 'none',
      from: 'jarvis@example.net',
    },
    smtpTimeoutMs: 3_000,
  });
  await server.nc.flush();
  served.push({
    async close() {
      for (const subscription of subscriptions) subscription.unsubscribe();
      await Promise.all([client.close(), server.close()]);
    },
  });
  return client;
}

const TZ = 'Europe/Paris';
const put = (client: Bus, userId: string, channel: z.input<typeof ChannelSettings>) =>
  client.request(
    notificationsChannelsPut,
    { userId, userTimeZone: TZ, channel },
    { timeoutMs: 15_000 },
  );

let client: Bus;
let strict: Bus;
beforeAll(async () => {
  [client, strict] = await Promise.all([serve(), serve(createOutboundGuard([]))]);
});

describe('ntfy and webhook channels', () => {
  it('answers the mask for a secret, seals it, and keeps it when a PUT leaves it out', async () => {
    const userId = randomUUID();
    const ntfy = {
      type: 'ntfy' as const,
      url: 'http://127.0.0.1:8090',
      topic: 'alerts',
      token: NTFY_TOKEN,
    };

    const { channel } = await put(client, userId, ntfy);

    expect(channel).toMatchObject({
      type: 'ntfy',
      url: ntfy.url,
      topic: 'alerts',
      priority: 3,
      token: SECRET_MASK,
    });
    expect(JSON.stringify(channel)).not.toContain(NTFY_TOKEN);
    const raw = await db.pool.query(
      'SELECT secrets FROM tools.notification_channels WHERE user_id = $1',
      [userId],
    );
    expect(raw.rows[0].secrets.toString('latin1')).not.toContain(NTFY_TOKEN);

    await put(client, userId, { type: 'ntfy', url: ntfy.url, topic: 'renamed', priority: 5 });
    expect((await getChannel(db.pool, box, userId, 'ntfy'))?.secrets).toEqual({
      token: NTFY_TOKEN,
    });
    // Another server does not get the old token.
    const moved = await put(client, userId, {
      type: 'ntfy',
      url: 'http://127.0.0.1:9999',
      topic: 'renamed',
      priority: 5,
    });
    expect(moved.channel).not.toHaveProperty('token');
    expect((await getChannel(db.pool, box, userId, 'ntfy'))?.secrets).toEqual({});
  });

  it('needs a secret for a new webhook, keeps it after, and lists every channel masked', async () => {
    const userId = randomUUID();
    const webhook = {
      type: 'webhook' as const,
      url: 'http://127.0.0.1:8091/hook',
      format: 'slack' as const,
    };

    const missing = await catchBusError(put(client, userId, webhook));
    expect(missing.code).toBe('bad_request');
    expect(missing.message).toMatch(/^secret: /);

    await put(client, userId, {
      ...webhook,
      secret: WEBHOOK_SECRET,
      events: ['reminder', 'note', 'reminder'],
    });
    await put(client, userId, { ...webhook, format: 'discord' });

    const { channels } = await client.request(notificationsChannelsList, {
      userId,
      userTimeZone: TZ,
    });
    expect(channels).toEqual([
      {
        type: 'webhook',
        url: webhook.url,
        format: 'discord',
        secret: SECRET_MASK,
        events: ['reminder', 'note'],
        updatedAt: expect.any(String),
      },
    ]);
    expect((await getChannel(db.pool, box, userId, 'webhook'))?.secrets).toEqual({
      secret: WEBHOOK_SECRET,
    });
    // Nobody else sees it.
    expect(
      (await client.request(notificationsChannelsList, { userId: randomUUID(), userTimeZone: TZ }))
        .channels,
    ).toEqual([]);
  });

  it('refuses a destination on a private address the operator has not allowed, or one that does not resolve', async () => {
    const userId = randomUUID();
    const local = await catchBusError(
      put(strict, userId, {
        type: 'webhook',
        url: 'http://127.0.0.1:8091/hook',
        secret: WEBHOOK_SECRET,
      }),
    );
    expect(local.code).toBe('bad_request');
    expect(local.message).toMatch(/^url: 127\.0\.0\.1 is a private or local address/);

    const named = await catchBusError(
      put(strict, userId, { type: 'ntfy', url: 'http://localhost:8090', topic: 't' }),
    );
    expect(named.message).toMatch(
      /^url: localhost is (127\.0\.0\.1|::1), a private or local address/,
    );

    const nowhere = await catchBusError(
      put(client, userId, { type: 'ntfy', url: 'https://no-such-host.invalid', topic: 't' }),
    );
    expect(nowhere.message).toBe('url: no-such-host.invalid cannot be resolved');

    const login = await catchBusError(
      put(client, userId, { type: 'ntfy', url: 'http://user:pw@127.0.0.1:8090', topic: 't' }),
    );
    expect(login.message).toMatch(/^url: a login in the URL/);
    expect(
      (await client.request(notificationsChannelsList, { userId, userTimeZone: TZ })).channels,
    ).toEqual([]);
  });

  it('deletes a channel once', async () => {
    const userId = randomUUID();
    await put(client, userId, { type: 'ntfy', url: 'http://127.0.0.1:8090', topic: 't' });

    expect(
      await client.request(notificationsChannelsDelete, { userId, userTimeZone: TZ, type: 'ntfy' }),
    ).toEqual({});
    const again = await catchBusError(
      client.request(notificationsChannelsDelete, { userId, userTimeZone: TZ, type: 'ntfy' }),
    );
    expect(again.code).toBe('not_found');
  });
});

describe("email through the install's SMTP", () => {
  function codeMailedTo(address: string): string {
    const mail = installSmtp.mails.findLast(({ envelope }) => envelope.to.includes(address));
    const code = /\b(\d{6})\b/.exec(mail?.mail.subject ?? '')?.[1];
    if (!code) throw new Error(`no code mailed to ${address}`);
    return code;
  }

  it('mails a code, sends nothing until it is confirmed, and limits the tries', async () => {
    const userId = randomUUID();
    const to = `user-${userId.slice(0, 8)}@example.org`;

    const saved = await put(client, userId, { type: 'email', to });
    expect(saved.channel).toMatchObject({ type: 'email', to, isConfirmed: false });
    const code = codeMailedTo(to);
    const mail = installSmtp.mails.findLast(({ envelope }) => envelope.to.includes(to));
    expect(mail?.envelope.from).toBe('jarvis@example.net');
    expect(mail?.mail.text).toContain(`Enter ${code} in Jarvis's Settings`);

    const wrong = code === '000000' ? '111111' : '000000';
    const confirm = (value: string) =>
      client.request(notificationsEmailConfirm, { userId, userTimeZone: TZ, code: value });
    const first = await catchBusError(confirm(wrong));
    expect(first).toMatchObject({
      code: 'bad_request',
      message: 'code: wrong code (4 tries left)',
    });

    const confirmed = await confirm(code);
    expect(confirmed.channel).toMatchObject({ type: 'email', to, isConfirmed: true });
    // Used up.
    expect((await catchBusError(confirm(code))).message).toMatch(/^code: no code is waiting/);

    // Saving the same address again keeps it confirmed and mails nothing.
    const mails = installSmtp.mails.length;
    const again = await put(client, userId, { type: 'email', to, events: ['reminder'] });
    expect(again.channel).toMatchObject({ isConfirmed: true, events: ['reminder'] });
    expect(installSmtp.mails).toHaveLength(mails);
  });

  it('takes five tries at most, and mails no second code within a minute', async () => {
    const userId = randomUUID();
    const to = `tries-${userId.slice(0, 8)}@example.org`;
    await put(client, userId, { type: 'email', to });
    const code = codeMailedTo(to);
    const wrong = code === '000000' ? '111111' : '000000';

    for (let i = 0; i < 5; i += 1) {
      await catchBusError(
        client.request(notificationsEmailConfirm, { userId, userTimeZone: TZ, code: wrong }),
      );
    }
    const blocked = await catchBusError(
      client.request(notificationsEmailConfirm, { userId, userTimeZone: TZ, code }),
    );
    expect(blocked.message).toMatch(/^code: too many wrong codes/);

    const resend = await catchBusError(put(client, userId, { type: 'email', to: `other-${to}` }));
    expect(resend.code).toBe('rate_limited');
  });
});

describe("email through the user's own SMTP", () => {
  const own = (password?: string) => ({
    type: 'email' as const,
    to: 'owner@example.org',
    smtp: {
      host: ownSmtp.host,
      port: ownSmtp.port,
      security: 'none' as const,
      user: LOGIN.user,
      ...(password ? { password } : {}),
    },
  });

  it('checks the login when saved, needs no code, and masks the password', async () => {
    const userId = randomUUID();
    const refused = await catchBusError(put(client, userId, own('not-the-password')));
    expect(refused.code).toBe('bad_request');
    expect(refused.message).toMatch(/^smtp\.password: 127\.0\.0\.1 refused the login/);
    expect(refused.message).not.toContain('not-the-password');

    const { channel } = await put(client, userId, own(LOGIN.password));
    expect(channel).toMatchObject({
      type: 'email',
      isConfirmed: true,
      smtp: { host: ownSmtp.host, port: ownSmtp.port, user: LOGIN.user, password: SECRET_MASK },
    });
    expect(JSON.stringify(channel)).not.toContain(LOGIN.password);
    // Left out, the stored password is kept (and checked again).
    await put(client, userId, { ...own(), to: 'elsewhere@example.org' });
    expect((await getChannel(db.pool, box, userId, 'email'))?.secrets).toEqual({
      smtpPassword: LOGIN.password,
    });
  });

  it('refuses a server that cannot be reached, or is on a private address the operator has not allowed', async () => {
    const userId = randomUUID();
    const closed = await startSmtpServer();
    await closed.close();
    const unreachable = await catchBusError(
      put(client, userId, {
        type: 'email',
        to: 'a@example.org',
        smtp: { host: '127.0.0.1', port: closed.port, security: 'none' },
      }),
    );
    expect(unreachable.message).toMatch(/^smtp\.host: 127\.0\.0\.1 could not be reached/);

    const connections = ownSmtp.connections;
    const local = await catchBusError(put(strict, userId, own(LOGIN.password)));
    expect(local.message).toMatch(/^smtp\.host: 127\.0\.0\.1 is a private or local address/);
    expect(ownSmtp.connections).toBe(connections);
  });
});

describe('settings', () => {
  it('answers no quiet hours in the zone the request carries, and keeps what is saved per user', async () => {
    const userId = randomUUID();
    expect(await client.request(notificationsSettingsGet, { userId, userTimeZone: TZ })).toEqual({
      settings: { quietHours: null, timeZone: TZ },
    });

    const saved = await client.request(notificationsSettingsPut, {
      userId,
      userTimeZone: 'America/New_York',
      quietHours: { start: '22:30', end: '07:00' },
    });
    expect(saved.settings).toEqual({
      quietHours: { start: '22:30', end: '07:00' },
      timeZone: 'America/New_York',
    });

    // Any later request of the user brings their zone along, and it is kept.
    await client.request(notificationsChannelsList, { userId, userTimeZone: 'Asia/Tokyo' });
    expect(
      await client.request(notificationsSettingsGet, { userId, userTimeZone: 'Asia/Tokyo' }),
    ).toEqual({
      settings: { quietHours: { start: '22:30', end: '07:00' }, timeZone: 'Asia/Tokyo' },
    });
    const cleared = await client.request(notificationsSettingsPut, {
      userId,
      userTimeZone: 'Asia/Tokyo',
      quietHours: null,
    });
    expect(cleared.settings.quietHours).toBeNull();
    expect(
      (
        await client.request(notificationsSettingsGet, {
          userId: randomUUID(),
          userTimeZone: 'UTC',
        })
      ).settings,
    ).toEqual({
      quietHours: null,
      timeZone: 'UTC',
    });
  });
});

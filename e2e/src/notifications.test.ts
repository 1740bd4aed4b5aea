import { createHmac, randomBytes } from 'node:crypto';
import {
  ChannelResponse,
  ChannelsListResponse,
  DeliveriesListResponse,
  type Delivery,
  MissionResponse,
  ScheduleResponse,
  SECRET_MASK,
  TelegramLinkResponse,
  TestResponse,
} from '@jarvis/contracts';
import {
  type HttpRecorder,
  SERVICE_NAMES,
  type StackFixture,
  sentMessages,
  startHttpRecorder,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scanForSecrets } from './secret-scan';
import { confirmationCode, type SmtpStandIn, startSmtpStandIn } from './smtp-stand-in';
import { startTelegramStandIn, type TelegramStandIn } from './telegram-stand-in';

// Notifications through the whole stack: a reminder made with POST /v1/schedules is fired by
// the scheduler, told as a user event, turned into a delivery by the tools service and posted,
// signed, to the user's webhook (a local HTTP server), and to a linked Telegram chat (a stand-in
// of the Bot API). Then the secret scan: channels are set up with known secrets (a webhook
// secret, an ntfy token, SMTP passwords, the install's key and its bot's token) and used, and
// none of them may appear in any answer of the API or any log line of any service of the run,
// at the most talkative log level.
const SECRETS = {
  secretKey: randomBytes(32).toString('base64'),
  webhookSecret: `whsec-${randomBytes(16).toString('hex')}`,
  ntfyToken: `tk_${randomBytes(16).toString('hex')}`,
  userSmtpPassword: `smtp-pw-${randomBytes(12).toString('hex')}`,
  wrongSmtpPassword: `wrong-pw-${randomBytes(12).toString('hex')}`,
  installSmtpPassword: `install-pw-${randomBytes(12).toString('hex')}`,
  botToken: `7000001:${randomBytes(16).toString('hex')}`,
};
const CHAT_ID = 515_151;
const SMTP_USER = 'mailer';
const INSTALL_SMTP_USER = 'jarvis';

describe('notifications through the whole stack', () => {
  let fixture: StackFixture;
  let smtp: SmtpStandIn;
  let webhook: HttpRecorder;
  let ntfy: HttpRecorder;
  let telegram: TelegramStandIn;
  let key: string;
  // Every answer of the API in this run (status, headers and body), for the scan.
  const answers: string[] = [];

  const api = async (apiKey: string, method: string, path: string, body?: unknown) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    answers.push(`${response.status} ${JSON.stringify([...response.headers])} ${text}`);
    return { status: response.status, body: text ? (JSON.parse(text) as unknown) : undefined };
  };
  const deliveries = async (apiKey: string): Promise<Delivery[]> => {
    const reply = await api(apiKey, 'GET', '/v1/notifications/deliveries');
    expect(reply.status).toBe(200);
    return DeliveriesListResponse.parse(reply.body).deliveries;
  };
  const test = async (apiKey: string, channel: string) => {
    const reply = await api(apiKey, 'POST', '/v1/notifications/test', { channel });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    return TestResponse.parse(reply.body).delivery;
  };

  beforeAll(async () => {
    smtp = await startSmtpStandIn({
      [SMTP_USER]: SECRETS.userSmtpPassword,
      [INSTALL_SMTP_USER]: SECRETS.installSmtpPassword,
    });
    webhook = await startHttpRecorder();
    ntfy = await startHttpRecorder();
    telegram = await startTelegramStandIn();
    fixture = await startStackFixture({
      TELEGRAM_BOT_TOKEN: SECRETS.botToken,
      TELEGRAM_API_ROOT: telegram.url,
      JARVIS_SECRET_KEY: SECRETS.secretKey,
      SMTP_HOST: '127.0.0.1',
      SMTP_PORT: String(smtp.port),
      SMTP_SECURITY: 'none',
      SMTP_USER: INSTALL_SMTP_USER,
      SMTP_PASSWORD: SECRETS.installSmtpPassword,
      SMTP_FROM: 'jarvis@example.test',
      // Every log line there is: a secret in a debug line counts as much as in an error.
      LOG_LEVEL: 'trace',
    });
    key = (await fixture.createUser('ines')).apiKey;
  });

  afterAll(async () => {
    await fixture?.close();
    await smtp?.close();
    await webhook?.close();
    await ntfy?.close();
    await telegram?.close();
  });

  it('posts a reminder made through POST /v1/schedules to the webhook, signed, in the fixed shape', async () => {
    const put = await api(key, 'PUT', '/v1/notifications/channels/webhook', {
      url: `${webhook.url}/jarvis`,
      secret: SECRETS.webhookSecret,
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(ChannelResponse.parse(put.body).channel).toMatchObject({ secret: SECRET_MASK });

    const due = Date.now() + 2_000;
    const created = await api(key, 'POST', '/v1/schedules', {
      kind: 'once',
      at: new Date(due).toISOString(),
      action: { type: 'remind', text: 'Take the bread out of the oven' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const schedule = ScheduleResponse.parse(created.body).schedule;

    const request = await waitFor(() => webhook.requests.find((r) => r.path === '/jarvis'), {
      timeoutMs: 30_000,
      what: 'the reminder at the webhook',
    });
    expect(request.method).toBe('POST');
    expect(request.headers['content-type']).toMatch(/^application\/json/);
    const timestamp = String(request.headers['x-jarvis-timestamp']);
    expect(timestamp).toMatch(/^\d+$/);
    expect(Math.abs(Number(timestamp) - request.receivedAt / 1_000)).toBeLessThan(30);
    const expected = createHmac('sha256', SECRETS.webhookSecret)
      .update(`${timestamp}.${request.body}`)
      .digest('hex');
    expect(request.headers['x-jarvis-signature']).toBe(`sha256=${expected}`);
    // Signed over the raw body: one changed byte and the signature no longer holds.
    const tampered = createHmac('sha256', SECRETS.webhookSecret)
      .update(`${timestamp}.${request.body.replace('oven', 'OVEN')}`)
      .digest('hex');
    expect(tampered).not.toBe(expected);

    const body = JSON.parse(request.body) as Record<string, unknown>;
    expect(body).toMatchObject({
      id: expect.any(String),
      type: 'reminder',
      occurredAt: expect.any(String),
      title: expect.any(String),
      text: 'Take the bread out of the oven',
    });
    expect(Object.keys(body)).toEqual(
      expect.arrayContaining(['id', 'type', 'occurredAt', 'title', 'text']),
    );
    expect(Number.isNaN(Date.parse(String(body.occurredAt)))).toBe(false);
    const latencyMs = request.receivedAt - due;
    console.log(`reminder ${schedule.id}: at the webhook ${latencyMs} ms after it was due`);
    expect(latencyMs).toBeLessThan(15_000);

    await expect
      .poll(async () => (await deliveries(key)).find((delivery) => delivery.kind === 'reminder'))
      .toMatchObject({
        eventId: body.id,
        channel: 'webhook',
        status: 'sent',
        attempts: 1,
        error: null,
      });
    // Once: the event is not posted twice.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(webhook.requests.filter((r) => r.path === '/jarvis')).toHaveLength(1);
  });

  it('links a Telegram chat with /start CODE, and a reminder reaches the chat', async () => {
    const link = await api(key, 'POST', '/v1/notifications/telegram/link');
    expect(link.status, JSON.stringify(link.body)).toBe(200);
    const { code } = TelegramLinkResponse.parse(link.body);
    const user = { id: CHAT_ID, is_bot: false, first_name: 'Ines', username: 'ines_tg' };
    telegram.sendToBot({
      message_id: 1,
      date: Math.floor(Date.now() / 1_000),
      chat: { id: CHAT_ID, type: 'private', first_name: 'Ines', username: 'ines_tg' },
      from: user,
      text: `/start ${code}`,
    });
    await waitFor(
      async () => {
        const reply = await api(key, 'GET', '/v1/notifications/channels');
        return ChannelsListResponse.parse(reply.body).channels.find((c) => c.type === 'telegram');
      },
      { timeoutMs: 20_000, what: 'the chat to be linked' },
    );

    const text = 'Call the plumber back';
    const created = await api(key, 'POST', '/v1/schedules', {
      kind: 'once',
      at: new Date(Date.now() + 1_500).toISOString(),
      action: { type: 'remind', text },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const sent = await waitFor(
      () =>
        telegram.recorder.requests.find(
          (request) => request.path.endsWith('/sendMessage') && request.body.includes(text),
        ),
      { timeoutMs: 30_000, what: 'the reminder in the Telegram chat' },
    );
    expect(JSON.parse(sent.body)).toMatchObject({ chat_id: String(CHAT_ID), parse_mode: 'HTML' });
    // The token is in the path of every Bot API request, as Telegram wants it: only there.
    expect(sent.path).toBe(`/bot${SECRETS.botToken}/sendMessage`);
  });

  it("asks a mission's question in the Telegram chat, and a reply to it answers that question", async () => {
    fixture.fake.onChat((request) => {
      const messages = sentMessages(request);
      if (!messages[0]?.content.includes('one task of a mission')) return {};
      const answered = messages.find((message) => message.role === 'tool');
      return answered
        ? { content: `Booked by ${answered.content}` }
        : { toolCalls: [{ name: 'ask_user', arguments: { question: 'Train or plane?' } }] };
    });
    const created = await api(key, 'POST', '/v1/missions', {
      objective: 'Book the trip to Oslo',
      tasks: [{ title: 'Book the transport', brief: 'Book a train or a plane to Oslo.' }],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    const { id } = MissionResponse.parse(created.body).mission;
    const asked = await waitFor(
      () =>
        telegram.sent.find(
          (message) =>
            String(message.body.text).includes('Train or plane?') && message.body.reply_markup,
        ),
      { timeoutMs: 30_000, what: 'the question in the Telegram chat' },
    );
    expect(asked.body).toMatchObject({
      chat_id: String(CHAT_ID),
      reply_markup: { force_reply: true },
    });
    expect(String(asked.body.text)).toContain('Reply to this message to answer it.');

    telegram.sendToBot({
      message_id: 2,
      date: Math.floor(Date.now() / 1_000),
      chat: { id: CHAT_ID, type: 'private', first_name: 'Ines', username: 'ines_tg' },
      from: { id: CHAT_ID, is_bot: false, first_name: 'Ines', username: 'ines_tg' },
      text: 'The train.',
      reply_to_message: {
        message_id: asked.messageId,
        date: Math.floor(Date.now() / 1_000),
        chat: { id: CHAT_ID, type: 'private' },
        text: String(asked.body.text),
      },
    });

    const mission = await waitFor(
      async () => {
        const detail = MissionResponse.parse(
          (await api(key, 'GET', `/v1/missions/${id}`)).body,
        ).mission;
        return detail.status === 'completed' ? detail : undefined;
      },
      { timeoutMs: 30_000, what: 'the mission to complete' },
    );
    expect(mission.tasks[0]?.result).toBe('Booked by {"answer":"The train."}');
    await waitFor(
      () =>
        telegram.sent.find((message) =>
          String(message.body.text).startsWith('I passed your answer on to the mission'),
        ),
      { timeoutMs: 10_000, what: 'the note that the answer was passed on' },
    );
  });

  it('sends through ntfy with its token, which is answered only as the mask', async () => {
    const put = await api(key, 'PUT', '/v1/notifications/channels/ntfy', {
      url: ntfy.url,
      topic: 'ines-jarvis',
      token: SECRETS.ntfyToken,
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(ChannelResponse.parse(put.body).channel).toMatchObject({ token: SECRET_MASK });

    expect(await test(key, 'ntfy')).toMatchObject({ channel: 'ntfy', status: 'sent' });
    const request = ntfy.requests.at(-1);
    expect(request?.path).toBe('/ines-jarvis');
    expect(request?.headers.authorization).toBe(`Bearer ${SECRETS.ntfyToken}`);

    // A server that refuses the token and says it back: the failure is told, the token is not.
    ntfy.respondWith((refused, response) => {
      response
        .writeHead(403, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: `forbidden: ${refused.headers.authorization}` }));
    });
    const failed = await test(key, 'ntfy');
    expect(failed).toMatchObject({ status: 'failed', error: expect.stringMatching(/403/) });
    expect((await deliveries(key)).find((delivery) => delivery.id === failed.id)).toMatchObject({
      status: 'failed',
      error: expect.any(String),
    });
  });

  it("sends mail through the user's own SMTP server, logging in with their password", async () => {
    const smtpSettings = {
      host: '127.0.0.1',
      port: smtp.port,
      security: 'none',
      user: SMTP_USER,
      from: 'ines@example.test',
    };
    // A wrong password first: the server is tried on saving, and the login it refused is named.
    const wrong = await api(key, 'PUT', '/v1/notifications/channels/email', {
      to: 'ines@example.test',
      smtp: { ...smtpSettings, password: SECRETS.wrongSmtpPassword },
    });
    expect(wrong).toMatchObject({
      status: 400,
      body: { error: { code: 'bad_request', message: expect.stringMatching(/^smtp\.password: /) } },
    });

    const put = await api(key, 'PUT', '/v1/notifications/channels/email', {
      to: 'ines@example.test',
      smtp: { ...smtpSettings, password: SECRETS.userSmtpPassword },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(ChannelResponse.parse(put.body).channel).toMatchObject({
      smtp: { password: SECRET_MASK },
    });
    const before = smtp.mails.length;
    expect(await test(key, 'email')).toMatchObject({ channel: 'email', status: 'sent' });
    expect(smtp.mails.slice(before)).toEqual([
      expect.objectContaining({ from: 'ines@example.test', to: ['ines@example.test'] }),
    ]);
  });

  it("mails a code through the install's SMTP, and sends there only once it is confirmed", async () => {
    const other = (await fixture.createUser('omar')).apiKey;
    const before = smtp.mails.length;
    const put = await api(other, 'PUT', '/v1/notifications/channels/email', {
      to: 'omar@example.test',
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(ChannelResponse.parse(put.body).channel).toMatchObject({ isConfirmed: false });
    const mail = await waitFor(() => smtp.mails.slice(before).at(0), {
      timeoutMs: 15_000,
      what: 'the confirmation mail',
    });
    expect(mail.to).toEqual(['omar@example.test']);
    const code = confirmationCode(mail.raw);
    expect(code, mail.raw).toBeDefined();

    const confirmed = await api(other, 'POST', '/v1/notifications/channels/email/confirm', {
      code,
    });
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    expect(ChannelResponse.parse(confirmed.body).channel).toMatchObject({ isConfirmed: true });
    expect(await test(other, 'email')).toMatchObject({ status: 'sent' });
    expect(smtp.mails.at(-1)?.to).toEqual(['omar@example.test']);
  });

  it('answers bad input that carries secrets without them', async () => {
    const refused = [
      await api(key, 'PUT', '/v1/notifications/channels/webhook', {
        url: 'not a url',
        secret: SECRETS.webhookSecret,
      }),
      await api(key, 'PUT', '/v1/notifications/channels/ntfy', {
        url: 'http://10.9.8.7',
        topic: 'private',
        token: SECRETS.ntfyToken,
      }),
      await api(key, 'PUT', '/v1/notifications/channels/email', {
        to: 'ines@example.test',
        smtp: { host: '127.0.0.1', port: 1, password: SECRETS.userSmtpPassword },
      }),
    ];
    expect(refused.map((reply) => reply.status)).toEqual([400, 400, 400]);
  });

  it('shows no secret in any API answer or log line of the run', async () => {
    // Stopped first, so that the scan also reads what each service logs on its way down.
    await fixture.stack.stop();
    const scan = scanForSecrets(fixture.stack, answers, SECRETS);
    console.log(scan.summary);
    expect(scan.found).toEqual([]);
    // The scan read a run that logged: at least each service's start and stop.
    expect(scan.logLines).toBeGreaterThan(SERVICE_NAMES.length * 2);
    expect(scan.answers).toBeGreaterThan(10);
  });
});

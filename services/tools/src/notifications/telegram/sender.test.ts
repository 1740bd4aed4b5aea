import { randomUUID } from 'node:crypto';
import { migrate } from '@jarvis/db';
import { createOutboundGuard, OutboundAllowedHosts } from '@jarvis/net-guard';
import { createLogger } from '@jarvis/telemetry';
import { startTestDatabase, type TestDatabase } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Notification, SendError, type StoredChannel } from '../channel';
import { createTelegramBot, type TelegramBot } from './bot';
import { type BotApiStandIn, startBotApiStandIn } from './bot-api-stand-in';
import { findQuestionMessage } from './question-messages-repository';
import { createTelegramSender, QUESTION_REPLY_HINT } from './sender';

const TOKEN = '123456:stand-in-token-for-the-sender';
const lines: string[] = [];
const logger = createLogger('telegram-sender-test', 'debug', { write: (line) => lines.push(line) });
// The stand-in is on loopback, which the guard lets through only where the operator names it.
const guard = createOutboundGuard(OutboundAllowedHosts.parse('127.0.0.1'));

let api: BotApiStandIn;
let telegram: TelegramBot;
// Where the sender keeps which messages carried a mission's question.
let db: TestDatabase;

beforeAll(async () => {
  db = await startTestDatabase();
  await migrate(db.pool, {
    schema: 'tools',
    directory: new URL('../../../migrations', import.meta.url),
  });
  api = await startBotApiStandIn(TOKEN);
  telegram = createTelegramBot({ token: TOKEN, apiRoot: `${api.url}/`, guard, logger });
  expect(await telegram.ready()).toBe(true);
});

afterAll(async () => {
  telegram?.stop();
  await api?.close();
  await db?.stop();
});

function channel(chatId: string): StoredChannel {
  return {
    userId: randomUUID(),
    type: 'telegram',
    config: { type: 'telegram', chatId, username: 'amos' },
    secrets: {},
    events: ['reminder', 'approval_request'],
    isConfirmed: true,
    updatedAt: new Date(),
  };
}

function notification(overrides: Partial<Notification> = {}): Notification {
  return {
    eventId: randomUUID(),
    kind: 'reminder',
    occurredAt: new Date().toISOString(),
    title: 'Reminder',
    text: 'Call the plumber',
    ...overrides,
  };
}

const senderOf = (bot: TelegramBot) => createTelegramSender({ telegram: bot, pool: db.pool });

const send = (chatId: string, what: Notification, to = channel(chatId)) =>
  senderOf(telegram).send(to, what, new AbortController().signal);

const sentTo = (chatId: string) =>
  api.calls('sendMessage').filter((body) => body.chat_id === chatId);

describe('the Telegram sender', () => {
  it('sends the title in bold and the text escaped, in HTML parse mode, with a link', async () => {
    await send(
      '1001',
      notification({
        title: 'Due <today>',
        text: 'Pay "A & B" <b>now</b>',
        url: 'https://jarvis.example.com/schedules?x=1&y=2',
      }),
    );

    expect(sentTo('1001')).toEqual([
      {
        chat_id: '1001',
        text:
          '<b>Due &lt;today&gt;</b>\n\nPay &quot;A &amp; B&quot; &lt;b&gt;now&lt;/b&gt;' +
          '\n\n<a href="https://jarvis.example.com/schedules?x=1&amp;y=2">Open in Jarvis</a>',
        parse_mode: 'HTML',
        link_preview_options: { is_disabled: true },
      },
    ]);
    expect(api.requests.every((request) => request.token === TOKEN)).toBe(true);
  });

  it('splits a long text into messages within Telegram limit, in order', async () => {
    const paragraphs = Array.from({ length: 5 }, (_, index) => `${index}: ${'x'.repeat(2_000)}`);

    await send('1002', notification({ text: paragraphs.join('\n\n') }));

    const texts = sentTo('1002').map((body) => String(body.text));
    expect(texts.length).toBe(3);
    for (const text of texts) expect(text.length).toBeLessThanOrEqual(4_096);
    expect(texts[0]?.startsWith('<b>Reminder</b>\n\n0: ')).toBe(true);
    expect(texts.join('\n\n')).toBe(`<b>Reminder</b>\n\n${paragraphs.join('\n\n')}`);
  });

  it('puts Approve and Deny buttons under an approval request, below its last part', async () => {
    const approvalId = randomUUID();

    await send(
      '1003',
      notification({
        kind: 'approval_request',
        title: 'Approve memory_delete?',
        text: `${'a'.repeat(3_000)}\n\n${'b'.repeat(3_000)}`,
        approvalId,
      }),
    );

    const [first, last] = sentTo('1003');
    expect(first?.reply_markup).toBeUndefined();
    expect(last?.reply_markup).toEqual({
      inline_keyboard: [
        [
          { text: 'Approve', callback_data: `approve:${approvalId}` },
          { text: 'Deny', callback_data: `deny:${approvalId}` },
        ],
      ],
    });
  });

  it("asks for a reply to a mission's question, and keeps which messages carried it", async () => {
    const question = { missionId: randomUUID(), questionId: randomUUID() };
    const to = channel('1008');

    await send(
      '1008',
      notification({
        kind: 'mission_report',
        title: 'A mission asks: Train or plane?',
        text: `${'a'.repeat(3_000)}\n\n${'b'.repeat(3_000)}`,
        url: 'https://jarvis.example.com/missions/1',
        question,
      }),
      to,
    );

    const [first, last] = sentTo('1008');
    expect(first?.reply_markup).toBeUndefined();
    expect(last?.reply_markup).toEqual({
      force_reply: true,
      input_field_placeholder: 'Your answer',
    });
    expect(String(last?.text)).toMatch(
      new RegExp(
        `b\n\n${QUESTION_REPLY_HINT}\n<a href="https://jarvis.example.com/missions/1">Open in Jarvis</a>$`,
      ),
    );
    // A reply to either part answers the question; only for the channel's own user.
    for (const part of [first, last]) {
      const messageId = part && api.messageIdOf(part);
      if (messageId === undefined) throw new Error('no message id');
      expect(await findQuestionMessage(db.pool, to.userId, '1008', messageId)).toEqual({
        userId: to.userId,
        ...question,
      });
      expect(await findQuestionMessage(db.pool, randomUUID(), '1008', messageId)).toBeUndefined();
    }
  });

  it("retries a 429 after Telegram's retry_after, and a 5xx; a 403 is final", async () => {
    const failure = (what: Notification) => send('1004', what).catch((error: unknown) => error);

    api.failNext('sendMessage', {
      status: 429,
      description: 'Too Many Requests: retry after 7',
      parameters: { retry_after: 7 },
    });
    const limited = await failure(notification());
    api.failNext('sendMessage', { status: 502, description: 'Bad Gateway' });
    const down = await failure(notification());
    api.failNext('sendMessage', {
      status: 403,
      description: 'Forbidden: bot was blocked by the user',
    });
    const blocked = await failure(notification());

    expect(limited).toBeInstanceOf(SendError);
    expect(limited).toMatchObject({ isRetryable: true, retryAfterMs: 7_000 });
    expect(down).toMatchObject({ isRetryable: true, retryAfterMs: undefined });
    expect(blocked).toMatchObject({
      isRetryable: false,
      message: 'Telegram: 403: Forbidden: bot was blocked by the user',
    });
    expect(lines.join('\n')).not.toContain(TOKEN);
  });

  it('connects through the address guard: a private API root the operator did not name is refused', async () => {
    const refusing = createTelegramBot({
      token: TOKEN,
      apiRoot: api.url.replace('127.0.0.1', 'localhost'),
      guard: createOutboundGuard([]),
      logger,
      retryMs: 60_000,
    });
    const before = api.requests.length;
    try {
      const ready = await Promise.race([
        refusing.ready(),
        new Promise((resolve) => setTimeout(() => resolve('waiting'), 1_000)),
      ]);

      expect(ready).toBe('waiting');
      expect(refusing.state()).toBe('starting');
      expect(api.requests.length).toBe(before);
      const error = await senderOf(refusing)
        .send(channel('1005'), notification(), new AbortController().signal)
        .catch((caught: unknown) => caught);
      expect(error).toMatchObject({ isRetryable: true });
      expect(lines.join('\n')).toMatch(/private or local address.*telegram unreachable/);
    } finally {
      refusing.stop();
    }
  });

  it('gives up on an API root written as a private address the operator did not name', async () => {
    const refused = createTelegramBot({
      token: TOKEN,
      apiRoot: api.url,
      guard: createOutboundGuard([]),
      logger,
    });

    expect(refused.state()).toBe('refused');
    expect(await refused.ready()).toBe(false);
    const error = await senderOf(refused)
      .send(channel('1007'), notification(), new AbortController().signal)
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({
      isRetryable: false,
      message: expect.stringMatching(/^TELEGRAM_API_ROOT is a private/),
    });
    expect(lines.join('\n')).toContain('TELEGRAM_API_ROOT refused');
  });

  it('tells a rejected token apart, and never logs it', async () => {
    const rejected = createTelegramBot({ token: '999:wrong', apiRoot: api.url, guard, logger });

    expect(await rejected.ready()).toBe(false);
    expect(rejected.state()).toBe('rejected');
    const error = await senderOf(rejected)
      .send(channel('1006'), notification(), new AbortController().signal)
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({
      isRetryable: false,
      message: 'Telegram rejected the bot token (TELEGRAM_BOT_TOKEN)',
    });
    expect(lines.join('\n')).toContain('Telegram rejected TELEGRAM_BOT_TOKEN');
    expect(lines.join('\n')).not.toContain('999:wrong');
  });
});

import { randomUUID } from 'node:crypto';
import { createOutboundGuard, OutboundAllowedHosts } from '@jarvis/net-guard';
import { createLogger } from '@jarvis/telemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Notification, SendError, type StoredChannel } from '../channel';
import { createTelegramBot, type TelegramBot } from './bot';
import { type BotApiStandIn, startBotApiStandIn } from './bot-api-stand-in';
import { createTelegramSender } from './sender';

const TOKEN = '123456:stand-in-token-for-the-sender';
const lines: string[] = [];
const logger = createLogger('telegram-sender-test', 'debug', { write: (line) => lines.push(line) });
// The stand-in is on loopback, which the guard lets through only where the operator names it.
const guard = createOutboundGuard(OutboundAllowedHosts.parse('127.0.0.1'));

let api: BotApiStandIn;
let telegram: TelegramBot;

beforeAll(async () => {
  api = await startBotApiStandIn(TOKEN);
  telegram = createTelegramBot({ token: TOKEN, apiRoot: `${api.url}/`, guard, logger });
  expect(await telegram.ready()).toBe(true);
});

afterAll(async () => {
  telegram?.stop();
  await api?.close();
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

const send = (chatId: string, what: Notification) =>
  createTelegramSender({ telegram }).send(channel(chatId), what, new AbortController().signal);

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
      const error = await createTelegramSender({ telegram: refusing })
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
    const error = await createTelegramSender({ telegram: refused })
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
    const error = await createTelegramSender({ telegram: rejected })
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

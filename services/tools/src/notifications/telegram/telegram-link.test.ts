import { createHash, randomUUID } from 'node:crypto';
import { catchBusError, connectTestBus } from '@jarvis/bus/testing';
import { notificationsTelegramLink } from '@jarvis/contracts';
import { createOutboundGuard, OutboundAllowedHosts } from '@jarvis/net-guard';
import { createLogger } from '@jarvis/telemetry';
import { uniqueNamespace } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTelegramBot } from './bot';
import { STAND_IN_BOT } from './bot-api-stand-in';
import { LINK_ATTEMPTS_PER_CHAT, LINK_CODE_TTL_MS } from './link-codes';
import { registerTelegramHandlers } from './link-handlers';
import { startTelegramFixture, TEST_TOKEN, type TelegramFixture } from './telegram-fixture';

let fixture: TelegramFixture;
let nextChat = 5_000;

beforeAll(async () => {
  fixture = await startTelegramFixture();
  await fixture.startReplica();
}, 60_000);

afterAll(async () => {
  await fixture?.stop();
});

function message(chat: { id: number; type: 'private' | 'group' }, text: string, fromId = chat.id) {
  return {
    message: {
      message_id: 1,
      date: Math.floor(Date.now() / 1_000),
      chat:
        chat.type === 'private'
          ? { id: chat.id, type: 'private' as const, first_name: 'Amos' }
          : { id: chat.id, type: 'group' as const, title: 'Family' },
      from: { id: fromId, is_bot: false, first_name: 'Amos', username: `amos${fromId}` },
      text,
    },
  };
}

// Sends the bot a message and waits for its answer to that chat.
async function say(chat: { id: number; type: 'private' | 'group' }, text: string, fromId?: number) {
  const before = fixture.api.calls('sendMessage').length;
  fixture.api.pushUpdate(message(chat, text, fromId));
  const answer = await fixture.api.waitForCall(
    'sendMessage',
    (body) =>
      String(body.chat_id) === String(chat.id) &&
      fixture.api.calls('sendMessage').indexOf(body) >= before,
  );
  return String(answer.text);
}

const privateChat = () => ({ id: nextChat++, type: 'private' as const });

async function linkCode(userId: string) {
  return fixture.client.request(notificationsTelegramLink, {
    userId,
    userTimeZone: 'Europe/Paris',
  });
}

async function linkedChatOf(userId: string) {
  const { rows } = await fixture.db.pool.query<{ config: { chatId: string; username: string } }>(
    `SELECT config FROM tools.notification_channels WHERE user_id = $1 AND type = 'telegram'`,
    [userId],
  );
  return rows[0]?.config;
}

describe('linking a Telegram chat', () => {
  it('answers a high-entropy code with its expiry and t.me link, and keeps only its hash', async () => {
    const userId = randomUUID();
    const before = Date.now();

    const link = await linkCode(userId);

    expect(link.code).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(link.url).toBe(`https://t.me/${STAND_IN_BOT.username}?start=${link.code}`);
    const expiresInMs = Date.parse(link.expiresAt) - before;
    // Minutes: long enough to open Telegram, short enough to be worthless soon.
    expect(LINK_CODE_TTL_MS).toBe(10 * 60_000);
    expect(expiresInMs).toBeGreaterThan(LINK_CODE_TTL_MS - 60_000);
    expect(expiresInMs).toBeLessThanOrEqual(LINK_CODE_TTL_MS + 1_000);
    const { rows } = await fixture.db.pool.query<{ code_hash: Buffer }>(
      'SELECT code_hash FROM tools.telegram_link_codes WHERE user_id = $1',
      [userId],
    );
    expect(rows.map((row) => row.code_hash.toString('hex'))).toEqual([
      createHash('sha256').update(link.code).digest('hex'),
    ]);
    const settings = await fixture.db.pool.query(
      'SELECT time_zone FROM tools.notification_settings WHERE user_id = $1',
      [userId],
    );
    expect(settings.rows).toEqual([{ time_zone: 'Europe/Paris' }]);
  });

  it('links the private chat that sends /start CODE, once: the code is then used up', async () => {
    const userId = randomUUID();
    const { code } = await linkCode(userId);
    const chat = privateChat();

    expect(await say(chat, `/start ${code}`)).toMatch(/^Linked/);
    expect(await linkedChatOf(userId)).toEqual({
      chatId: String(chat.id),
      username: `amos${chat.id}`,
    });

    const other = privateChat();
    expect(await say(other, `/start ${code}`)).toMatch(/wrong, expired or used/);
    expect(await linkedChatOf(userId)).toMatchObject({ chatId: String(chat.id) });
    expect(await say(chat, '/start')).toMatch(/linked to Jarvis/);
  });

  it('refuses a wrong code and an expired one', async () => {
    const userId = randomUUID();
    const { code } = await linkCode(userId);
    const chat = privateChat();

    expect(await say(chat, `/start ${code.slice(0, -1)}${code.endsWith('A') ? 'B' : 'A'}`)).toMatch(
      /wrong, expired or used/,
    );
    await fixture.db.pool.query(
      `UPDATE tools.telegram_link_codes SET expires_at = now() - interval '1 second'
        WHERE user_id = $1`,
      [userId],
    );
    expect(await say(chat, `/start ${code}`)).toMatch(/wrong, expired or used/);
    expect(await linkedChatOf(userId)).toBeUndefined();
  });

  it('refuses a group chat, and a sender who is not the private chat its own user', async () => {
    const userId = randomUUID();
    const { code } = await linkCode(userId);
    const group = { id: -nextChat++, type: 'group' as const };
    const chat = privateChat();

    expect(await say(group, `/start ${code}`, 77)).toBe(
      'Jarvis talks in private chats only: message the bot directly.',
    );
    expect(await say(chat, `/start ${code}`, chat.id + 1)).toBe(
      "Only this chat's own user can talk to Jarvis here.",
    );
    expect(await linkedChatOf(userId)).toBeUndefined();
    // Neither used the code up.
    expect(await say(chat, `/start ${code}`)).toMatch(/^Linked/);
  });

  it('limits the attempts of a chat, a good code included once the limit is reached', async () => {
    const userId = randomUUID();
    const { code } = await linkCode(userId);
    const chat = privateChat();

    for (let attempt = 0; attempt < LINK_ATTEMPTS_PER_CHAT; attempt++) {
      expect(await say(chat, `/start wrong${attempt}`)).toMatch(/wrong, expired or used/);
    }

    expect(await say(chat, `/start ${code}`)).toMatch(
      /^Too many attempts from this chat: try again in 1[45] min\.$/,
    );
    expect(await linkedChatOf(userId)).toBeUndefined();
    // Another chat is not held back by it.
    expect(await say(privateChat(), `/start ${code}`)).toMatch(/^Linked/);
  });

  it('answers any chat that is not linked with a one-line refusal', async () => {
    expect(await say(privateChat(), 'hello?')).toBe(
      'This chat is not linked to Jarvis. Get a code under Settings → Notifications and send /start CODE here.',
    );
  });

  it('answers unavailable while Telegram rejects the bot token', async () => {
    const namespace = uniqueNamespace('telegram-rejected');
    const bus = await connectTestBus(namespace);
    const logger = createLogger('tools', 'silent');
    const telegram = createTelegramBot({
      token: '1:rejected',
      apiRoot: fixture.api.url,
      guard: createOutboundGuard(OutboundAllowedHosts.parse('127.0.0.1')),
      logger,
    });
    const handlers = registerTelegramHandlers({ bus, pool: fixture.db.pool, telegram });
    try {
      await telegram.ready();
      await bus.nc.flush();

      const refused = await catchBusError(
        bus.request(notificationsTelegramLink, { userId: randomUUID() }),
      );

      expect(refused).toMatchObject({
        code: 'unavailable',
        message: 'Telegram rejected the bot token (TELEGRAM_BOT_TOKEN)',
      });
    } finally {
      for (const handler of handlers) handler.unsubscribe();
      await bus.close();
    }
  });

  it('never logs the token or a code', () => {
    const logged = fixture.lines.join('\n');
    expect(logged).toContain('telegram bot ready');
    expect(logged).not.toContain(TEST_TOKEN);
    expect(logged).not.toContain(TEST_TOKEN.split(':')[1]);
  });
});

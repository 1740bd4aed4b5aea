import { randomBytes, randomUUID } from 'node:crypto';
import { DEFAULT_CHANNEL_EVENTS } from '@jarvis/contracts';
import type { TestDatabase } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startToolsDatabase } from '../tools-database-fixture';
import {
  countEmailConfirmationAttempt,
  deleteChannel,
  findTelegramLinkByChat,
  getChannel,
  listChannels,
  listSubscribedChannels,
  markEmailConfirmed,
  putChannel,
  saveEmailConfirmation,
  saveTelegramLink,
} from './channels-repository';
import { createSecretBox } from './secret-box';

let db: TestDatabase;
const box = createSecretBox(randomBytes(32));

beforeAll(async () => {
  db = await startToolsDatabase();
});
afterAll(async () => {
  await db?.stop();
});

const ntfy = {
  type: 'ntfy',
  url: 'https://ntfy.sh',
  topic: 'jarvis-alerts',
  priority: 4,
} as const;

describe('channels', () => {
  it('seals secrets at rest, opens them on read, and keeps them when a write leaves them out', async () => {
    const userId = randomUUID();
    await putChannel(db.pool, box, {
      userId,
      config: ntfy,
      secrets: { token: 'tk_secret_value' },
      events: ['reminder'],
      isConfirmed: true,
    });
    const raw = await db.pool.query(
      'SELECT secrets FROM tools.notification_channels WHERE user_id = $1',
      [userId],
    );
    expect(raw.rows[0].secrets.toString('latin1')).not.toContain('tk_secret_value');

    await putChannel(db.pool, box, {
      userId,
      config: { ...ntfy, topic: 'renamed' },
      secrets: undefined,
      events: ['reminder', 'note'],
      isConfirmed: true,
    });

    const stored = await getChannel(db.pool, box, userId, 'ntfy');
    expect(stored).toMatchObject({
      userId,
      type: 'ntfy',
      config: { ...ntfy, topic: 'renamed' },
      secrets: { token: 'tk_secret_value' },
      events: ['reminder', 'note'],
    });
    const [listed] = await listChannels(db.pool, userId);
    expect(listed).toMatchObject({ type: 'ntfy', hasSecrets: true });
    expect(listed && 'secrets' in listed).toBe(false);
    // Another user sees none of it.
    expect(await getChannel(db.pool, box, randomUUID(), 'ntfy')).toBeUndefined();
    expect(await listChannels(db.pool, randomUUID())).toEqual([]);

    expect(await deleteChannel(db.pool, randomUUID(), 'ntfy')).toBe(false);
    expect(await deleteChannel(db.pool, userId, 'ntfy')).toBe(true);
    expect(await getChannel(db.pool, box, userId, 'ntfy')).toBeUndefined();
  });

  it('lists the channels subscribed to a kind, email only once confirmed, and every one for a test', async () => {
    const userId = randomUUID();
    await putChannel(db.pool, box, {
      userId,
      config: ntfy,
      secrets: {},
      events: ['reminder'],
      isConfirmed: true,
    });
    await putChannel(db.pool, box, {
      userId,
      config: { type: 'webhook', url: 'https://hooks.example.com/x', format: 'slack' },
      secrets: { secret: 'whsec-0123456789abcdef' },
      events: ['mission_report'],
      isConfirmed: true,
    });
    await putChannel(db.pool, box, {
      userId,
      config: { type: 'email', to: 'me@example.com' },
      secrets: {},
      events: ['reminder'],
      isConfirmed: false,
    });
    const types = async (kind: Parameters<typeof listSubscribedChannels>[3]) =>
      (await listSubscribedChannels(db.pool, box, userId, kind)).map((channel) => channel.type);

    expect(await types('reminder')).toEqual(['ntfy']);
    expect(await types('mission_report')).toEqual(['webhook']);
    expect(await types('test')).toEqual(['ntfy', 'webhook']);
    expect(await markEmailConfirmed(db.pool, userId, 'other@example.com')).toBe(false);
    expect(await markEmailConfirmed(db.pool, userId, 'me@example.com')).toBe(true);
    expect(await types('reminder')).toEqual(['email', 'ntfy']);
    const [webhook] = await listSubscribedChannels(db.pool, box, userId, 'mission_report');
    expect(webhook?.secrets).toEqual({ secret: 'whsec-0123456789abcdef' });
  });
});

describe('Telegram links', () => {
  it('links a chat to one user at most, and finds the user by the chat', async () => {
    const alice = randomUUID();
    const bob = randomUUID();
    const chatId = String(Date.now());

    await saveTelegramLink(db.pool, alice, chatId, 'alice_tg');
    expect(await findTelegramLinkByChat(db.pool, chatId)).toEqual({
      userId: alice,
      chatId,
      username: 'alice_tg',
    });
    const channel = await getChannel(db.pool, box, alice, 'telegram');
    expect(channel?.events).toEqual(DEFAULT_CHANNEL_EVENTS);

    await saveTelegramLink(db.pool, bob, chatId, null);
    expect(await findTelegramLinkByChat(db.pool, chatId)).toEqual({
      userId: bob,
      chatId,
      username: null,
    });
    expect(await getChannel(db.pool, box, alice, 'telegram')).toBeUndefined();
    expect(await findTelegramLinkByChat(db.pool, 'no-such-chat')).toBeUndefined();
  });
});

describe('email confirmations', () => {
  it('counts every attempt, and a new code starts the count again', async () => {
    const userId = randomUUID();
    expect(await countEmailConfirmationAttempt(db.pool, userId)).toBeUndefined();
    const expiresAt = new Date(Date.now() + 60_000);
    await saveEmailConfirmation(db.pool, userId, {
      address: 'me@example.com',
      codeHash: Buffer.from('hash'),
      expiresAt,
    });

    const attempts = [];
    for (let i = 0; i < 3; i += 1) {
      attempts.push((await countEmailConfirmationAttempt(db.pool, userId))?.attempts);
    }
    expect(attempts).toEqual([0, 1, 2]);
    await saveEmailConfirmation(db.pool, userId, {
      address: 'me@example.com',
      codeHash: Buffer.from('other'),
      expiresAt,
    });
    expect(await countEmailConfirmationAttempt(db.pool, userId)).toMatchObject({
      attempts: 0,
      address: 'me@example.com',
      codeHash: Buffer.from('other'),
    });
  });
});

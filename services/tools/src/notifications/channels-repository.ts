import {
  type ChannelType,
  DEFAULT_CHANNEL_EVENTS,
  NotificationKind,
  SmtpSecurity,
  WebhookFormat,
} from '@jarvis/contracts';
import { type Pool, type Queryable, withTransaction } from '@jarvis/db';
import { z } from 'zod';
import type { ChannelConfig, ChannelSecrets, SecretBox, StoredChannel } from './channel';

// Each user's notification channels (tools.notification_channels) and the codes that confirm an
// email address. Every query is scoped by user_id, except the look-up of a Telegram chat, which
// is how an incoming message finds its user. Secrets are sealed here and opened here only.

type ChannelRow = {
  user_id: string;
  type: ChannelType;
  config: unknown;
  secrets: Buffer | null;
  events: string[];
  is_confirmed: boolean;
  updated_at: Date;
};

const SmtpConfig = z.object({
  host: z.string(),
  port: z.number(),
  security: SmtpSecurity,
  user: z.string().optional(),
  from: z.string().optional(),
});

// The jsonb column, read back: what putChannel wrote, checked so that a row edited by hand
// fails loudly here rather than somewhere in a sender.
const StoredConfig = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('ntfy'),
    url: z.string(),
    topic: z.string(),
    priority: z.number(),
    clickUrl: z.string().optional(),
  }),
  z.object({ type: z.literal('webhook'), url: z.string(), format: WebhookFormat }),
  z.object({ type: z.literal('email'), to: z.string(), smtp: SmtpConfig.optional() }),
  z.object({ type: z.literal('telegram'), chatId: z.string(), username: z.string().nullable() }),
  z.object({ type: z.literal('webpush') }),
]);

const COLUMNS = 'user_id, type, config, secrets, events, is_confirmed, updated_at';

// A channel as listed: its secrets stay sealed, only whether it has any is known (the API shows
// a mask for them).
export type ListedChannel = Omit<StoredChannel, 'secrets'> & { hasSecrets: boolean };

function toListed(row: ChannelRow): ListedChannel {
  return {
    userId: row.user_id,
    type: row.type,
    config: StoredConfig.parse({
      ...z.record(z.string(), z.unknown()).parse(row.config),
      type: row.type,
    }),
    events: z.array(NotificationKind).parse(row.events),
    isConfirmed: row.is_confirmed,
    updatedAt: row.updated_at,
    hasSecrets: row.secrets !== null,
  };
}

function toStored(row: ChannelRow, box: SecretBox): StoredChannel {
  const { hasSecrets: _, ...listed } = toListed(row);
  return { ...listed, secrets: row.secrets ? box.open(row.secrets) : {} };
}

function configColumn(config: ChannelConfig): string {
  // The type is the row's own column; the jsonb keeps the rest.
  const { type: _, ...rest } = config;
  return JSON.stringify(rest);
}

export async function listChannels(pool: Queryable, userId: string): Promise<ListedChannel[]> {
  const { rows } = await pool.query<ChannelRow>(
    `SELECT ${COLUMNS} FROM tools.notification_channels WHERE user_id = $1 ORDER BY type`,
    [userId],
  );
  return rows.map(toListed);
}

export async function getChannel(
  pool: Queryable,
  box: SecretBox,
  userId: string,
  type: ChannelType,
): Promise<StoredChannel | undefined> {
  const { rows } = await pool.query<ChannelRow>(
    `SELECT ${COLUMNS} FROM tools.notification_channels WHERE user_id = $1 AND type = $2`,
    [userId, type],
  );
  const [row] = rows;
  return row && toStored(row, box);
}

// The channels a notification of this kind goes to: those subscribed to it (a test goes to
// whichever channel it names), and an email address only once it is confirmed.
export async function listSubscribedChannels(
  pool: Queryable,
  box: SecretBox,
  userId: string,
  kind: NotificationKind,
): Promise<StoredChannel[]> {
  const { rows } = await pool.query<ChannelRow>(
    `SELECT ${COLUMNS} FROM tools.notification_channels
      WHERE user_id = $1 AND is_confirmed AND ($2 = 'test' OR $2 = ANY(events))
      ORDER BY type`,
    [userId, kind],
  );
  return rows.map((row) => toStored(row, box));
}

export type ChannelWrite = {
  userId: string;
  config: Exclude<ChannelConfig, { type: 'telegram' }>;
  // undefined: keep the stored secrets (a PUT that leaves a secret out keeps it); {}: none.
  secrets: ChannelSecrets | undefined;
  events: NotificationKind[];
  isConfirmed: boolean;
};

export async function putChannel(
  pool: Queryable,
  box: SecretBox,
  write: ChannelWrite,
): Promise<StoredChannel> {
  const sealed =
    write.secrets === undefined || Object.keys(write.secrets).length === 0
      ? null
      : box.seal(write.secrets);
  const { rows } = await pool.query<ChannelRow>(
    `INSERT INTO tools.notification_channels (user_id, type, config, secrets, events, is_confirmed)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (user_id, type) DO UPDATE
        SET config = EXCLUDED.config,
            secrets = CASE WHEN $7 THEN notification_channels.secrets ELSE EXCLUDED.secrets END,
            events = EXCLUDED.events,
            is_confirmed = EXCLUDED.is_confirmed,
            updated_at = now()
     RETURNING ${COLUMNS}`,
    [
      write.userId,
      write.config.type,
      configColumn(write.config),
      sealed,
      write.events,
      write.isConfirmed,
      write.secrets === undefined,
    ],
  );
  const [row] = rows;
  if (!row) throw new Error('upsert returned no row');
  return toStored(row, box);
}

export async function deleteChannel(
  pool: Queryable,
  userId: string,
  type: ChannelType,
): Promise<boolean> {
  const { rowCount } = await pool.query(
    'DELETE FROM tools.notification_channels WHERE user_id = $1 AND type = $2',
    [userId, type],
  );
  return (rowCount ?? 0) > 0;
}

// Confirms the email channel's address, if it is still the one the code was mailed to.
export async function markEmailConfirmed(
  pool: Queryable,
  userId: string,
  address: string,
): Promise<boolean> {
  const { rowCount } = await pool.query(
    `UPDATE tools.notification_channels SET is_confirmed = true, updated_at = now()
      WHERE user_id = $1 AND type = 'email' AND config ->> 'to' = $2`,
    [userId, address],
  );
  return (rowCount ?? 0) > 0;
}

export type TelegramLink = { userId: string; chatId: string; username: string | null };

// Links a private chat to the user: their telegram channel, with the default kinds the first
// time. A chat serves one user at most, so a chat linked before to someone else moves (whoever
// holds the chat also got this user's code).
export async function saveTelegramLink(
  pool: Pool,
  userId: string,
  chatId: string,
  username: string | null,
): Promise<void> {
  await withTransaction(pool, async (client) => {
    await client.query(
      `DELETE FROM tools.notification_channels
        WHERE type = 'telegram' AND config ->> 'chatId' = $1 AND user_id <> $2`,
      [chatId, userId],
    );
    await client.query(
      `INSERT INTO tools.notification_channels (user_id, type, config, events)
       VALUES ($1, 'telegram', $2, $3)
       ON CONFLICT (user_id, type) DO UPDATE SET config = EXCLUDED.config, updated_at = now()`,
      [userId, JSON.stringify({ chatId, username }), DEFAULT_CHANNEL_EVENTS],
    );
  });
}

export async function findTelegramLinkByChat(
  pool: Queryable,
  chatId: string,
): Promise<TelegramLink | undefined> {
  const { rows } = await pool.query<{ user_id: string; username: string | null }>(
    `SELECT user_id, config ->> 'username' AS username FROM tools.notification_channels
      WHERE type = 'telegram' AND config ->> 'chatId' = $1`,
    [chatId],
  );
  const [row] = rows;
  return row && { userId: row.user_id, chatId, username: row.username };
}

export type EmailConfirmation = {
  address: string;
  codeHash: Buffer;
  expiresAt: Date;
  attempts: number;
};

type ConfirmationRow = { address: string; code_hash: Buffer; expires_at: Date; attempts: number };

function toConfirmation(row: ConfirmationRow): EmailConfirmation {
  return {
    address: row.address,
    codeHash: row.code_hash,
    expiresAt: row.expires_at,
    attempts: row.attempts,
  };
}

// One pending confirmation per user: a new code replaces the last one and its attempts.
export async function saveEmailConfirmation(
  pool: Queryable,
  userId: string,
  confirmation: Omit<EmailConfirmation, 'attempts'>,
): Promise<void> {
  await pool.query(
    `INSERT INTO tools.email_confirmations (user_id, address, code_hash, expires_at)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (user_id) DO UPDATE
        SET address = EXCLUDED.address, code_hash = EXCLUDED.code_hash,
            expires_at = EXCLUDED.expires_at, attempts = 0`,
    [userId, confirmation.address, confirmation.codeHash, confirmation.expiresAt],
  );
}

export async function getEmailConfirmation(
  pool: Queryable,
  userId: string,
): Promise<EmailConfirmation | undefined> {
  const { rows } = await pool.query<ConfirmationRow>(
    `SELECT address, code_hash, expires_at, attempts FROM tools.email_confirmations
      WHERE user_id = $1`,
    [userId],
  );
  const [row] = rows;
  return row && toConfirmation(row);
}

// Counts an attempt before the code is compared, so that parallel guesses each use one up; the
// confirmation as it was before this attempt, or undefined when there is none.
export async function countEmailConfirmationAttempt(
  pool: Queryable,
  userId: string,
): Promise<EmailConfirmation | undefined> {
  const { rows } = await pool.query<ConfirmationRow>(
    `UPDATE tools.email_confirmations SET attempts = attempts + 1 WHERE user_id = $1
     RETURNING address, code_hash, expires_at, attempts - 1 AS attempts`,
    [userId],
  );
  const [row] = rows;
  return row && toConfirmation(row);
}

export async function deleteEmailConfirmation(pool: Queryable, userId: string): Promise<void> {
  await pool.query('DELETE FROM tools.email_confirmations WHERE user_id = $1', [userId]);
}

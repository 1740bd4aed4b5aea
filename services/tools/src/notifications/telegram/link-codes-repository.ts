import type { Queryable } from '@jarvis/db';

// tools.telegram_link_codes: the codes that link a chat, by their hash only.

// A user has one code at a time: a new one replaces the ones before it. Codes long expired go
// at the same time, so the table holds only what can still be used or was just used.
export async function saveLinkCode(
  db: Queryable,
  userId: string,
  codeHash: Buffer,
  expiresAt: Date,
): Promise<void> {
  await db.query(
    `DELETE FROM tools.telegram_link_codes
      WHERE user_id = $1 OR expires_at < now() - interval '1 day'`,
    [userId],
  );
  await db.query(
    'INSERT INTO tools.telegram_link_codes (code_hash, user_id, expires_at) VALUES ($1, $2, $3)',
    [codeHash, userId, expiresAt],
  );
}

// Uses the code up, in one statement, so that two chats sending it at once cannot both link:
// the user it links, or undefined for a code that is unknown, expired or used.
export async function useLinkCode(db: Queryable, codeHash: Buffer): Promise<string | undefined> {
  const { rows } = await db.query<{ user_id: string }>(
    `UPDATE tools.telegram_link_codes SET used_at = now()
      WHERE code_hash = $1 AND used_at IS NULL AND expires_at > now()
      RETURNING user_id`,
    [codeHash],
  );
  return rows[0]?.user_id;
}

import type { PoolClient } from '@jarvis/db';

// The session advisory lock that elects the one replica polling Telegram. A session lock lives
// as long as the connection that took it: a replica that dies or loses its connection frees it.
const POLLER_LOCK = 'tools:telegram-poller';

export async function tryPollerLock(client: PoolClient): Promise<boolean> {
  const { rows } = await client.query<{ locked: boolean }>(
    'SELECT pg_try_advisory_lock(hashtext($1)) AS locked',
    [POLLER_LOCK],
  );
  return rows[0]?.locked === true;
}

export async function releasePollerLock(client: PoolClient): Promise<void> {
  await client.query('SELECT pg_advisory_unlock(hashtext($1))', [POLLER_LOCK]);
}

// Whether the connection that holds the lock still answers.
export async function pingPollerLock(client: PoolClient): Promise<void> {
  await client.query('SELECT 1');
}

import { DEFAULT_CHANNEL_EVENTS } from '@jarvis/contracts';
import { type Pool, type Queryable, withTransaction } from '@jarvis/db';

// The devices subscribed to Web Push (tools.push_subscriptions) and the install's VAPID key pair
// (tools.vapid_keys). A user's webpush channel row exists exactly while they have a device: the
// first subscription makes it and the last one removed takes it away, so that the pipeline,
// which makes a delivery per channel row, never queues a push with nowhere to go.

export type PushSubscriptionRecord = {
  id: string;
  userId: string;
  endpoint: string;
  p256dh: string;
  auth: string;
  deviceName: string | null;
  createdAt: Date;
  lastSuccessAt: Date | null;
};

type SubscriptionRow = {
  id: string;
  user_id: string;
  endpoint: string;
  p256dh: string;
  auth: string;
  device_name: string | null;
  created_at: Date;
  last_success_at: Date | null;
};

const COLUMNS = 'id, user_id, endpoint, p256dh, auth, device_name, created_at, last_success_at';

function toRecord(row: SubscriptionRow): PushSubscriptionRecord {
  return {
    id: row.id,
    userId: row.user_id,
    endpoint: row.endpoint,
    p256dh: row.p256dh,
    auth: row.auth,
    deviceName: row.device_name,
    createdAt: row.created_at,
    lastSuccessAt: row.last_success_at,
  };
}

export type NewPushSubscription = {
  id: string;
  userId: string;
  endpoint: string;
  p256dh: string;
  auth: string;
  deviceName: string | undefined;
};

// The same browser subscribing again (its endpoint) keeps its row and id, with the keys it sends
// now; a name left out keeps the one it had. The webpush channel is made with the default kinds
// if the user has none.
export async function savePushSubscription(
  pool: Pool,
  subscription: NewPushSubscription,
): Promise<PushSubscriptionRecord> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<SubscriptionRow>(
      `INSERT INTO tools.push_subscriptions (id, user_id, endpoint, p256dh, auth, device_name)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (user_id, endpoint) DO UPDATE
          SET p256dh = EXCLUDED.p256dh, auth = EXCLUDED.auth,
              device_name = COALESCE(EXCLUDED.device_name, push_subscriptions.device_name)
       RETURNING ${COLUMNS}`,
      [
        subscription.id,
        subscription.userId,
        subscription.endpoint,
        subscription.p256dh,
        subscription.auth,
        subscription.deviceName ?? null,
      ],
    );
    await client.query(
      `INSERT INTO tools.notification_channels (user_id, type, config, events)
       VALUES ($1, 'webpush', '{}', $2)
       ON CONFLICT (user_id, type) DO NOTHING`,
      [subscription.userId, DEFAULT_CHANNEL_EVENTS],
    );
    const [row] = rows;
    if (!row) throw new Error('upsert returned no row');
    return toRecord(row);
  });
}

export async function listPushSubscriptions(
  db: Queryable,
  userId: string,
): Promise<PushSubscriptionRecord[]> {
  const { rows } = await db.query<SubscriptionRow>(
    `SELECT ${COLUMNS} FROM tools.push_subscriptions WHERE user_id = $1 ORDER BY created_at, id`,
    [userId],
  );
  return rows.map(toRecord);
}

export async function countPushSubscriptions(db: Queryable, userId: string): Promise<number> {
  const { rows } = await db.query<{ count: string }>(
    'SELECT count(*) AS count FROM tools.push_subscriptions WHERE user_id = $1',
    [userId],
  );
  return Number(rows[0]?.count ?? 0);
}

// Removes one device of the user (asked for, or its push service answered that it is gone), and
// the webpush channel with the last one. False when the user has no such device.
export async function deletePushSubscription(
  pool: Pool,
  userId: string,
  id: string,
): Promise<boolean> {
  return withTransaction(pool, async (client) => {
    const { rowCount } = await client.query(
      'DELETE FROM tools.push_subscriptions WHERE user_id = $1 AND id = $2',
      [userId, id],
    );
    await client.query(
      `DELETE FROM tools.notification_channels
        WHERE user_id = $1 AND type = 'webpush'
          AND NOT EXISTS (SELECT 1 FROM tools.push_subscriptions WHERE user_id = $1)`,
      [userId],
    );
    return (rowCount ?? 0) > 0;
  });
}

// DELETE /v1/notifications/channels/webpush: the channel goes with every device.
export async function deleteAllPushSubscriptions(db: Queryable, userId: string): Promise<void> {
  await db.query('DELETE FROM tools.push_subscriptions WHERE user_id = $1', [userId]);
}

export async function markPushSucceeded(db: Queryable, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.query(
    'UPDATE tools.push_subscriptions SET last_success_at = now() WHERE id = ANY($1::uuid[])',
    [ids],
  );
}

export type StoredVapidKeys = { publicKey: string; sealedPrivateKey: Buffer };

export async function getVapidKeys(db: Queryable): Promise<StoredVapidKeys | undefined> {
  const { rows } = await db.query<{ public_key: string; private_key: Buffer }>(
    'SELECT public_key, private_key FROM tools.vapid_keys WHERE id = 1',
  );
  const [row] = rows;
  return row && { publicKey: row.public_key, sealedPrivateKey: row.private_key };
}

// Keeps the pair unless one is there already: of two replicas starting together, the first
// insert wins and both answer the pair it stored.
export async function insertVapidKeysOnce(
  db: Queryable,
  keys: StoredVapidKeys,
): Promise<StoredVapidKeys> {
  await db.query(
    `INSERT INTO tools.vapid_keys (id, public_key, private_key) VALUES (1, $1, $2)
     ON CONFLICT (id) DO NOTHING`,
    [keys.publicKey, keys.sealedPrivateKey],
  );
  const stored = await getVapidKeys(db);
  if (!stored) throw new Error('the VAPID keys were not stored');
  return stored;
}

// The pair cannot be opened (the install's secret key changed): a new pair replaces it, and the
// devices go with the old one, since their subscriptions name its public key and every push
// service would refuse pushes signed with another.
export async function replaceVapidKeys(pool: Pool, keys: StoredVapidKeys): Promise<void> {
  await withTransaction(pool, async (client) => {
    await client.query(
      `INSERT INTO tools.vapid_keys (id, public_key, private_key, created_at)
       VALUES (1, $1, $2, now())
       ON CONFLICT (id) DO UPDATE
          SET public_key = EXCLUDED.public_key, private_key = EXCLUDED.private_key,
              created_at = EXCLUDED.created_at`,
      [keys.publicKey, keys.sealedPrivateKey],
    );
    await client.query('DELETE FROM tools.push_subscriptions');
    await client.query("DELETE FROM tools.notification_channels WHERE type = 'webpush'");
  });
}

import type { ChannelType, Delivery, DeliveryStatus, NotificationKind } from '@jarvis/contracts';
import type { Queryable } from '@jarvis/db';
import type { MissionQuestionRef, Notification } from '../channel';

// tools.notification_deliveries: one row per (event, channel), the source of truth of what was
// sent. The work queue only says which row to look at.

export type StoredDelivery = {
  id: string;
  userId: string;
  eventId: string;
  kind: NotificationKind;
  channel: ChannelType;
  title: string;
  notification: Notification;
  isUrgent: boolean;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: Date | null;
  error: string | null;
  createdAt: Date;
  sentAt: Date | null;
};

type Content = {
  text: string;
  occurredAt: string;
  url?: string;
  path?: string;
  approvalId?: string;
  question?: MissionQuestionRef;
};

type DeliveryRow = {
  id: string;
  user_id: string;
  event_id: string;
  kind: NotificationKind;
  channel: ChannelType;
  title: string;
  content: Content;
  is_urgent: boolean;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: Date | null;
  error: string | null;
  created_at: Date;
  sent_at: Date | null;
};

function toDelivery(row: DeliveryRow): StoredDelivery {
  const { text, occurredAt, url, path, approvalId, question } = row.content;
  return {
    id: row.id,
    userId: row.user_id,
    eventId: row.event_id,
    kind: row.kind,
    channel: row.channel,
    title: row.title,
    notification: {
      eventId: row.event_id,
      kind: row.kind,
      occurredAt,
      title: row.title,
      text,
      ...(url ? { url } : {}),
      ...(path ? { path } : {}),
      ...(approvalId ? { approvalId } : {}),
      ...(question ? { question } : {}),
    },
    isUrgent: row.is_urgent,
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    error: row.error,
    createdAt: row.created_at,
    sentAt: row.sent_at,
  };
}

export type NewDelivery = {
  id: string;
  userId: string;
  channel: ChannelType;
  notification: Notification;
  isUrgent: boolean;
  // Set: held until then (quiet hours); unset: queued now.
  heldUntil: Date | undefined;
};

// Inserts the deliveries of one event, one per channel, and answers every delivery the event
// has on those channels, new or not: an event seen again (redelivered after a crash before its
// work was queued) finds the rows the first sighting made, to queue them again.
export async function insertDeliveries(
  db: Queryable,
  deliveries: readonly NewDelivery[],
): Promise<Array<{ id: string; status: DeliveryStatus; attempts: number }>> {
  if (deliveries.length === 0) return [];
  const { rows } = await db.query<{ id: string; status: DeliveryStatus; attempts: number }>(
    `INSERT INTO tools.notification_deliveries
       (id, user_id, event_id, kind, channel, title, content, is_urgent, status, next_attempt_at)
     SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[],
                          $7::jsonb[], $8::boolean[], $9::text[], $10::timestamptz[])
     ON CONFLICT (user_id, event_id, channel)
       DO UPDATE SET updated_at = tools.notification_deliveries.updated_at
     RETURNING id, status, attempts`,
    [
      deliveries.map((one) => one.id),
      deliveries.map((one) => one.userId),
      deliveries.map((one) => one.notification.eventId),
      deliveries.map((one) => one.notification.kind),
      deliveries.map((one) => one.channel),
      deliveries.map((one) => one.notification.title),
      deliveries.map((one) => JSON.stringify(contentOf(one.notification))),
      deliveries.map((one) => one.isUrgent),
      deliveries.map((one) => (one.heldUntil ? 'held' : 'queued')),
      deliveries.map((one) => one.heldUntil ?? null),
    ],
  );
  return rows;
}

function contentOf(notification: Notification): Content {
  const { text, occurredAt, url, path, approvalId, question } = notification;
  return {
    text,
    occurredAt,
    ...(url ? { url } : {}),
    ...(path ? { path } : {}),
    ...(approvalId ? { approvalId } : {}),
    ...(question ? { question } : {}),
  };
}

// Takes a delivery for one attempt: counts the attempt and leases the row until `leaseMs` from
// now (next_attempt_at), so that a second copy of its work message, or the sweeper, leaves it
// alone meanwhile. Undefined when it is not due: already ended, held, or leased or waiting.
export async function claimDelivery(
  db: Queryable,
  id: string,
  leaseMs: number,
): Promise<StoredDelivery | undefined> {
  const { rows } = await db.query<DeliveryRow>(
    `UPDATE tools.notification_deliveries
     SET attempts = attempts + 1, updated_at = now(),
         next_attempt_at = now() + make_interval(secs => $2::double precision / 1000)
     WHERE id = $1 AND status IN ('queued', 'retrying')
       AND (next_attempt_at IS NULL OR next_attempt_at <= now())
     RETURNING *`,
    [id, leaseMs],
  );
  return rows[0] ? toDelivery(rows[0]) : undefined;
}

export async function markSent(db: Queryable, id: string): Promise<void> {
  await db.query(
    `UPDATE tools.notification_deliveries
     SET status = 'sent', sent_at = now(), next_attempt_at = NULL, error = NULL, updated_at = now()
     WHERE id = $1`,
    [id],
  );
}

export async function markRetrying(
  db: Queryable,
  id: string,
  error: string,
  nextAttemptAt: Date,
): Promise<void> {
  await db.query(
    `UPDATE tools.notification_deliveries
     SET status = 'retrying', error = $2, next_attempt_at = $3, updated_at = now()
     WHERE id = $1`,
    [id, error, nextAttemptAt],
  );
}

export async function markFailed(db: Queryable, id: string, error: string): Promise<void> {
  await db.query(
    `UPDATE tools.notification_deliveries
     SET status = 'failed', error = $2, next_attempt_at = NULL, updated_at = now()
     WHERE id = $1`,
    [id, error],
  );
}

// What the sweeper queues: a delivery and its attempts so far, which name its work message.
export type DueDelivery = { id: string; attempts: number };

// Held deliveries whose quiet hours have ended, and retrying ones whose next attempt is due,
// become queued: answers them, to publish. SKIP LOCKED: two replicas sweeping at once split them.
export async function queueDue(db: Queryable, limit: number): Promise<DueDelivery[]> {
  const { rows } = await db.query<DueDelivery>(
    `UPDATE tools.notification_deliveries SET status = 'queued', next_attempt_at = NULL,
       updated_at = now()
     WHERE id IN (SELECT id FROM tools.notification_deliveries
                  WHERE status IN ('held', 'retrying') AND next_attempt_at <= now()
                  ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
     RETURNING id, attempts`,
    [limit],
  );
  return rows;
}

// Queued deliveries untouched for `overdueMs`: their work message was lost (a crash before it
// was published, a worker that died during its attempt and left its lease to run out). Their
// clock starts again, so that each is queued once per `overdueMs` however long it stays lost.
export async function queueOverdue(
  db: Queryable,
  overdueMs: number,
  limit: number,
): Promise<DueDelivery[]> {
  const { rows } = await db.query<DueDelivery>(
    `UPDATE tools.notification_deliveries SET next_attempt_at = NULL, updated_at = now()
     WHERE id IN (SELECT id FROM tools.notification_deliveries
                  WHERE status = 'queued'
                    AND COALESCE(next_attempt_at, updated_at)
                        < now() - make_interval(secs => $1::double precision / 1000)
                  ORDER BY COALESCE(next_attempt_at, updated_at) LIMIT $2
                  FOR UPDATE SKIP LOCKED)
     RETURNING id, attempts`,
    [overdueMs, limit],
  );
  return rows;
}

// A user's deliveries, newest first, created before `before`. A page ends on a whole
// millisecond (the precision of the cursor): deliveries of one event share their creation time,
// and a cut inside it would skip the rest on the next page.
export async function listDeliveries(
  db: Queryable,
  query: {
    userId: string;
    channel: ChannelType | undefined;
    before: Date | undefined;
    limit: number;
  },
): Promise<{ deliveries: StoredDelivery[]; nextBefore: Date | undefined }> {
  const { rows } = await db.query<DeliveryRow>(
    `SELECT * FROM tools.notification_deliveries
     WHERE user_id = $1 AND ($2::text IS NULL OR channel = $2)
       AND ($3::timestamptz IS NULL OR created_at < $3)
     ORDER BY created_at DESC, channel, id LIMIT $4`,
    [query.userId, query.channel ?? null, query.before ?? null, query.limit + 1],
  );
  const first = rows[query.limit];
  if (!first) return { deliveries: rows.map(toDelivery), nextBefore: undefined };
  const cutAt = first.created_at.getTime();
  const page = rows.slice(0, query.limit).filter((row) => row.created_at.getTime() > cutAt);
  if (page.length > 0) {
    return { deliveries: page.map(toDelivery), nextBefore: new Date(cutAt + 1) };
  }
  // More than a page in one millisecond: that millisecond whole, however many.
  const whole = await db.query<DeliveryRow>(
    `SELECT * FROM tools.notification_deliveries
     WHERE user_id = $1 AND ($2::text IS NULL OR channel = $2)
       AND created_at >= $3 AND created_at < $4
     ORDER BY channel, id`,
    [query.userId, query.channel ?? null, new Date(cutAt), new Date(cutAt + 1)],
  );
  return { deliveries: whole.rows.map(toDelivery), nextBefore: new Date(cutAt) };
}

export function toDeliveryView(delivery: StoredDelivery): Delivery {
  const isWaiting = delivery.status === 'held' || delivery.status === 'retrying';
  return {
    id: delivery.id,
    eventId: delivery.eventId,
    kind: delivery.kind,
    channel: delivery.channel,
    status: delivery.status,
    title: delivery.title,
    attempts: delivery.attempts,
    createdAt: delivery.createdAt.toISOString(),
    sentAt: delivery.sentAt?.toISOString() ?? null,
    nextAttemptAt: isWaiting ? (delivery.nextAttemptAt?.toISOString() ?? null) : null,
    error: delivery.error,
  };
}

// The notes a user's agent sent within the last hour (one per note, whatever its channels).
export async function countRecentNotes(db: Queryable, userId: string): Promise<number> {
  const { rows } = await db.query<{ count: string }>(
    `SELECT count(DISTINCT event_id) AS count FROM tools.notification_deliveries
     WHERE user_id = $1 AND kind = 'note' AND created_at > now() - interval '1 hour'`,
    [userId],
  );
  return Number(rows[0]?.count ?? 0);
}

// Serialises a user's note sending, so that two notes at once cannot both pass the hourly limit.
export async function lockUserNotes(db: Queryable, userId: string): Promise<void> {
  await db.query("SELECT pg_advisory_xact_lock(hashtext('tools.notes:' || $1))", [userId]);
}

import type { NotificationSettings } from '@jarvis/contracts';
import type { Queryable } from '@jarvis/db';

// Each user's notification settings (tools.notification_settings): quiet hours, and the time
// zone they are read in. A user who never saved any has none: no quiet hours, in UTC.

type SettingsRow = { time_zone: string; quiet_start: string | null; quiet_end: string | null };

function toSettings(row: SettingsRow | undefined): NotificationSettings {
  if (!row) return { quietHours: null, timeZone: 'UTC' };
  const { quiet_start: start, quiet_end: end } = row;
  return { quietHours: start && end ? { start, end } : null, timeZone: row.time_zone };
}

export async function getSettings(pool: Queryable, userId: string): Promise<NotificationSettings> {
  const { rows } = await pool.query<SettingsRow>(
    'SELECT time_zone, quiet_start, quiet_end FROM tools.notification_settings WHERE user_id = $1',
    [userId],
  );
  return toSettings(rows[0]);
}

// Keeps the zone the gateway last told for the user. Writes only when it changed, since every
// request of the user carries it.
export async function saveTimeZone(
  pool: Queryable,
  userId: string,
  timeZone: string,
): Promise<void> {
  await pool.query(
    `INSERT INTO tools.notification_settings (user_id, time_zone) VALUES ($1, $2)
     ON CONFLICT (user_id) DO UPDATE SET time_zone = EXCLUDED.time_zone, updated_at = now()
      WHERE notification_settings.time_zone <> EXCLUDED.time_zone`,
    [userId, timeZone],
  );
}

export async function putSettings(
  pool: Queryable,
  userId: string,
  settings: NotificationSettings,
): Promise<NotificationSettings> {
  const { rows } = await pool.query<SettingsRow>(
    `INSERT INTO tools.notification_settings (user_id, time_zone, quiet_start, quiet_end)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (user_id) DO UPDATE
        SET time_zone = EXCLUDED.time_zone, quiet_start = EXCLUDED.quiet_start,
            quiet_end = EXCLUDED.quiet_end, updated_at = now()
     RETURNING time_zone, quiet_start, quiet_end`,
    [
      userId,
      settings.timeZone,
      settings.quietHours?.start ?? null,
      settings.quietHours?.end ?? null,
    ],
  );
  return toSettings(rows[0]);
}

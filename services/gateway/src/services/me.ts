import type { Me } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import {
  type Principal,
  setUserTimeZoneIfUnset,
  updateUserTimeZone,
} from '../repositories/users-repository';

// The zone in force while a user has set none: what the orchestrator and the scheduler assume
// too, so a user is told the same time everywhere.
export const DEFAULT_TIME_ZONE = 'UTC';

function toMe(user: { id: string; name: string; timeZone: string | null }): Me {
  return {
    id: user.id,
    name: user.name,
    timeZone: user.timeZone ?? DEFAULT_TIME_ZONE,
    isTimeZoneSet: user.timeZone !== null,
  };
}

// Read with the key on every request, so it costs no query of its own.
export function describeMe(principal: Principal): Me {
  return toMe({ id: principal.userId, name: principal.userName, timeZone: principal.timeZone });
}

export async function setTimeZone(pool: Pool, principal: Principal, timeZone: string): Promise<Me> {
  const user = await updateUserTimeZone(pool, principal.userId, timeZone);
  if (!user) throw new Error(`user ${principal.userId} vanished while its key was in use`);
  return toMe(user);
}

// A zone named by a chat becomes the user's only while none is set: one the user chose stays,
// whatever a client on a trip sends.
export async function adoptTimeZone(
  pool: Pool,
  principal: Principal,
  timeZone: string | undefined,
): Promise<void> {
  if (timeZone === undefined || principal.timeZone !== null) return;
  await setUserTimeZoneIfUnset(pool, principal.userId, timeZone);
}

import { z } from 'zod';
import { Id, TimeZone } from '../common';

// GET /v1/me, PATCH /v1/me: the key's user. timeZone is the zone reminders and schedules are told
// in: UTC until the user sets one (isTimeZoneSet false), or until a chat names one first.
export const Me = z.object({
  id: Id,
  name: z.string(),
  timeZone: z.string(),
  isTimeZoneSet: z.boolean(),
});
export type Me = z.infer<typeof Me>;

export const MeResponse = z.object({ user: Me });
export type MeResponse = z.infer<typeof MeResponse>;

export const MeChanges = z.strictObject({ timeZone: TimeZone });
export type MeChanges = z.infer<typeof MeChanges>;

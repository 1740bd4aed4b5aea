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

export const MeResponse = z.object({
  user: Me,
  // The install's Grafana as browsers reach it (GRAFANA_URL), for links to a run's trace; absent
  // when the install has none. Told here, with what every page of the web UI loads first, rather
  // than on each run, whose detail comes from the orchestrator, which knows nothing of Grafana.
  grafanaUrl: z.url({ protocol: /^https?$/ }).optional(),
});
export type MeResponse = z.infer<typeof MeResponse>;

export const MeChanges = z.strictObject({ timeZone: TimeZone });
export type MeChanges = z.infer<typeof MeChanges>;

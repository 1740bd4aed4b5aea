import { z } from 'zod';
import { Timestamp } from '../common';

// POST /v1/admin/alerts: Grafana's unified-alerting webhook (contact point of type webhook,
// payload version 1). Only the fields Jarvis reads are checked; the rest of what Grafana sends
// (receiver, groupKey, values, silenceURL, ...) is let through unread, so a newer Grafana that
// adds fields still gets through. Bounded all the same: the body limit caps the whole, these cap
// what is kept of it.

// Alerts one request may carry. Grafana sends one request per group; the contact point's
// maxAlerts keeps a bigger group under it (the rest is counted in truncatedAlerts).
export const ALERTS_PER_REQUEST_MAX = 100;
// Labels or annotations one alert may carry, and the longest name and value of each.
const LABELS_MAX = 64;
const LABEL_NAME_MAX_CHARS = 128;
const LABEL_VALUE_MAX_CHARS = 4_000;

export const AlertStatus = z.enum(['firing', 'resolved']);
export type AlertStatus = z.infer<typeof AlertStatus>;

const LabelSet = z
  .record(z.string().min(1).max(LABEL_NAME_MAX_CHARS), z.string().max(LABEL_VALUE_MAX_CHARS))
  .refine((labels) => Object.keys(labels).length <= LABELS_MAX, `at most ${LABELS_MAX} entries`);

export const GrafanaAlert = z.looseObject({
  status: AlertStatus,
  labels: LabelSet,
  annotations: LabelSet.default({}),
  startsAt: Timestamp,
  // A firing alert's is Go's zero time (0001-01-01T00:00:00Z).
  endsAt: Timestamp.optional(),
  // The alert's label set, hashed by Grafana: with startsAt and status it names one notification,
  // which a retry or a repeat of the same group sends again.
  fingerprint: z
    .string()
    .regex(/^[A-Za-z0-9]{1,64}$/, 'letters and digits (Grafana sends 16 hex digits)'),
  // Grafana's link to the rule. Used only when it points into the install's own Grafana.
  generatorURL: z.string().max(2_048).optional(),
});
export type GrafanaAlert = z.infer<typeof GrafanaAlert>;

export const GrafanaAlertsWebhook = z.looseObject({
  status: AlertStatus,
  alerts: z.array(GrafanaAlert).min(1).max(ALERTS_PER_REQUEST_MAX),
});
export type GrafanaAlertsWebhook = z.infer<typeof GrafanaAlertsWebhook>;

export const AlertsAcceptedResponse = z.object({
  // How many alerts of the request were told to the admin (a repeat of one already told is
  // counted, and not told again).
  accepted: z.number().int().nonnegative(),
});
export type AlertsAcceptedResponse = z.infer<typeof AlertsAcceptedResponse>;

import { type Bus, BusError, publishWork } from '@jarvis/bus';
import {
  defineEvent,
  type GrafanaAlert,
  USER_EVENT_TEXT_MAX_CHARS,
  UserEvent,
  userEventSubject,
} from '@jarvis/contracts';
import { HttpError } from '@jarvis/service-kit';

type OpsAlertEvent = Extract<UserEvent, { type: 'ops_alert' }>;

// Grafana's alerts as the admin's user events: one per alert, published for the notification
// pipeline of the tools service to deliver on the admin's channels.

// Names one notification: the alert (its label set's fingerprint), the time it started and its
// status. Grafana sends the same alert again on a retry and with every repeat of its group; the
// same id is stored once by the stream within its duplicate window, and delivered once per
// channel by the tools service (its deliveries are unique by event id) at any time after.
function alertEventId(alert: GrafanaAlert): string {
  const startsAt = new Date(alert.startsAt).toISOString();
  return `alert:${alert.fingerprint}:${startsAt}:${alert.status}`;
}

// generatorURL is whatever the payload says, and the payload is only as trusted as the admin
// key: a link reaches a channel only when it points into the install's own Grafana (GRAFANA_URL),
// else the link is Grafana's alert list there. No GRAFANA_URL: no link.
export function alertLink(
  generatorUrl: string | undefined,
  grafanaUrl: string | undefined,
): string | undefined {
  if (!grafanaUrl) return undefined;
  const fallback = `${grafanaUrl}/alerting/list`;
  if (!generatorUrl || !URL.canParse(generatorUrl)) return fallback;
  const base = new URL(grafanaUrl);
  const target = new URL(generatorUrl);
  // Parsed, so "/grafana/../elsewhere" is compared as "/elsewhere"; the trailing slash keeps
  // "/grafana-evil" out.
  const basePath = base.pathname.replace(/\/+$/, '');
  const isOwn =
    target.origin === base.origin &&
    target.username === '' &&
    target.password === '' &&
    target.pathname.startsWith(`${basePath}/`);
  return isOwn ? target.href : fallback;
}

function cut(text: string | undefined): string | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  return text.length <= USER_EVENT_TEXT_MAX_CHARS
    ? text
    : `${text.slice(0, USER_EVENT_TEXT_MAX_CHARS - 1)}…`;
}

// Grafana's own labels (__alert_rule_uid__ and the like) say nothing to the admin.
function visibleLabels(labels: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(labels).filter(([name]) => !name.startsWith('__')));
}

function toOpsAlertEvent(alert: GrafanaAlert, grafanaUrl: string | undefined) {
  const isResolved = alert.status === 'resolved';
  const endsAt = isResolved ? alert.endsAt : undefined;
  const url = alertLink(alert.generatorURL, grafanaUrl);
  const summary = cut(alert.annotations.summary);
  const description = cut(alert.annotations.description);
  const event: OpsAlertEvent = {
    type: 'ops_alert',
    occurredAt: endsAt ?? alert.startsAt,
    alert: {
      status: alert.status,
      name: cut(alert.labels.alertname) ?? 'Alert',
      labels: visibleLabels(alert.labels),
      ...(summary ? { summary } : {}),
      ...(description ? { description } : {}),
      startsAt: alert.startsAt,
      ...(endsAt ? { endsAt } : {}),
      fingerprint: alert.fingerprint,
      ...(url ? { url } : {}),
    },
  };
  return { eventId: alertEventId(alert), event };
}

// Tells the user (the admin whose key Grafana posts with) of each alert, on the user event stream
// (ensured by the caller). Unlike the services' own events, which are stored before they are
// told, an alert lives only in this request: a publish that fails answers 503, and Grafana tries
// again.
export async function publishOpsAlerts(
  bus: Bus,
  userId: string,
  alerts: readonly GrafanaAlert[],
  grafanaUrl: string | undefined,
): Promise<void> {
  const contract = defineEvent(userEventSubject(userId), UserEvent);
  try {
    await Promise.all(
      alerts.map((alert) => {
        const { eventId, event } = toOpsAlertEvent(alert, grafanaUrl);
        return publishWork(bus, contract, event, eventId);
      }),
    );
  } catch (error) {
    if (error instanceof BusError) throw error;
    bus.logger.warn({ err: error, userId }, 'could not publish ops alerts');
    throw new HttpError('unavailable', 'the alerts could not be queued; try again');
  }
}

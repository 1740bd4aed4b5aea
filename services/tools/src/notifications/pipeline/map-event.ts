import {
  type NotificationKind,
  URGENT_KINDS,
  USER_EVENT_TEXT_MAX_CHARS,
  type UserEvent,
} from '@jarvis/contracts';
import type { Notification } from '../channel';

// What an event tells the user outside the browser, if anything, and whether it goes through
// quiet hours.
type MappedNotification = { notification: Notification; isUrgent: boolean };

// Longest title a channel gets: ntfy and email show it on one line.
const TITLE_MAX_CHARS = 120;

// Maps a user event to the notification it makes; undefined for events nobody is told about
// away from the UI (a mission starting, a task finishing, a prompt or mission that merely
// started: their result comes as its own event).
export function mapEvent(
  event: UserEvent,
  eventId: string,
  publicUrl: string | undefined,
): MappedNotification | undefined {
  const link = (path: string) =>
    publicUrl ? `${publicUrl.replace(/\/+$/, '')}${path}` : undefined;
  const make = (
    kind: NotificationKind,
    title: string,
    text: string,
    path: string | undefined,
    extra: Partial<Notification> = {},
    isUrgent = URGENT_KINDS.includes(kind),
  ): MappedNotification => {
    const url = path === undefined ? undefined : link(path);
    return {
      notification: {
        eventId,
        kind,
        occurredAt: event.occurredAt,
        title: cut(title, TITLE_MAX_CHARS),
        text,
        ...(url ? { url } : {}),
        ...(path ? { path } : {}),
        ...extra,
      },
      isUrgent,
    };
  };
  switch (event.type) {
    case 'schedule_fired': {
      const { schedule, run } = event;
      const schedulePath = `/schedules/${schedule.id}`;
      if (run.status === 'fired') {
        if (schedule.actionType !== 'remind') return undefined;
        const text = event.text ?? schedule.name ?? 'Reminder';
        return make('reminder', schedule.name ?? `Reminder: ${text}`, text, '/chat');
      }
      if (run.status === 'running') return undefined;
      const what = schedule.name ? `"${schedule.name}"` : `A ${schedule.actionType} schedule`;
      return make(
        'scheduled_failure',
        `${what} ${run.status === 'failed' ? 'failed' : `was ${run.status}`}`,
        run.reason ?? `The occurrence due ${run.scheduledFor} was ${run.status}.`,
        schedulePath,
      );
    }
    case 'schedule_result':
      return event.status === 'done'
        ? make('scheduled_result', 'Scheduled work finished', event.text, '/chat')
        : make('scheduled_failure', 'Scheduled work failed', event.text, '/chat');
    case 'mission_updated': {
      if (event.change !== 'ended') return undefined;
      const { mission } = event;
      return make(
        'mission_report',
        `Mission ${mission.status}: ${mission.objective}`,
        event.report ?? mission.objective,
        `/missions/${mission.id}`,
      );
    }
    // A mission's task waits on its user: news of the mission, worth a note but not a wake-up
    // (the question waits a day). The answer goes back in the conversation, the mission's page,
    // or (Telegram) a reply to the question's message.
    case 'mission_question': {
      const { mission, question } = event;
      return make(
        'mission_report',
        `A mission asks: ${question.text}`,
        cut(
          `The mission "${mission.objective}" waits for your answer until ${question.expiresAt}. Answer in its conversation or on its page:\n${question.text}`,
          USER_EVENT_TEXT_MAX_CHARS,
        ),
        `/missions/${mission.id}`,
        { question: { missionId: mission.id, questionId: question.id } },
      );
    }
    case 'approval_requested': {
      const { approval } = event;
      return make(
        'approval_request',
        `Approve ${approval.toolName}?`,
        `A run waits for your decision on ${approval.toolName} (${describeArguments(approval.arguments)}) until ${approval.expiresAt}.`,
        '/approvals',
        { approvalId: approval.id },
      );
    }
    case 'ops_alert': {
      const { alert } = event;
      // A firing alert wakes the admin (a service is down); its all-clear can wait for morning.
      // The link is the gateway's, into the install's own Grafana, not the web UI.
      return make(
        'alert',
        `[${alert.status.toUpperCase()}] ${nameOf(alert)}`,
        describeAlert(alert),
        undefined,
        alert.url ? { url: alert.url } : {},
        alert.status === 'firing',
      );
    }
  }
}

type OpsAlert = Extract<UserEvent, { type: 'ops_alert' }>['alert'];

// The rule's name and what it is about, so that two services down are two titles: the service
// (the label Jarvis's metrics carry, or the scrape job), else the JetStream consumer.
function nameOf(alert: OpsAlert): string {
  const subject = alert.labels.service ?? alert.labels.job ?? alert.labels.consumer;
  return subject ? `${alert.name}: ${subject}` : alert.name;
}

// The rule's description (else its summary, else its name), then since when, and, for one that
// resolved, until when: the admin reads whether it is still going on.
function describeAlert(alert: OpsAlert): string {
  const what = alert.description ?? alert.summary ?? alert.name;
  const when =
    alert.status === 'resolved'
      ? `Resolved at ${alert.endsAt ?? 'an unknown time'}; firing since ${alert.startsAt}.`
      : `Firing since ${alert.startsAt}.`;
  return cut(`${what}\n${when}`, USER_EVENT_TEXT_MAX_CHARS);
}

// The call's arguments as the user reads them to decide: short, one line.
function describeArguments(args: Record<string, unknown>): string {
  return cut(JSON.stringify(args), 300);
}

export function cut(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars - 1)}…`;
}

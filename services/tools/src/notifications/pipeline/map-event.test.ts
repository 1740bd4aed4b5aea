import { randomUUID } from 'node:crypto';
import type { UserEvent } from '@jarvis/contracts';
import { describe, expect, it } from 'vitest';
import { mapEvent } from './map-event';

const AT = '2026-11-28T09:00:00.000Z';
const URL_BASE = 'https://jarvis.example.com/';

function fired(
  status: 'fired' | 'failed' | 'missed' | 'skipped' | 'running',
  actionType: 'remind' | 'prompt' | 'mission',
  extra: Partial<Extract<UserEvent, { type: 'schedule_fired' }>> = {},
): UserEvent {
  const scheduleId = randomUUID();
  return {
    type: 'schedule_fired',
    occurredAt: AT,
    schedule: {
      id: scheduleId,
      name: 'Water the plants',
      kind: 'once',
      actionType,
      nextRunAt: null,
    },
    run: {
      id: randomUUID(),
      scheduleId,
      scheduledFor: AT,
      startedAt: AT,
      finishedAt: AT,
      status,
      ...(status === 'fired' ? {} : { reason: 'the conversation was deleted' }),
    },
    ...(actionType === 'remind' ? { text: 'Water the plants on the balcony' } : {}),
    ...extra,
  };
}

describe('mapEvent', () => {
  it('makes a fired reminder an urgent reminder with its text, linking to the chat', () => {
    expect(mapEvent(fired('fired', 'remind'), 'schedule-run:1', URL_BASE)).toEqual({
      notification: {
        eventId: 'schedule-run:1',
        kind: 'reminder',
        occurredAt: AT,
        title: 'Water the plants',
        text: 'Water the plants on the balcony',
        url: 'https://jarvis.example.com/chat',
        path: '/chat',
      },
      isUrgent: true,
    });
  });

  it('skips prompts and missions that merely started, and runs still going', () => {
    expect(mapEvent(fired('fired', 'prompt'), 'e', URL_BASE)).toBeUndefined();
    expect(mapEvent(fired('fired', 'mission'), 'e', URL_BASE)).toBeUndefined();
    expect(mapEvent(fired('running', 'remind'), 'e', URL_BASE)).toBeUndefined();
  });

  it('tells a failed, missed or skipped occurrence as a non-urgent scheduled failure with why', () => {
    for (const status of ['failed', 'missed', 'skipped'] as const) {
      const event = fired(status, 'prompt');
      const mapped = mapEvent(event, 'e', undefined);
      expect(mapped?.isUrgent).toBe(false);
      expect(mapped?.notification).toMatchObject({
        kind: 'scheduled_failure',
        text: 'the conversation was deleted',
      });
      expect(mapped?.notification.title).toContain('Water the plants');
      // No PUBLIC_URL, no link; Web Push still opens the UI's own path.
      expect(mapped?.notification.url).toBeUndefined();
      expect(mapped?.notification.path).toMatch(/^\/schedules\//);
    }
  });

  it("tells scheduled work's result or failure", () => {
    const base = {
      type: 'schedule_result' as const,
      occurredAt: AT,
      scheduleId: randomUUID(),
      turnId: randomUUID(),
      conversationId: randomUUID(),
    };
    expect(
      mapEvent({ ...base, status: 'done', text: 'Three new papers.' }, 'r', URL_BASE),
    ).toMatchObject({
      notification: { kind: 'scheduled_result', text: 'Three new papers.' },
      isUrgent: false,
    });
    expect(
      mapEvent({ ...base, status: 'failed', text: 'no model answered' }, 'r', URL_BASE),
    ).toMatchObject({ notification: { kind: 'scheduled_failure', text: 'no model answered' } });
  });

  it("tells a mission's end with its report, and nothing of its other changes", () => {
    const mission = {
      id: randomUUID(),
      objective: 'Compare three laptops',
      status: 'completed' as const,
      conversationId: randomUUID(),
    };
    const ended: UserEvent = {
      type: 'mission_updated',
      occurredAt: AT,
      mission,
      change: 'ended',
      reportMessageId: randomUUID(),
      report: 'The second one.',
    };
    expect(mapEvent(ended, 'm', URL_BASE)).toEqual({
      notification: {
        eventId: 'm',
        kind: 'mission_report',
        occurredAt: AT,
        title: 'Mission completed: Compare three laptops',
        text: 'The second one.',
        url: `https://jarvis.example.com/missions/${mission.id}`,
        path: `/missions/${mission.id}`,
      },
      isUrgent: false,
    });
    expect(
      mapEvent(
        { type: 'mission_updated', occurredAt: AT, mission, change: 'started' },
        'm',
        URL_BASE,
      ),
    ).toBeUndefined();
  });

  it("tells a mission's question, not urgent, with a link to the mission", () => {
    const missionId = randomUUID();
    const questionId = randomUUID();
    const mapped = mapEvent(
      {
        type: 'mission_question',
        occurredAt: AT,
        mission: {
          id: missionId,
          objective: 'Plan the trip',
          status: 'running',
          conversationId: randomUUID(),
        },
        question: {
          id: questionId,
          taskId: randomUUID(),
          text: 'Train or plane?',
          messageId: randomUUID(),
          expiresAt: '2026-11-28T10:00:00.000Z',
        },
      },
      'mission-question:x',
      URL_BASE,
    );
    expect(mapped?.isUrgent).toBe(false);
    expect(mapped?.notification).toMatchObject({
      kind: 'mission_report',
      title: 'A mission asks: Train or plane?',
      path: `/missions/${missionId}`,
      // Telegram's reply to the message answers this very question.
      question: { missionId, questionId },
    });
    expect(mapped?.notification.text).toContain('Plan the trip');
    expect(mapped?.notification.text).toContain('Train or plane?');
  });

  it('makes an approval request urgent, with its id for buttons and a link to approvals', () => {
    const approvalId = randomUUID();
    const mapped = mapEvent(
      {
        type: 'approval_requested',
        occurredAt: AT,
        approval: {
          id: approvalId,
          runId: randomUUID(),
          turnId: randomUUID(),
          conversationId: randomUUID(),
          toolName: 'send_email',
          arguments: { to: 'ann@example.com' },
          status: 'pending',
          createdAt: AT,
          expiresAt: '2026-11-28T10:00:00.000Z',
          decidedAt: null,
        },
      },
      'approval:x:requested',
      URL_BASE,
    );
    expect(mapped?.isUrgent).toBe(true);
    expect(mapped?.notification).toMatchObject({
      kind: 'approval_request',
      approvalId,
      title: 'Approve send_email?',
      url: 'https://jarvis.example.com/approvals',
      path: '/approvals',
    });
    expect(mapped?.notification.text).toContain('ann@example.com');
  });

  describe('an ops alert', () => {
    const alert = (
      status: 'firing' | 'resolved',
      extra: Partial<Extract<UserEvent, { type: 'ops_alert' }>['alert']> = {},
    ): UserEvent => ({
      type: 'ops_alert',
      occurredAt: AT,
      alert: {
        status,
        name: 'Service down',
        labels: { alertname: 'Service down', job: 'memory' },
        summary: 'memory has been down for 2 minutes.',
        description: 'Prometheus cannot scrape memory:8082 for 2 minutes.',
        startsAt: AT,
        ...(status === 'resolved' ? { endsAt: '2026-11-28T09:05:00.000Z' } : {}),
        fingerprint: 'c6eadffa33fcdf37',
        ...extra,
      },
    });

    it('makes a firing one urgent, titled by its rule and service, told by its description', () => {
      expect(mapEvent(alert('firing'), 'alert:1', URL_BASE)).toEqual({
        notification: {
          eventId: 'alert:1',
          kind: 'alert',
          occurredAt: AT,
          title: '[FIRING] Service down: memory',
          text: `Prometheus cannot scrape memory:8082 for 2 minutes.\nFiring since ${AT}.`,
        },
        isUrgent: true,
      });
    });

    it('lets a resolved one wait for quiet hours to end, and says when it ended', () => {
      const mapped = mapEvent(alert('resolved'), 'alert:2', URL_BASE);
      expect(mapped?.isUrgent).toBe(false);
      expect(mapped?.notification.title).toBe('[RESOLVED] Service down: memory');
      expect(mapped?.notification.text).toContain('Resolved at 2026-11-28T09:05:00.000Z');
    });

    it("links only where the event says (the install's Grafana), never to the web UI", () => {
      const url = 'https://jarvis.example.com/grafana/alerting/list';
      expect(mapEvent(alert('firing', { url }), 'a', URL_BASE)?.notification.url).toBe(url);
      expect(mapEvent(alert('firing'), 'a', URL_BASE)?.notification.url).toBeUndefined();
    });

    it('tells its summary without a description, and its name without either', () => {
      const summed = alert('firing', { description: undefined });
      expect(mapEvent(summed, 'a', undefined)?.notification.text).toBe(
        `memory has been down for 2 minutes.\nFiring since ${AT}.`,
      );
      const bare = alert('firing', {
        summary: undefined,
        description: undefined,
        labels: { alertname: 'Service down' },
      });
      expect(mapEvent(bare, 'a', undefined)?.notification).toMatchObject({
        title: '[FIRING] Service down',
        text: `Service down\nFiring since ${AT}.`,
      });
    });
  });
});

import { type Bus, ensureEventStream, publishWork } from '@jarvis/bus';
import { defineEvent, USER_EVENTS_STREAM, UserEvent, userEventSubject } from '@jarvis/contracts';

export function ensureUserEventStream(bus: Bus): Promise<void> {
  return ensureEventStream(bus, USER_EVENTS_STREAM);
}

// Puts an event on the user's live stream (GET /v1/events). Best effort: what it tells is
// already stored and readable through the API, so a NATS hiccup must not fail the turn or the
// mission that made it. The id makes a retried job's second publish a no-op.
export async function publishUserEvent(
  bus: Bus,
  userId: string,
  eventId: string,
  event: UserEvent,
): Promise<void> {
  try {
    await publishWork(bus, defineEvent(userEventSubject(userId), UserEvent), event, eventId);
  } catch (error) {
    bus.logger.warn({ err: error, userId, eventId }, 'could not publish a user event');
  }
}

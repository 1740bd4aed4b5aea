import { defineEvent, USER_EVENTS_STREAM, UserEvent, userEventSubject } from '@jarvis/contracts';
import type { Bus } from './bus';
import { ensureEventStream } from './event-stream';
import { publishWork } from './work-queue';

// What a user hears about away from the turn they watch (GET /v1/events): every producer
// ensures the stream at start and publishes through publishUserEvent.
export function ensureUserEventStream(bus: Bus): Promise<void> {
  return ensureEventStream(bus, USER_EVENTS_STREAM);
}

// Puts an event on the user's live stream. Best effort: what it tells is already stored and
// readable through the API, so a NATS hiccup must not fail the work that made it. The id makes a
// retried job's second publish (within the stream's duplicate window) a no-op.
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

import { type Bus, ensureEventStream, lastEventSeq, readEvents } from '@jarvis/bus';
import {
  USER_EVENTS_STREAM,
  UserEvent,
  UserEventsHeaders,
  userEventSubject,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { HttpError } from '@jarvis/service-kit';
import { type Response, Router } from 'express';
import { principalOf } from '../middleware/authenticate';
import type { RateLimitDeps } from '../middleware/rate-limit';
import { takeEventStreamSlot } from '../services/event-stream-slots';
import { openSse } from '../services/sse';
import { parseBody } from './parse-body';

export type EventsRouterDeps = {
  bus: Bus;
  pool: Pool;
  stopping: AbortSignal;
  rateLimit: Pick<RateLimitDeps, 'redis' | 'namespace' | 'logger'>;
  // Open streams one user may hold at once, across replicas; 0: no limit.
  eventStreamsPerUser: number;
};

// GET /v1/events: the key's user's live events (approvals requested, mission updates), as
// server-sent events whose ids are USER_EVENTS stream sequences. With Last-Event-ID it resumes
// right after that event (as long as the stream still keeps it, 24 h); without, it sends only
// what happens from now on. Each connection reads the user's own subject through a consumer of
// its own, so one user never sees another's events; each consumer costs the server, hence the
// cap per user (429 past it).
export function createEventsRouter(deps: EventsRouterDeps): Router {
  const router = Router();
  // Ensured on first use as well as by the producers: the gateway may be up before any of them.
  let streamReady: Promise<void> | undefined;
  const ensureStream = () => {
    streamReady ??= ensureEventStream(deps.bus, USER_EVENTS_STREAM).catch((error: unknown) => {
      streamReady = undefined;
      throw error;
    });
    return streamReady;
  };

  // Reads the user's subject until the client leaves or the gateway stops.
  const streamUserEvents = async (res: Response, userId: string, lastEventId?: number) => {
    await ensureStream();
    // Fixed before the stream opens: whatever is published once the client has the headers is
    // sent, however long the consumer takes to start. An id past the end (the stream was
    // recreated, its sequences began again) must not hold back what comes now.
    const lastSeq = await lastEventSeq(deps.bus, USER_EVENTS_STREAM.stream);
    const afterSeq = Math.min(lastEventId ?? lastSeq, lastSeq);
    const stream = openSse(res, deps.stopping);
    const reader = await readEvents(
      deps.bus,
      {
        stream: USER_EVENTS_STREAM.stream,
        subject: userEventSubject(userId),
        schema: UserEvent,
        afterSeq,
      },
      (event, seq) => stream.send(event.type, event, seq),
    );
    await stream.closed;
    await reader.stop();
  };

  router.get('/', async (req, res) => {
    const principal = principalOf(req);
    const headers = parseBody(UserEventsHeaders, { 'Last-Event-ID': req.get('last-event-id') });
    const slot = await takeEventStreamSlot(
      { ...deps.rateLimit, perUser: deps.eventStreamsPerUser },
      principal.userId,
    );
    if (!slot) {
      throw new HttpError(
        'rate_limited',
        `too many open event streams: ${deps.eventStreamsPerUser} per user; close one first`,
      );
    }
    try {
      await streamUserEvents(res, principal.userId, headers['Last-Event-ID']);
    } finally {
      await slot.release();
    }
  });

  return router;
}

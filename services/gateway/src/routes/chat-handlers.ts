import {
  awaitTurnOutcome,
  type Bus,
  ensureEventStream,
  lastEventSeq,
  readEvents,
} from '@jarvis/bus';
import {
  ApprovalDecisionBody,
  ApprovalIdParams,
  ChatHeaders,
  ChatRequest,
  type GatewayHandler,
  orchestratorApprovalsDecide,
  orchestratorApprovalsGet,
  USER_EVENTS_STREAM,
  UserEvent,
  UserEventsHeaders,
  userEventSubject,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { HttpError } from '@jarvis/service-kit';
import type { Request, RequestHandler, Response } from 'express';
import { principalOf } from '../middleware/authenticate';
import type { RateLimitDeps } from '../middleware/rate-limit';
import { runChatTurn, streamChatTurn, toChatResponse } from '../services/chat';
import { takeEventStreamSlot } from '../services/event-stream-slots';
import { adoptTimeZone } from '../services/me';
import { openSse } from '../services/sse';
import { parseBody } from './parse-body';

export type ChatHandlersDeps = {
  bus: Bus;
  pool: Pool;
  // Parses the JSON body within the general limit.
  json: RequestHandler;
  submitTimeoutMs: number;
  turnTimeoutMs: number;
  // The service's: open event streams end on it.
  stopping: AbortSignal;
  rateLimit: Pick<RateLimitDeps, 'redis' | 'namespace' | 'logger'>;
  // Open streams one user may hold at once, across replicas; 0: no limit.
  eventStreamsPerUser: number;
};

// Asked for by Accept, by the client's preference: a client that takes both and lists the event
// stream first gets it; one that sends no Accept, or */*, gets JSON.
function wantsEventStream(req: Request): boolean {
  return req.accepts(['application/json', 'text/event-stream']) === 'text/event-stream';
}

// Chat turns, answered as JSON when they end or streamed as server-sent events; decisions on
// the risky tool calls they paused on; and the user's live events.
export function createChatHandlers(
  deps: ChatHandlersDeps,
): Record<Extract<GatewayHandler, 'chat' | 'decideApproval' | 'userEvents'>, RequestHandler[]> {
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

  return {
    chat: [
      deps.json,
      async (req, res) => {
        const principal = principalOf(req);
        const body = parseBody(ChatRequest, req.body);
        const headers = parseBody(ChatHeaders, { 'Idempotency-Key': req.get('idempotency-key') });
        // The turn's zone is the one it names, else the user's: the agent resolves "tomorrow at
        // 9" there.
        const turn = {
          userId: principal.userId,
          idempotencyKey: headers['Idempotency-Key'],
          timeZone: body.timeZone ?? principal.timeZone ?? undefined,
        };
        await adoptTimeZone(deps.pool, principal, body.timeZone);
        const options = {
          submitTimeoutMs: deps.submitTimeoutMs,
          turnTimeoutMs: deps.turnTimeoutMs,
        };
        if (wantsEventStream(req)) {
          await streamChatTurn(deps.bus, turn, body, options, () => openSse(res, deps.stopping));
          return;
        }
        res.json(await runChatTurn(deps.bus, turn, body, options));
      },
    ],

    // Answers like POST /v1/chat: with the reply of the run the decision let go on.
    decideApproval: [
      deps.json,
      async (req, res) => {
        const principal = principalOf(req);
        const { id } = parseBody(ApprovalIdParams, req.params);
        const { decision } = parseBody(ApprovalDecisionBody, req.body);
        const userId = principal.userId;
        const { approval } = await deps.bus.request(orchestratorApprovalsGet, { userId, id });
        let decided = approval;
        const event = await awaitTurnOutcome(
          deps.bus,
          approval.turnId,
          deps.turnTimeoutMs,
          async () => {
            decided = (
              await deps.bus.request(orchestratorApprovalsDecide, { userId, id, decision })
            ).approval;
          },
        );
        res.json({ ...toChatResponse(event), decided });
      },
    ],

    // The user's live events (approvals requested, mission updates), as server-sent events whose
    // ids are USER_EVENTS stream sequences. With Last-Event-ID it resumes right after that event
    // (as long as the stream still keeps it, 24 h); without, it sends only what happens from
    // now on. Each connection reads the user's own subject through a consumer of its own, so
    // one user never sees another's events; each consumer costs the server, hence the cap per
    // user (429 past it).
    userEvents: [
      async (req, res) => {
        const principal = principalOf(req);
        const headers = parseBody(UserEventsHeaders, {
          'Last-Event-ID': req.get('last-event-id'),
        });
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
      },
    ],
  };
}

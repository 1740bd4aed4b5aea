import type { Bus } from '@jarvis/bus';
import { ChatHeaders, ChatRequest } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { type Request, Router } from 'express';
import { principalOf } from '../middleware/authenticate';
import { runChatTurn, streamChatTurn } from '../services/chat';
import { openSse } from '../services/sse';
import { parseBody } from './parse-body';

export type ChatRouterDeps = {
  bus: Bus;
  pool: Pool;
  submitTimeoutMs: number;
  turnTimeoutMs: number;
  stopping: AbortSignal;
};

// Asked for by Accept, by the client's preference: a client that takes both and lists the event
// stream first gets it; one that sends no Accept, or */*, gets JSON.
function wantsEventStream(req: Request): boolean {
  return req.accepts(['application/json', 'text/event-stream']) === 'text/event-stream';
}

// POST /v1/chat: one turn, answered as JSON when it ends, or streamed as server-sent events.
export function createChatRouter(deps: ChatRouterDeps): Router {
  const router = Router();
  router.post('/', async (req, res) => {
    const principal = principalOf(req);
    const body = parseBody(ChatRequest, req.body);
    const headers = parseBody(ChatHeaders, { 'Idempotency-Key': req.get('idempotency-key') });
    const turn = { userId: principal.userId, idempotencyKey: headers['Idempotency-Key'] };
    const options = { submitTimeoutMs: deps.submitTimeoutMs, turnTimeoutMs: deps.turnTimeoutMs };
    if (wantsEventStream(req)) {
      await streamChatTurn(deps.bus, turn, body, options, () => openSse(res, deps.stopping));
      return;
    }
    res.json(await runChatTurn(deps.bus, turn, body, options));
  });
  return router;
}

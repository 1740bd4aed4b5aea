import { TurnCancelResponse, TurnIdParams, turnCancel } from '../../orchestrator-turns-cancel';
import { UserEvent, UserEventsHeaders } from '../../user-events';
import { ChatHeaders, ChatRequest, ChatResponse, ChatStreamEvent } from '../chat';
import { type Endpoint, json } from '../endpoint';

export const CHAT_ENDPOINTS: Endpoint[] = [
  {
    method: 'post',
    path: '/v1/chat',
    summary: 'Send a message and get the reply',
    description:
      'One turn. Without conversationId the message goes to your persistent conversation. A turn ' +
      'that pauses on a risky tool call answers `approval`: decide with POST /v1/approvals/{id}. ' +
      'With `Accept: text/event-stream` the turn streams as server-sent events, each named by ' +
      'the `type` of its data: `accepted`, then `delta`, `tool_started` and `tool_finished` as ' +
      'they happen, and `done` or `failed` last. Closing the stream does not stop the turn. ' +
      'With an Idempotency-Key, the same key and body again answers the same turn (waiting for ' +
      'it, or streaming it, while it runs): a safe retry after a 503 or 504.',
    tag: 'chat',
    auth: 'user',
    headers: ChatHeaders,
    body: json(ChatRequest),
    status: 200,
    response: { ...json(ChatResponse), 'text/event-stream': ChatStreamEvent },
    errors: ['not_found', 'budget_exceeded', 'timeout', 'cancelled', 'idempotency_key_reused'],
    handler: 'chat',
  },
  {
    method: 'post',
    path: '/v1/turns/{turnId}/cancel',
    summary: 'Stop a running turn',
    description:
      'The turn stops before its next step, stores "Stopped at your request." as its reply and ' +
      'ends with `failed` of code `cancelled`. A turn that has ended answers 409.',
    tag: 'chat',
    auth: 'user',
    params: TurnIdParams,
    status: 202,
    response: json(TurnCancelResponse),
    errors: ['not_found', 'conflict', 'timeout'],
    forward: { rpc: turnCancel },
  },
  {
    method: 'get',
    path: '/v1/events',
    summary: 'Your live events, as server-sent events',
    description:
      'Approvals requested and mission updates, each named by its `type`, with its stream ' +
      'sequence as id. With Last-Event-ID, everything after that event (kept 24 h); without, ' +
      'only what happens from now on.',
    tag: 'chat',
    auth: 'user',
    headers: UserEventsHeaders,
    status: 200,
    response: { 'text/event-stream': UserEvent },
    handler: 'userEvents',
  },
];

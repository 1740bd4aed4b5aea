import type { ApprovalRequest, ChatResponse, ErrorInfo, TurnEvent, Usage } from '@jarvis/contracts';
import { type ApiClient, ApiError } from './api-client';
import { createSseParser, type ServerSentEvent } from './sse-parser';

type ToolStarted = Extract<TurnEvent, { type: 'tool_started' }>;
type ToolFinished = Extract<TurnEvent, { type: 'tool_finished' }>;

type ToolStartedEvent = Pick<ToolStarted, 'toolCallId' | 'name' | 'arguments'>;
type ToolFinishedEvent = Pick<
  ToolFinished,
  'toolCallId' | 'name' | 'isError' | 'durationMs' | 'screenshot' | 'files'
>;

export type ChatStreamHandlers = {
  // The turn was queued: its ids, so it can be cancelled while it runs.
  onAccepted(ids: { turnId: string; runId: string }): void;
  onDelta(text: string): void;
  onToolStarted(event: ToolStartedEvent): void;
  onToolFinished(event: ToolFinishedEvent): void;
};

export type ChatOutcome = {
  conversationId: string;
  runId: string;
  reply: string;
  usage: Usage;
  approval?: ApprovalRequest;
  // False when the server answered the whole turn as JSON (no progress was seen).
  isStreamed: boolean;
};

type DoneData = {
  conversationId: string;
  runId: string;
  reply: { content: string };
  usage: Usage;
  approval?: ApprovalRequest;
};

function parseData<T>(event: ServerSentEvent): T {
  try {
    return JSON.parse(event.data) as T;
  } catch {
    throw new ApiError(0, 'bad_stream', `the server sent an unreadable ${event.event} event`);
  }
}

// Sends one message. Asks for server-sent events (text as it is written, tool calls as they
// start and end); a server that answers JSON instead gives the whole reply at once.
export async function sendChatMessage(
  client: ApiClient,
  body: { message: string; timeZone?: string },
  handlers: ChatStreamHandlers,
  signal?: AbortSignal,
): Promise<ChatOutcome> {
  const response = await client.open('/v1/chat', {
    method: 'POST',
    // Only the event stream is asked for: a gateway that cannot stream answers JSON anyway.
    headers: { accept: 'text/event-stream', 'content-type': 'application/json' },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
  const contentType = response.headers.get('content-type') ?? '';
  if (!contentType.includes('text/event-stream') || !response.body) {
    const chat = (await response.json()) as ChatResponse;
    return {
      conversationId: chat.conversationId,
      runId: chat.runId,
      reply: chat.reply.content,
      usage: chat.usage,
      ...(chat.approval ? { approval: chat.approval } : {}),
      isStreamed: false,
    };
  }

  const parser = createSseParser();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      for (const event of parser.push(value)) {
        switch (event.event) {
          case 'accepted':
            handlers.onAccepted(parseData(event));
            break;
          case 'delta':
            handlers.onDelta(parseData<{ text: string }>(event).text);
            break;
          case 'tool_started':
            handlers.onToolStarted(parseData(event));
            break;
          case 'tool_finished':
            handlers.onToolFinished(parseData(event));
            break;
          case 'failed': {
            const { error } = parseData<{ error: ErrorInfo }>(event);
            throw new ApiError(0, error.code, error.message);
          }
          case 'done': {
            const data = parseData<DoneData>(event);
            return {
              conversationId: data.conversationId,
              runId: data.runId,
              reply: data.reply.content,
              usage: data.usage,
              ...(data.approval ? { approval: data.approval } : {}),
              isStreamed: true,
            };
          }
          // Events added later are not this client's business.
        }
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
  throw new ApiError(
    0,
    'stream_ended',
    'The connection closed before the reply was finished. The turn goes on; its reply will be kept.',
  );
}

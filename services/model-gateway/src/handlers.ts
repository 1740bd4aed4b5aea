import type { Bus } from '@jarvis/bus';
import { ModelChatChunk, modelChat, modelChatCancel, modelEmbed } from '@jarvis/contracts';
import type { RouterDeps } from './routing/chat-router';
import { routeChat } from './routing/chat-router';
import { type EmbedDeps, routeEmbed } from './routing/embed-router';

// A cancel that arrives before its request (they travel separately) is remembered this long.
const EARLY_CANCEL_MS = 60_000;

export function registerHandlers(
  bus: Bus,
  deps: { chat: RouterDeps; embed: EmbedDeps },
): { unsubscribe(): void }[] {
  const running = new Map<string, AbortController>();
  const cancelledEarly = new Map<string, number>();
  const cancel = bus.subscribe(
    modelChatCancel.subject,
    modelChatCancel.payload,
    ({ requestId }) => {
      const controller = running.get(requestId);
      if (controller) controller.abort();
      else cancelledEarly.set(requestId, Date.now() + EARLY_CANCEL_MS);
    },
  );
  return [
    cancel,
    bus.serve(modelChat, async (request) => {
      const requestId = request.requestId ?? crypto.randomUUID();
      const controller = new AbortController();
      forgetExpired(cancelledEarly);
      if (cancelledEarly.delete(requestId)) controller.abort();
      running.set(requestId, controller);
      try {
        const streamTo = request.streamTo;
        return await routeChat(
          deps.chat,
          { ...request, requestId },
          {
            signal: controller.signal,
            ...(streamTo
              ? { onChunk: (chunk) => bus.sendChunk(streamTo, ModelChatChunk, chunk) }
              : {}),
          },
        );
      } finally {
        running.delete(requestId);
      }
    }),
    bus.serve(modelEmbed, (request) => routeEmbed(deps.embed, request)),
  ];
}

function forgetExpired(cancelled: Map<string, number>): void {
  const now = Date.now();
  for (const [requestId, until] of cancelled) if (until < now) cancelled.delete(requestId);
}

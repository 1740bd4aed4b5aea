import { type Bus, BusError } from '@jarvis/bus';
import { modelRoute, modelRouteChanged, type RoutedModel } from '@jarvis/contracts';
import type { Logger } from '@jarvis/telemetry';

// How long a route is kept when no change is announced. The announcements are core NATS events,
// lost while this process is disconnected or before it subscribes, so a missed one must not
// leave a turn sized for the wrong model for long: that turn's call is refused as too long, or
// wastes the window. Half a minute bounds it, at one route request a half minute, not one a turn.
// A cooldown that ends is announced by nobody; the route is read again when the earliest ends.
const ROUTE_TTL_MS = 30_000;
// How long a turn waits to hear which model will answer before it sizes its context as if none
// were known: the gateway answers from memory and one Redis read, so a longer wait means it is
// down, and the model call will say so.
const ROUTE_TIMEOUT_MS = 1_000;

export type ChatRoute = {
  // The model a chat call tries first: the first of the chat route not cooling down. Undefined
  // when model-gateway does not answer (not kept: the next turn asks again).
  expectModel(): Promise<RoutedModel | undefined>;
};

// The chat route as model-gateway.route answers it, kept until model-gateway announces a change
// (model-gateway.route.changed), a cooldown in it ends, or ROUTE_TTL_MS passes.
export function watchChatRoute(
  deps: { bus: Bus; logger: Logger },
  ttlMs = ROUTE_TTL_MS,
): ChatRoute {
  let kept: { model: RoutedModel | undefined; until: number } | undefined;
  let asking: Promise<RoutedModel | undefined> | undefined;
  // Counts the changes announced: an answer asked for before the latest one is not kept.
  let changes = 0;
  // Closed with the bus.
  deps.bus.subscribe(modelRouteChanged.subject, modelRouteChanged.payload, () => {
    changes += 1;
    kept = undefined;
    asking = undefined;
  });
  const ask = async (): Promise<RoutedModel | undefined> => {
    const askedAt = changes;
    const { models } = await deps.bus.request(
      modelRoute,
      { purpose: 'chat' },
      { timeoutMs: ROUTE_TIMEOUT_MS },
    );
    const model = models.find((candidate) => candidate.coolingDownUntil === undefined) ?? models[0];
    const cooldownEnds = models.flatMap((candidate) =>
      candidate.coolingDownUntil ? [Date.parse(candidate.coolingDownUntil)] : [],
    );
    if (askedAt === changes) kept = { model, until: Math.min(Date.now() + ttlMs, ...cooldownEnds) };
    return model;
  };
  return {
    async expectModel() {
      if (kept && Date.now() < kept.until) return kept.model;
      // Turns that start together share one request.
      const pending = asking ?? ask();
      asking = pending;
      try {
        return await pending;
      } catch (error) {
        if (!(error instanceof BusError)) throw error;
        deps.logger.warn(
          { err: error },
          'model-gateway did not say which model answers; context sized by CONTEXT_TOKEN_BUDGET',
        );
        return undefined;
      } finally {
        if (asking === pending) asking = undefined;
      }
    },
  };
}

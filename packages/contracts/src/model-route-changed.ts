import { z } from 'zod';
import { Timestamp } from './common';
import { defineEvent } from './define';

// model-gateway.route.changed: what model-gateway.route answers has changed. A replica sends it
// when it starts, with its configuration, and when a failure of its own opens a provider's
// cooldown (whichever replica that is: the others learn of it from this). A cooldown's end
// sends none: a route says when each cooldown ends. A core NATS event, not durable: a listener
// away when it was sent misses it, so it must not trust a route it read for ever.
export const ModelRouteChanged = z.object({
  reason: z.enum(['configuration', 'cooldown']),
  // The provider that began to cool down, and when calls may try it again.
  provider: z.string().optional(),
  coolingDownUntil: Timestamp.optional(),
});
export type ModelRouteChanged = z.infer<typeof ModelRouteChanged>;

export const modelRouteChanged = defineEvent('model-gateway.route.changed', ModelRouteChanged);

import type { Bus } from '@jarvis/bus';
import { type ModelRouteResponse, modelRoute } from '@jarvis/contracts';
import { tokenizerFamilyOf } from '@jarvis/tokens';
import type { Purpose } from './config/model-config';
import { publishRouteChanged, type Routing } from './routing/create-routing';

// model-gateway.route: a purpose's models in the order calls try them, as this replica routes
// them (credentials, env overrides), with the providers cooling down now, read from Redis at
// each ask: callers keep the answer until the next change is announced. For embed it is how
// memory knows whether a real embedding model can answer, without embedding anything to find out.
// Once it answers, a replica announces its route: a configuration changes only with a restart,
// and callers keep what they read until then.
export function registerRouteHandlers(bus: Bus, routing: Routing): ReturnType<Bus['serve']>[] {
  const served = bus.serve(modelRoute, ({ purpose }) => describeRoute(routing, purpose));
  publishRouteChanged(bus, { reason: 'configuration' });
  return [served];
}

async function describeRoute(routing: Routing, purpose: Purpose): Promise<ModelRouteResponse> {
  const route = purpose === 'embed' ? routing.embed.route : routing.chat.routes[purpose];
  const cooling = await routing.chat.cooldown.openNow([
    ...new Set(route.map((target) => target.provider)),
  ]);
  return {
    purpose,
    models: route.map((target) => {
      const until = cooling.get(target.provider);
      return {
        provider: target.provider,
        model: target.model,
        contextWindow: target.info.contextWindow,
        tokenizer: tokenizerFamilyOf(target.provider, target.model),
        ...(until ? { coolingDownUntil: until.toISOString() } : {}),
      };
    }),
  };
}

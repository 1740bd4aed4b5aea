import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import {
  type ModelRouteChanged,
  modelRoute,
  modelRouteChanged,
  type RoutedModel,
} from '@jarvis/contracts';
import { createLogger } from '@jarvis/telemetry';
import { uniqueNamespace, waitFor } from '@jarvis/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { watchChatRoute } from './chat-route';

const CLAUDE: RoutedModel = {
  provider: 'anthropic',
  model: 'claude-sonnet-4-5',
  contextWindow: 200_000,
  tokenizer: 'claude',
};
const GPT: RoutedModel = {
  provider: 'openai',
  model: 'gpt-4.1-mini',
  contextWindow: 1_047_576,
  tokenizer: 'o200k_base',
};

const coolingFor = (model: RoutedModel, ms: number): RoutedModel => ({
  ...model,
  coolingDownUntil: new Date(Date.now() + ms).toISOString(),
});

const buses: Bus[] = [];

afterEach(async () => {
  await Promise.all(buses.splice(0).map((bus) => bus.close()));
});

// A stand-in for model-gateway on real NATS: it answers model-gateway.route with `models`
// (after `delayMs`), counts the requests, and announces changes as model-gateway does.
async function startGateway() {
  const namespace = uniqueNamespace('chat-route');
  const gateway = await connectTestBus(namespace);
  const orchestrator = await connectTestBus(namespace);
  buses.push(gateway, orchestrator);
  const state = { models: [CLAUDE, GPT], asked: 0, delayMs: 0 };
  gateway.serve(modelRoute, async ({ purpose }) => {
    state.asked += 1;
    const models = state.models;
    await new Promise((resolve) => setTimeout(resolve, state.delayMs));
    return { purpose, models };
  });
  await gateway.nc.flush();
  const announce = async (change: ModelRouteChanged) => {
    gateway.publish(modelRouteChanged.subject, modelRouteChanged.payload, change);
    await gateway.nc.flush();
  };
  const logger = createLogger('chat-route-test', 'silent');
  const watch = async (ttlMs?: number) => {
    const route = watchChatRoute({ bus: orchestrator, logger }, ttlMs);
    await orchestrator.nc.flush();
    return route;
  };
  return { state, announce, watch };
}

describe('watchChatRoute', () => {
  it('asks model-gateway once, and turns that start together share the request', async () => {
    const { state, watch } = await startGateway();
    const route = await watch();

    const together = await Promise.all([route.expectModel(), route.expectModel()]);
    const later = await route.expectModel();

    expect(together).toEqual([CLAUDE, CLAUDE]);
    expect(later).toEqual(CLAUDE);
    expect(state.asked).toBe(1);
  });

  it('answers the next model as soon as a cooldown is announced, long before its time limit', async () => {
    const { state, announce, watch } = await startGateway();
    const route = await watch(60_000);
    expect(await route.expectModel()).toEqual(CLAUDE);

    state.models = [coolingFor(CLAUDE, 60_000), GPT];
    await announce({ reason: 'cooldown', provider: 'anthropic' });

    // Well within the minute the route would otherwise be kept.
    const next = await waitFor(
      async () => ((await route.expectModel())?.provider === 'openai' ? 'read again' : undefined),
      { timeoutMs: 2_000, intervalMs: 20 },
    );

    expect(next).toBe('read again');
    expect(state.asked).toBe(2);
  });

  it('asks again when the cooldown it knows of ends, which nobody announces', async () => {
    const { state, watch } = await startGateway();
    state.models = [coolingFor(CLAUDE, 300), GPT];
    const route = await watch(60_000);
    expect((await route.expectModel())?.provider).toBe('openai');

    state.models = [CLAUDE, GPT];
    await new Promise((resolve) => setTimeout(resolve, 350));

    expect(await route.expectModel()).toEqual(CLAUDE);
    expect(state.asked).toBe(2);
  });

  it('reads the route again after its time limit, when a change went unheard', async () => {
    const { state, watch } = await startGateway();
    const route = await watch(200);
    expect(await route.expectModel()).toEqual(CLAUDE);

    state.models = [GPT];
    expect(await route.expectModel()).toEqual(CLAUDE);
    await new Promise((resolve) => setTimeout(resolve, 250));

    expect(await route.expectModel()).toEqual(GPT);
  });

  it('does not keep an answer that was asked for before a change was announced', async () => {
    const { state, announce, watch } = await startGateway();
    state.delayMs = 300;
    const route = await watch(60_000);

    const before = route.expectModel();
    await waitFor(() => state.asked === 1 || undefined);
    state.models = [GPT];
    await announce({ reason: 'configuration' });
    state.delayMs = 0;

    expect(await before).toEqual(CLAUDE);
    expect(await route.expectModel()).toEqual(GPT);
    expect(state.asked).toBe(2);
  });

  it('answers no model when model-gateway is silent, and asks again at the next turn', async () => {
    const namespace = uniqueNamespace('chat-route-silent');
    const orchestrator = await connectTestBus(namespace);
    buses.push(orchestrator);
    const route = watchChatRoute({
      bus: orchestrator,
      logger: createLogger('chat-route-test', 'silent'),
    });
    expect(await route.expectModel()).toBeUndefined();

    const gateway = await connectTestBus(namespace);
    buses.push(gateway);
    gateway.serve(modelRoute, async ({ purpose }) => ({ purpose, models: [GPT] }));
    await gateway.nc.flush();

    expect(await route.expectModel()).toEqual(GPT);
  });
});

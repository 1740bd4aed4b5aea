import { type PrivateNats, startPrivateNats } from '@jarvis/bus/testing';
import { waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RouterFixture, startRouterFixture } from './router-fixture';

// The gateway's routes on a NATS server of this file's own, taken down as an outage would be:
// the machine's shared server stays up for everyone else.
let nats: PrivateNats;
let harness: RouterFixture;

beforeAll(async () => {
  nats = await startPrivateNats();
  harness = await startRouterFixture('/v1', { natsUrl: nats.url });
  await nats.stop();
  await waitFor(() => !harness.bus.isConnected(), { what: 'the gateway to see the outage' });
});

afterAll(async () => {
  await harness?.stop();
  await nats?.stop();
});

describe('with NATS down', () => {
  it.each([
    ['a memory request', '/memory/facts'],
    ['an event stream', '/events'],
  ])('answers %s 503 at once, naming the message bus', async (_what, route) => {
    const started = performance.now();
    const reply = await harness.call('GET', route, { key: harness.alice.key });
    const ms = performance.now() - started;

    expect(reply).toEqual({
      status: 503,
      body: { error: { code: 'unavailable', message: 'the message bus is unavailable' } },
    });
    // A service that is merely slow gets 5 s (SERVICE_TIMEOUT_MS) before its 504.
    expect(ms).toBeLessThan(1_000);
  });
});

import { createLogger } from '@jarvis/telemetry';
import { NATS_URL, uniqueNamespace } from '@jarvis/testkit';
import { Bus } from './bus';
import { BusError } from './bus-error';

// A bus on the machine's real NATS in a namespace of its own, so parallel test files never see
// each other's messages. Here rather than in the testkit, which must not depend on the bus.
export async function connectTestBus(namespace = uniqueNamespace()): Promise<Bus> {
  return Bus.connect({
    url: NATS_URL,
    namespace,
    name: 'test',
    logger: createLogger('test', 'silent'),
  });
}

// The BusError a request fails with; fails the test if it succeeds or fails otherwise.
export async function catchBusError(promise: Promise<unknown>): Promise<BusError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof BusError) return error;
    throw error;
  }
  throw new Error('expected the request to fail with a BusError');
}

// Sends a body as it is, past the client-side validation of Bus.request, so the service's own
// validation at its edge is what answers. Returns the reply envelope as JSON.
export async function sendRaw(bus: Bus, subject: string, body: unknown): Promise<unknown> {
  const reply = await bus.nc.request(
    bus.subject(subject),
    new TextEncoder().encode(JSON.stringify(body)),
    { timeout: 10_000 },
  );
  return JSON.parse(new TextDecoder().decode(reply.data));
}

import { createConnection } from 'node:net';
import { createLogger } from '@jarvis/telemetry';
import {
  freePort,
  makeTempDir,
  NATS_URL,
  startProcess,
  uniqueNamespace,
  waitFor,
} from '@jarvis/testkit';
import { Bus } from './bus';
import { BusError } from './bus-error';

// A bus on the machine's real NATS in a namespace of its own, so parallel test files never see
// each other's messages. Here rather than in the testkit, which must not depend on the bus.
export async function connectTestBus(namespace = uniqueNamespace(), url = NATS_URL): Promise<Bus> {
  return Bus.connect({
    url,
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

// The names of the objects a blob store bucket holds now (not deleted, not expired): what a test
// expects to be empty after a refused or finished upload. An absent bucket holds none.
export async function storedBlobNames(bus: Bus, bucket: string): Promise<string[]> {
  const jsm = await bus.nc.jetstreamManager();
  const stream = `OBJ_${bus.streamName(bucket)}`;
  const exists = await jsm.streams.info(stream).then(
    () => true,
    () => false,
  );
  if (!exists) return [];
  const store = await bus.nc.jetstream().views.os(bus.streamName(bucket));
  const objects = await store.list();
  return objects.map((object) => object.name).sort();
}

export type PrivateNats = {
  url: string;
  // Kills the server (as an outage would) and removes its storage.
  stop(): Promise<void>;
};

// A NATS server (JetStream on) of the test's own, on a free port: a test can take it down to see
// an outage without touching the machine's shared server.
export async function startPrivateNats(): Promise<PrivateNats> {
  const port = await freePort();
  const dir = await makeTempDir('nats');
  const server = startProcess({
    name: 'nats-server',
    command: 'nats-server',
    args: ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir.path],
    cwd: dir.path,
    env: process.env,
  });
  await waitFor(() => isListening(port), { what: `nats-server on port ${port}` });
  return {
    url: `nats://127.0.0.1:${port}`,
    async stop() {
      await server.kill();
      await dir.remove();
    },
  };
}

function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

import { createLogger } from '@jarvis/telemetry';
import { NATS_URL, uniqueNamespace } from '@jarvis/testkit';
import { Bus } from './bus';

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

import {
  NATS_URL,
  REDIS_URL,
  type ServiceName,
  Stack,
  startTestDatabase,
  uniqueNamespace,
} from '@jarvis/testkit';

// Some services as their own processes, as a bench runs them: on a database of their own
// (dropped by database.stop()) and a bus namespace of their own over the machine's NATS and
// Redis. Not started yet, so that a bench can make its inputs before the services take the CPU.
export async function prepareBenchStack(
  name: string,
  services: readonly ServiceName[],
  options: { env?: Record<string, string>; nodeArgs?: string[] } = {},
) {
  const database = await startTestDatabase();
  const namespace = uniqueNamespace(name);
  const stack = new Stack({
    services,
    databaseUrl: database.url,
    env: { NATS_URL, REDIS_URL, NATS_NAMESPACE: namespace, LOG_LEVEL: 'warn', ...options.env },
    ...(options.nodeArgs ? { nodeArgs: options.nodeArgs } : {}),
  });
  return { database, namespace, stack };
}

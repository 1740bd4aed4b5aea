import { freePort, waitFor } from './infra';
import { type ManagedProcess, startProcess } from './process';

export type RedisServer = {
  url: string;
  // Ends it as an outage would; start() brings it back on the same port, empty.
  stop(): Promise<void>;
  start(): Promise<void>;
};

// A Redis server of the test's own on a free port, for tests of a Redis outage: stopping the
// machine's shared one would fail every other test running at the time.
export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort();
  let managed: ManagedProcess | undefined;
  const start = async () => {
    const started = startProcess({
      name: 'redis',
      command: 'redis-server',
      args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      cwd: process.cwd(),
      env: { PATH: process.env.PATH },
    });
    managed = started;
    await waitFor(() => started.output().includes('Ready to accept connections') || undefined, {
      what: 'redis-server',
    });
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      await managed?.kill();
    },
    start,
  };
}

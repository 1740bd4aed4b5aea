import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import {
  createOutboundGuard,
  type GuardedProxy,
  OutboundAllowedHosts,
  type OutboundGuard,
  startGuardedProxy,
} from '@jarvis/net-guard';
import { createLogger } from '@jarvis/telemetry';
import { uniqueNamespace } from '@jarvis/testkit';
import { registerHandlers } from '../handlers';
import { ToolRegistry } from '../registry';
import { BrowserPool, type BrowserPoolOptions } from './browser-pool';

export type BrowserRig = {
  guard: OutboundGuard;
  proxy: GuardedProxy;
  pool: BrowserPool;
  registry: ToolRegistry;
  server: Bus;
  client: Bus;
  stop(): Promise<void>;
};

// The browser as main.ts builds it (guard, guarded proxy, one pool, Debian's Chromium run as
// `nobody` with its sandbox when the tests run as root), behind the real tools.invoke RPC.
// `allowed` is OUTBOUND_ALLOWED_HOSTS: the test site's exact host:port, so nothing else local is.
export async function startBrowserRig(options: {
  allowed: string;
  register: (registry: ToolRegistry, rig: Omit<BrowserRig, 'registry' | 'stop'>) => void;
  pool?: Partial<Omit<BrowserPoolOptions, 'proxy' | 'logger'>>;
}): Promise<BrowserRig> {
  const logger = createLogger('browser-test', 'silent');
  const guard = createOutboundGuard(OutboundAllowedHosts.parse(options.allowed));
  const proxy = await startGuardedProxy({ guard, logger });
  const pool = new BrowserPool({
    executablePath: '/usr/bin/chromium',
    user: 'nobody',
    maxPages: 4,
    pageTimeoutMs: 10_000,
    pageMaxBytes: 10_000_000,
    idleMs: 300_000,
    ...options.pool,
    proxy,
    logger,
  });
  const namespace = uniqueNamespace('tools-browser');
  const server = await connectTestBus(namespace);
  const client = await connectTestBus(namespace);
  const registry = new ToolRegistry();
  options.register(registry, { guard, proxy, pool, server, client });
  registerHandlers(server, registry);
  await server.nc.flush();
  return {
    guard,
    proxy,
    pool,
    registry,
    server,
    client,
    async stop() {
      await client.close();
      await server.close();
      await pool.close();
      await proxy.close();
    },
  };
}

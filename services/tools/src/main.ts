import { createOutboundGuard } from '@jarvis/net-guard';
import { bootService } from '@jarvis/service-kit';
import { loadEnv } from './env';
import { registerHandlers } from './handlers';
import { ToolRegistry } from './registry';
import { createWebFetchTool } from './web/web-fetch';

const env = loadEnv();

await bootService({ name: 'tools', env, port: env.HTTP_PORT }, ({ bus }) => {
  const registry = new ToolRegistry();
  registry.register(
    createWebFetchTool({
      guard: createOutboundGuard(env.OUTBOUND_ALLOWED_HOSTS),
      maxBytes: env.WEB_FETCH_MAX_BYTES,
      timeoutMs: env.WEB_FETCH_TIMEOUT_MS,
    }),
  );
  registerHandlers(bus, registry);
});

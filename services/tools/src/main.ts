import { createOutboundGuard } from '@jarvis/net-guard';
import { bootService } from '@jarvis/service-kit';
import { loadEnv } from './env';
import { registerHandlers } from './handlers';
import { loadSecretBox } from './notifications/secret-box';
import { ToolRegistry } from './registry';
import { createWebFetchTool } from './web/web-fetch';

const env = loadEnv();

await bootService(
  {
    name: 'tools',
    env,
    port: env.HTTP_PORT,
    database: {
      env,
      schema: 'tools',
      migrations: new URL('../migrations', import.meta.url),
    },
  },
  async ({ bus, logger }) => {
    const guard = createOutboundGuard(env.OUTBOUND_ALLOWED_HOSTS);
    // Before anything reads a channel: a bad JARVIS_SECRET_KEY stops the start with its reason.
    await loadSecretBox(env, logger);
    const registry = new ToolRegistry();
    registry.register(
      createWebFetchTool({
        guard,
        maxBytes: env.WEB_FETCH_MAX_BYTES,
        timeoutMs: env.WEB_FETCH_TIMEOUT_MS,
      }),
    );
    registerHandlers(bus, registry);
  },
);

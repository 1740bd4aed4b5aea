import { Bus } from '@jarvis/bus';
import { createOutboundGuard } from '@jarvis/net-guard';
import { createService } from '@jarvis/service-kit';
import { createLogger, createMetrics, startTelemetry } from '@jarvis/telemetry';
import { loadEnv } from './env';
import { registerHandlers } from './handlers';
import { ToolRegistry } from './registry';
import { createWebFetchTool } from './web/web-fetch';

const SERVICE = 'tools';

const env = loadEnv();
const telemetry = startTelemetry({
  serviceName: SERVICE,
  otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
});
const logger = createLogger(SERVICE, env.LOG_LEVEL);
const metrics = createMetrics(SERVICE);

try {
  const registry = new ToolRegistry();
  registry.register(
    createWebFetchTool({
      guard: createOutboundGuard(env.OUTBOUND_ALLOWED_HOSTS),
      maxBytes: env.WEB_FETCH_MAX_BYTES,
      timeoutMs: env.WEB_FETCH_TIMEOUT_MS,
    }),
  );
  const bus = await Bus.connect({
    url: env.NATS_URL,
    namespace: env.NATS_NAMESPACE,
    name: SERVICE,
    logger,
  });
  registerHandlers(bus, registry);

  const service = createService({
    name: SERVICE,
    port: env.HTTP_PORT,
    logger,
    metrics,
    checks: { nats: () => bus.isConnected() },
    dependencyLossExitMs: env.DEPENDENCY_LOSS_EXIT_MS,
    onStop: async () => {
      await bus.close();
      await telemetry.stop();
    },
  });
  await service.start();
} catch (error) {
  logger.fatal({ err: error }, 'failed to start');
  process.exit(1);
}

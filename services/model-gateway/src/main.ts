import { Bus } from '@jarvis/bus';
import { createService } from '@jarvis/service-kit';
import { createLogger, createMetrics, startTelemetry } from '@jarvis/telemetry';
import { loadEnv } from './env';
import { registerHandlers } from './handlers';
import { selectChatProvider } from './providers/select-provider';

const SERVICE = 'model-gateway';

const env = loadEnv();
const telemetry = startTelemetry({
  serviceName: SERVICE,
  otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
});
const logger = createLogger(SERVICE, env.LOG_LEVEL);
const metrics = createMetrics(SERVICE);

try {
  const provider = selectChatProvider(env);
  logger.info({ provider: provider.name, model: provider.model }, 'chat provider selected');
  const bus = await Bus.connect({
    url: env.NATS_URL,
    namespace: env.NATS_NAMESPACE,
    name: SERVICE,
    logger,
  });
  registerHandlers(bus, provider, logger);

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

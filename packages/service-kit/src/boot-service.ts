import { Bus } from '@jarvis/bus';
import { createPool, isDatabaseReachable, migrate, type Pool } from '@jarvis/db';
import {
  createLogger,
  createMetrics,
  type Logger,
  type Metrics,
  type OtlpProtocol,
  startTelemetry,
} from '@jarvis/telemetry';
import { Redis } from 'ioredis';
import { type DatabaseEnv, databasePoolSettings } from './env';
import { type Check, createService, type Service } from './service';

// What every service's env.ts parses from baseEnvShape.
export type BootEnv = {
  NATS_URL: string;
  NATS_NAMESPACE: string;
  LOG_LEVEL: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;
  OTEL_EXPORTER_OTLP_PROTOCOL?: OtlpProtocol;
  DEPENDENCY_LOSS_EXIT_MS: number;
};

export type BootDatabase = {
  env: DatabaseEnv;
  // The service's own schema, and its migrations (applied at every start, before any wiring).
  schema: string;
  migrations: URL;
  // Connections in the pool (createPool's default when unset).
  poolSize?: number;
  // Runs on the new pool before migrating, e.g. to set session settings on every connection.
  configure?: (pool: Pool, logger: Logger) => void;
};

export type BootRedis = {
  url: string;
  // Builds the client, not yet connected (lazyConnect); a default one when unset.
  create?: (url: string) => Redis;
};

export type BootOptions = {
  name: string;
  env: BootEnv;
  port: number;
  host?: string;
  database?: BootDatabase;
  redis?: BootRedis;
  // How the process ends after stopping, or after failing to start; tests replace it.
  exit?: (code: number) => void;
};

// The one typed object a service's wiring receives: a pool and a Redis client only when asked.
export type BootResources<O extends BootOptions = BootOptions> = {
  logger: Logger;
  metrics: Metrics;
  bus: Bus;
  // Not yet listening: routes added to service.app go after /healthz, /readyz and /metrics.
  service: Service;
} & (O['database'] extends BootDatabase ? { pool: Pool } : unknown) &
  (O['redis'] extends BootRedis ? { redis: Redis } : unknown);

// What the wiring started. stop() stops intake and drains work in hand; it runs before the bus,
// pool and Redis close, so that work finishes against live connections.
export type Wiring = { stop?: () => Promise<void> | void };

// A service's wiring: returns what it started, or nothing when it starts nothing to stop.
// biome-ignore lint/suspicious/noConfusingVoidType: lets wiring with nothing to stop return nothing
export type Wire<R> = (resources: R) => Promise<Wiring | void> | Wiring | void;

export type BootedService = { port: number; service: Service };

// Boots a service the same way in every main.ts: env is already parsed; telemetry, logger,
// metrics, the pool (migrated), Redis and the bus, then the service's own wiring, then HTTP with
// a readiness check per dependency. Stopping (SIGTERM, SIGINT, or a dependency lost for longer
// than DEPENDENCY_LOSS_EXIT_MS) runs in the reverse order: the wiring's stop, the bus, the pool,
// Redis, telemetry. A failure while booting is logged as fatal and ends the process.
export async function bootService<const O extends BootOptions>(
  options: O,
  wire: Wire<BootResources<O>>,
): Promise<BootedService | undefined>;
export async function bootService(
  options: BootOptions,
  wire: Wire<AllResources>,
): Promise<BootedService | undefined> {
  const { name, env } = options;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const telemetry = startTelemetry({
    serviceName: name,
    otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
    otlpProtocol: env.OTEL_EXPORTER_OTLP_PROTOCOL,
  });
  const logger = createLogger(name, env.LOG_LEVEL);
  const metrics = createMetrics(name);
  try {
    const pool = options.database && (await openDatabase(name, options.database, logger));
    const redis = options.redis && (await openRedis(options.redis));
    const bus = await Bus.connect({
      url: env.NATS_URL,
      namespace: env.NATS_NAMESPACE,
      name,
      logger,
      metrics,
    });
    const checks: Record<string, Check> = { nats: () => bus.isConnected() };
    if (pool) checks.postgres = () => isDatabaseReachable(pool);
    if (redis) checks.redis = () => redis.status === 'ready';
    let wiring: Wiring | undefined;
    const service = createService({
      name,
      port: options.port,
      host: options.host,
      logger,
      metrics,
      checks,
      dependencyLossExitMs: env.DEPENDENCY_LOSS_EXIT_MS,
      exit,
      onStop: async () => {
        await wiring?.stop?.();
        await bus.close();
        await pool?.end();
        redis?.disconnect();
        await telemetry.stop();
      },
    });
    const wired = await wire({ logger, metrics, bus, service, pool, redis });
    if (wired) wiring = wired;
    const { port } = await service.start();
    return { port, service };
  } catch (error) {
    logger.fatal({ err: error }, 'failed to start');
    exit(1);
    return undefined;
  }
}

// BootResources with whatever was asked for; the overload above narrows it per service.
type AllResources = {
  logger: Logger;
  metrics: Metrics;
  bus: Bus;
  service: Service;
  pool?: Pool;
  redis?: Redis;
};

async function openDatabase(name: string, database: BootDatabase, logger: Logger): Promise<Pool> {
  const pool = createPool({
    ...databasePoolSettings(database.env),
    applicationName: name,
    max: database.poolSize,
  });
  database.configure?.(pool, logger);
  await migrate(pool, { schema: database.schema, directory: database.migrations });
  return pool;
}

async function openRedis(options: BootRedis): Promise<Redis> {
  const redis =
    options.create?.(options.url) ??
    new Redis(options.url, { maxRetriesPerRequest: 2, lazyConnect: true });
  // Reported by the readiness check and the watchdog (and by whatever uses it), not here.
  redis.on('error', () => {});
  await redis.connect();
  return redis;
}

import { Gauge, type Logger, type Metrics } from '@jarvis/telemetry';
import type { ConsumerInfo, NatsConnection } from 'nats';

// The durable consumers this process reads, gauged at scrape time from their consumer info.
export type ConsumerMetrics = {
  // Until the returned function is called; a consumer tracked twice is gauged once.
  track(stream: string, consumer: string): () => void;
};

// A scrape waits no longer than this for one consumer's info: NATS away must not hold up the
// process and HTTP metrics beside it (Prometheus times a scrape out at 10 s by default).
const INFO_TIMEOUT_MS = 2_000;

type Tracked = { stream: string; consumer: string; count: number };

export function createConsumerMetrics(
  nc: NatsConnection,
  isConnected: () => boolean,
  metrics: Metrics,
  logger: Logger,
): ConsumerMetrics {
  const tracked = new Map<string, Tracked>();
  let inFlight: Promise<ConsumerInfo[]> | undefined;

  async function readInfos(): Promise<ConsumerInfo[]> {
    // While NATS is away every request would wait out its timeout: the gauges go blank at once.
    if (!isConnected() || tracked.size === 0) return [];
    // No account check: it would be one more request per scrape.
    const jsm = await nc.jetstreamManager({ checkAPI: false, timeout: INFO_TIMEOUT_MS });
    const infos = await Promise.all(
      [...tracked.values()].map(({ stream, consumer }) =>
        jsm.consumers.info(stream, consumer).catch((error: unknown) => {
          // A consumer whose info cannot be read is left out of this scrape, not the scrape
          // failed: the gap in its series is what shows.
          logger.debug({ err: error, stream, consumer }, 'consumer info not read for metrics');
          return undefined;
        }),
      ),
    );
    return infos.filter((info) => info !== undefined);
  }

  // A registry collects all its metrics at once, so the second gauge finds the first one's
  // requests still in flight and waits for the same answers.
  function infosOfThisScrape(): Promise<ConsumerInfo[]> {
    inFlight ??= readInfos()
      .catch(() => [])
      .finally(() => {
        inFlight = undefined;
      });
    return inFlight;
  }

  const gauge = (name: string, help: string, value: (info: ConsumerInfo) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['stream', 'consumer'],
      registers: [metrics.registry],
      async collect() {
        const infos = await infosOfThisScrape();
        // Consumers no longer read (a stopped worker) or not read this time drop out.
        this.reset();
        for (const info of infos) {
          this.set({ stream: info.stream_name, consumer: info.name }, value(info));
        }
      },
    });
  gauge(
    'jarvis_jetstream_consumer_pending_messages',
    'Messages of a durable consumer this service reads not yet delivered to any reader.',
    (info) => info.num_pending,
  );
  gauge(
    'jarvis_jetstream_consumer_ack_pending_messages',
    'Messages of a durable consumer this service reads delivered and not yet acknowledged.',
    (info) => info.num_ack_pending,
  );

  return {
    track(stream, consumer) {
      const key = `${stream}\u0000${consumer}`;
      const entry = tracked.get(key) ?? { stream, consumer, count: 0 };
      entry.count += 1;
      tracked.set(key, entry);
      let isTracked = true;
      return () => {
        if (!isTracked) return;
        isTracked = false;
        entry.count -= 1;
        if (entry.count === 0) tracked.delete(key);
      };
    },
  };
}

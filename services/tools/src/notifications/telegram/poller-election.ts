import { createPool, type PoolClient } from '@jarvis/db';
import type { Logger } from '@jarvis/telemetry';
import { pingPollerLock, releasePollerLock, tryPollerLock } from './poller-lock-repository';

export type ElectionOptions = {
  databaseUrl: string;
  logger: Logger;
  // How often a replica that is not elected tries again, and how often the elected one checks
  // that its lock's connection still answers.
  retryMs: number;
  // Called once elected; what it starts must stop in onDeposed.
  onElected: () => void;
  onDeposed: () => Promise<void>;
};

export type Election = { isElected(): boolean; stop(): Promise<void> };

// Telegram serves getUpdates to one caller at a time, so one replica polls: the one holding a
// Postgres session advisory lock on a connection of its own (not the shared pool's, whose
// connections come and go). The others try again every retryMs. A lock connection that stops
// answering deposes its replica at once, since the lock may already be another's.
export function startElection(options: ElectionOptions): Election {
  const { logger, retryMs } = options;
  const pool = createPool({
    url: options.databaseUrl,
    applicationName: 'tools-telegram-poller',
    max: 1,
    warm: 0,
    statementTimeoutMs: 5_000,
  });
  let client: PoolClient | undefined;
  let isElected = false;
  let isStopping = false;
  let timer: NodeJS.Timeout | undefined;
  let turn: Promise<void> = Promise.resolve();

  const depose = async (why: string) => {
    if (!isElected) return;
    isElected = false;
    logger.warn({ why }, 'telegram poller deposed: polling stops');
    await options.onDeposed();
  };

  // The lock's connection is thrown away, not returned: the lock goes with it.
  const dropClient = () => {
    client?.release(true);
    client = undefined;
  };

  const step = async () => {
    try {
      if (isElected && client) {
        await pingPollerLock(client);
        return;
      }
      if (!client) {
        client = await pool.connect();
        const held = client;
        held.on('error', () => {
          if (client !== held) return;
          dropClient();
          void depose('the lock connection was lost');
        });
      }
      if (await tryPollerLock(client)) {
        isElected = true;
        logger.info('telegram poller elected: this replica polls');
        options.onElected();
      }
    } catch (error) {
      dropClient();
      await depose(error instanceof Error ? error.message : 'the lock connection failed');
    }
  };

  const schedule = () => {
    if (isStopping) return;
    timer = setTimeout(() => {
      turn = step().finally(schedule);
    }, retryMs);
  };
  turn = step().finally(schedule);

  return {
    isElected: () => isElected,
    async stop() {
      if (isStopping) return;
      isStopping = true;
      clearTimeout(timer);
      await turn;
      if (isElected) {
        isElected = false;
        await options.onDeposed();
      }
      if (client) {
        // Released for the next replica now, not when the server notices the connection closed.
        await releasePollerLock(client).catch(() => {});
        dropClient();
      }
      await pool.end();
    },
  };
}

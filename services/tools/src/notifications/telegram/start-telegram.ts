import { setTimeout as sleep } from 'node:timers/promises';
import type { Bus } from '@jarvis/bus';
import type { Pool } from '@jarvis/db';
import type { AdmitRate, UserRateLimits } from '@jarvis/service-kit';
import type { Logger } from '@jarvis/telemetry';
import type { Redis } from 'ioredis';
import { describeTelegramError, isRejectedToken, type TelegramBot } from './bot';
import { installChatHandlers } from './chat';
import { type Election, startElection } from './poller-election';

export type TelegramDeps = {
  telegram: TelegramBot;
  bus: Bus;
  pool: Pool;
  redis: Redis;
  logger: Logger;
  // The poller's lock gets a connection of its own to this database.
  databaseUrl: string;
  namespace: string;
  admitRate: AdmitRate;
  limits: UserRateLimits;
  submitTimeoutMs: number;
  turnTimeoutMs: number;
  // How often a replica that does not poll tries to become the poller (and the poller checks
  // its lock); how long getUpdates waits for updates (Telegram's long polling), in seconds.
  electionRetryMs?: number;
  pollTimeoutS?: number;
};

// How long stop() lets replies in flight go out; waits for turns still running are dropped (the
// turn goes on and its reply is kept in the conversation).
const STOP_GRACE_MS = 5_000;
const POLL_RETRY_MS = 5_000;

type TelegramChat = {
  // Whether this replica is the one polling Telegram now.
  isPolling(): boolean;
  stop(): Promise<void>;
};

// The Telegram chat: once Telegram accepted the token, this replica competes to be the one that
// long-polls getUpdates, and while it is, it answers the updates (linking, turns, approval
// buttons). Webhook mode is not offered: long polling needs no public address.
export async function startTelegram(deps: TelegramDeps): Promise<TelegramChat> {
  const { bot } = deps.telegram;
  const { logger } = deps;
  if (!bot) {
    if (deps.telegram.state() === 'off')
      logger.info('TELEGRAM_BOT_TOKEN is unset: no Telegram channel');
    return { isPolling: () => false, stop: async () => {} };
  }
  const inFlight = new Set<Promise<void>>();
  const track = (work: Promise<void>) => {
    const tracked = work
      .catch((error: unknown) => {
        logger.warn({ reason: describeTelegramError(error) }, 'telegram reply not sent');
      })
      .finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
  };
  installChatHandlers(bot, { ...deps, track });

  let isPolling = false;
  let polling: Promise<void> | undefined;
  // bot.start resolves when bot.stop is called; it throws when Telegram refuses getUpdates (a
  // 409 while another client polls or a webhook is set), and the poller tries again.
  const poll = async () => {
    while (isPolling) {
      try {
        await bot.start({
          allowed_updates: ['message', 'callback_query'],
          ...(deps.pollTimeoutS !== undefined ? { timeout: deps.pollTimeoutS } : {}),
        });
      } catch (error) {
        logger.error({ reason: describeTelegramError(error) }, 'telegram polling failed');
        if (isRejectedToken(error)) return;
        if (isPolling) await sleep(POLL_RETRY_MS);
      }
    }
  };

  let election: Election | undefined;
  let isStopping = false;
  // A token Telegram rejects never polls; the link RPC says why meanwhile.
  const started = deps.telegram.ready().then((isReady) => {
    if (!isReady || isStopping) return;
    election = startElection({
      databaseUrl: deps.databaseUrl,
      logger,
      retryMs: deps.electionRetryMs ?? 5_000,
      onElected: () => {
        isPolling = true;
        polling = poll();
      },
      onDeposed: async () => {
        isPolling = false;
        // Cancels the pending getUpdates and confirms what was handled, so the next poller does
        // not get it again.
        await bot.stop().catch((error: unknown) => {
          logger.warn({ reason: describeTelegramError(error) }, 'telegram poller stop');
        });
        await polling;
      },
    });
  });

  return {
    isPolling: () => isPolling,
    async stop() {
      isStopping = true;
      deps.telegram.stop();
      await started;
      await election?.stop();
      // Unref'd: the grace must not itself keep the process alive.
      await Promise.race([
        Promise.allSettled(inFlight),
        sleep(STOP_GRACE_MS, undefined, { ref: false }),
      ]);
    },
  };
}

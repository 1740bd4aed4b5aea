import { defineRedisScript } from '@jarvis/service-kit';
import type { Logger } from '@jarvis/telemetry';
import type { Redis } from 'ioredis';

export type CooldownSettings = {
  // Failures within the window that open the cooldown.
  failures: number;
  windowMs: number;
  // How long the provider is then skipped; when it ends the next call tries it again.
  cooldownMs: number;
};

// A per-provider circuit breaker whose state lives in Redis, so every replica of the gateway
// stops calling a failing provider at once, and a restart does not forget it.
export type Cooldown = {
  // Of these providers, the ones to skip now, with when each may be tried again.
  open(providers: string[]): Promise<Map<string, Date>>;
  // The same, read from Redis now rather than from what this replica read within the last
  // second: for model-gateway.route, which is asked right after another replica says a
  // cooldown opened, and whose answer callers keep.
  openNow(providers: string[]): Promise<Map<string, Date>>;
  recordFailure(provider: string): Promise<void>;
  // Opens at once, whatever the count: a rejected key will not start working by itself.
  trip(provider: string): Promise<void>;
  recordSuccess(provider: string): void;
};

// Counts a failure; the count that reaches the threshold opens the cooldown and starts over.
const RECORD_FAILURE = defineRedisScript(`
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
if count >= tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[3])
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`);

// How long one replica trusts what it last read of the cooldowns: a replica learns of another's
// opened cooldown within this time, and a busy gateway reads Redis once per period, not per call.
const READ_CACHE_MS = 1_000;

export function createCooldown(
  redis: Redis,
  namespace: string,
  settings: CooldownSettings,
  logger: Logger,
  // Told when a failure on this replica opens a provider's cooldown.
  onOpened: (provider: string, until: Date) => void,
): Cooldown {
  const failuresKey = (provider: string) => `${namespace}:model-gateway:failures:${provider}`;
  const openKey = (provider: string) => `${namespace}:model-gateway:cooldown:${provider}`;
  const cache = new Map<string, { until: Date | undefined; readAt: number }>();
  // Providers this replica saw fail lately: only their failure counts need resetting.
  const failing = new Set<string>();
  const open = async (provider: string, count: number) => {
    failing.add(provider);
    cache.delete(provider);
    const until = Date.now() + settings.cooldownMs;
    const opened = await RECORD_FAILURE.run(
      redis,
      [failuresKey(provider), openKey(provider)],
      [settings.windowMs, count, settings.cooldownMs, until],
    );
    if (opened === 1) {
      logger.warn({ provider, cooldownMs: settings.cooldownMs }, 'provider cooling down');
      onOpened(provider, new Date(until));
    }
  };
  const read = async (providers: string[], maxAgeMs: number) => {
    const now = Date.now();
    const stale = providers.filter((provider) => {
      const cached = cache.get(provider);
      return !cached || now - cached.readAt > maxAgeMs;
    });
    if (stale.length > 0) {
      const values = await redis.mget(stale.map(openKey));
      for (const [index, provider] of stale.entries()) {
        const value = values[index];
        cache.set(provider, {
          until: value === null || value === undefined ? undefined : new Date(Number(value)),
          readAt: now,
        });
      }
    }
    const result = new Map<string, Date>();
    for (const provider of providers) {
      const until = cache.get(provider)?.until;
      if (until && until.getTime() > now) result.set(provider, until);
    }
    return result;
  };
  return {
    open: (providers) => read(providers, READ_CACHE_MS),
    openNow: (providers) => read(providers, -1),
    recordFailure: (provider) => open(provider, settings.failures),
    trip: (provider) => open(provider, 1),
    recordSuccess(provider) {
      if (!failing.delete(provider)) return;
      // Off the answer's path: a lost reset only leaves an old failure to expire on its own.
      redis.del(failuresKey(provider)).catch((error: unknown) => {
        logger.warn({ err: error, provider }, 'could not reset failure count');
      });
    },
  };
}

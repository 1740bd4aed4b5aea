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
  recordFailure(provider: string): Promise<void>;
  // Opens at once, whatever the count: a rejected key will not start working by itself.
  trip(provider: string): Promise<void>;
  recordSuccess(provider: string): void;
};

// Counts a failure; the count that reaches the threshold opens the cooldown and starts over.
const RECORD_FAILURE = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
if count >= tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[3])
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`;

export function createCooldown(
  redis: Redis,
  namespace: string,
  settings: CooldownSettings,
  logger: Logger,
): Cooldown {
  const failuresKey = (provider: string) => `${namespace}:model-gateway:failures:${provider}`;
  const openKey = (provider: string) => `${namespace}:model-gateway:cooldown:${provider}`;
  const open = async (provider: string, count: number) => {
    const until = Date.now() + settings.cooldownMs;
    const opened = await redis.eval(
      RECORD_FAILURE,
      2,
      failuresKey(provider),
      openKey(provider),
      settings.windowMs,
      count,
      settings.cooldownMs,
      until,
    );
    if (opened === 1) {
      logger.warn({ provider, cooldownMs: settings.cooldownMs }, 'provider cooling down');
    }
  };
  return {
    async open(providers) {
      const result = new Map<string, Date>();
      if (providers.length === 0) return result;
      const values = await redis.mget(providers.map(openKey));
      for (const [index, value] of values.entries()) {
        const provider = providers[index];
        if (value !== null && provider !== undefined) result.set(provider, new Date(Number(value)));
      }
      return result;
    },
    recordFailure: (provider) => open(provider, settings.failures),
    trip: (provider) => open(provider, 1),
    recordSuccess(provider) {
      // Off the answer's path: a lost reset only leaves an old failure to expire on its own.
      redis.del(failuresKey(provider)).catch((error: unknown) => {
        logger.warn({ err: error, provider }, 'could not reset failure count');
      });
    },
  };
}

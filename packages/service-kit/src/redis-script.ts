import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

export type RedisScript = {
  run(redis: Redis, keys: string[], args: (string | number)[]): Promise<unknown>;
};

// A Lua script run by its SHA1 (EVALSHA), so a hot path does not send the script's text with
// every call; a server that has not seen it yet (first call, restart, SCRIPT FLUSH) gets the text
// once through EVAL.
export function defineRedisScript(lua: string): RedisScript {
  const sha = createHash('sha1').update(lua).digest('hex');
  return {
    async run(redis, keys, args) {
      try {
        return await redis.evalsha(sha, keys.length, ...keys, ...args);
      } catch (error) {
        if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
        return redis.eval(lua, keys.length, ...keys, ...args);
      }
    },
  };
}

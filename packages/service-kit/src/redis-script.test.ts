import { createHash, randomUUID } from 'node:crypto';
import { connectTestRedis } from '@jarvis/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { defineRedisScript } from './redis-script';

const redis = connectTestRedis();

afterAll(async () => {
  await redis.quit();
});

describe('defineRedisScript', () => {
  it('runs a script the server has never seen, which it then keeps by its SHA1', async () => {
    // A text of its own, so no earlier run on this server has loaded it.
    const lua = `-- ${randomUUID()}\nreturn {KEYS[1], ARGV[1] + ARGV[2]}`;
    const sha = createHash('sha1').update(lua).digest('hex');
    const script = defineRedisScript(lua);

    expect(await redis.script('EXISTS', sha)).toEqual([0]);
    expect(await script.run(redis, ['a-key'], [2, 3])).toEqual(['a-key', 5]);
    expect(await redis.script('EXISTS', sha)).toEqual([1]);
    expect(await script.run(redis, ['another'], [1, 1])).toEqual(['another', 2]);
  });

  it("fails with the script's own error", async () => {
    const key = `redis-script-test:${randomUUID()}`;
    await redis.hset(key, 'field', '1');
    const script = defineRedisScript(`return redis.call('INCR', KEYS[1])`);

    try {
      await expect(script.run(redis, [key], [])).rejects.toThrow(/WRONGTYPE/);
    } finally {
      await redis.del(key);
    }
  });
});

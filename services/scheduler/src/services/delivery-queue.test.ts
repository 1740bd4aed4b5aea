import { createLogger } from '@jarvis/telemetry';
import { describe, expect, it } from 'vitest';
import { DeliveryQueue } from './delivery-queue';

describe('the delivery queue', () => {
  it('lists what it holds, and takes out what has not started, held back or waiting', async () => {
    const started: string[] = [];
    let finish: () => void = () => {};
    const queue = new DeliveryQueue<string>(
      1,
      (item) => {
        started.push(item);
        return new Promise<void>((resolve) => {
          finish = resolve;
        });
      },
      createLogger('scheduler-test', 'silent'),
    );
    queue.push({ id: 'a', item: 'a' });
    queue.push({ id: 'b', item: 'b' });
    queue.push({ id: 'c', item: 'c' });
    queue.push({ id: 'd', item: 'd' }, 60_000);
    expect(queue.held().map(({ id }) => id)).toEqual(['a', 'b', 'c', 'd']);

    // 'a' is being delivered and stays; 'b' waits and 'd' is held back: both go.
    expect(queue.drop(['a', 'b', 'd', 'unknown'])).toBe(2);
    expect(queue.held().map(({ id }) => id)).toEqual(['a', 'c']);
    expect(queue.has('b')).toBe(false);

    finish();
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual(['a', 'c']);
    finish();
    expect(await queue.stop()).toEqual([]);
    expect(queue.held()).toEqual([]);
  });
});

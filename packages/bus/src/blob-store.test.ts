import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BlobStore, openBlobStore } from './blob-store';
import type { Bus } from './bus';
import { catchBusError, connectTestBus, storedBlobNames } from './testing';

// The object store on the machine's real NATS (JetStream), in a namespace of this file's own.
const BUCKET = 'blobs';
const HOUR_MS = 3_600_000;

let bus: Bus;
let store: BlobStore;
const opened: string[] = [BUCKET];

beforeAll(async () => {
  bus = await connectTestBus();
  store = await openBlobStore(bus, BUCKET, { ttlMs: HOUR_MS });
});

afterAll(async () => {
  const jsm = await bus?.nc.jetstreamManager();
  for (const bucket of opened) {
    await jsm?.streams.delete(`OBJ_${bus.streamName(bucket)}`).catch(() => undefined);
  }
  await bus?.close();
});

// Every message the bucket's stream holds: chunks and object records alike.
async function messagesIn(bucket: string): Promise<number> {
  const jsm = await bus.nc.jetstreamManager();
  const info = await jsm.streams.info(`OBJ_${bus.streamName(bucket)}`);
  return info.state.messages;
}

async function* pieces(count: number, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < count; i += 1) yield randomBytes(size);
}

async function* concat(...parts: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) yield part;
}

describe('openBlobStore', () => {
  it('gives back what was put, bytes and a stream of pieces over many chunks alike', async () => {
    const small = randomBytes(1000);
    const first = randomBytes(300_000);
    const second = randomBytes(450_001);

    const a = await store.put('a', small);
    const b = await store.put('b', concat(first, second), { maxBytes: 750_001 });

    expect(a).toEqual({ name: 'a', size: 1000 });
    expect(b).toEqual({ name: 'b', size: 750_001 });
    expect(Buffer.from((await store.get('a')) ?? [])).toEqual(small);
    expect(Buffer.from((await store.get('b')) ?? [])).toEqual(Buffer.concat([first, second]));
  });

  it('answers undefined for a name never put and one deleted, and deletes a missing name quietly', async () => {
    await store.put('gone', randomBytes(10));

    await store.delete('gone');
    await store.delete('gone');
    await store.delete('never-there');

    expect(await store.get('gone')).toBeUndefined();
    expect(await store.get('never-there')).toBeUndefined();
    expect(await storedBlobNames(bus, BUCKET)).not.toContain('gone');
    expect(await storedBlobNames(bus, BUCKET)).toContain('a');
    expect(await storedBlobNames(bus, 'never-opened')).toEqual([]);
  });

  it('refuses bytes past the limit before writing anything', async () => {
    const bucket = 'blobs-bytes';
    opened.push(bucket);
    const own = await openBlobStore(bus, bucket, { ttlMs: HOUR_MS });

    const error = await catchBusError(own.put('big', randomBytes(1001), { maxBytes: 1000 }));

    expect(error.code).toBe('payload_too_large');
    expect(error.message).toContain('1000 bytes');
    expect(await own.get('big')).toBeUndefined();
    expect(await messagesIn(bucket)).toBe(0);
  });

  it('cuts a stream at the byte past the limit, stops its producer, and leaves no chunk behind', async () => {
    const bucket = 'blobs-stream';
    opened.push(bucket);
    const own = await openBlobStore(bus, bucket, { ttlMs: HOUR_MS });
    let produced = 0;
    let isStopped = false;
    // Many chunks in flight when the limit is crossed: the purge must still catch them all.
    async function* endless(): AsyncGenerator<Uint8Array> {
      try {
        for (;;) {
          produced += 1;
          yield randomBytes(64 * 1024);
        }
      } finally {
        isStopped = true;
      }
    }

    const error = await catchBusError(own.put('big', endless(), { maxBytes: 2 * 1024 * 1024 }));

    expect(error.code).toBe('payload_too_large');
    expect(isStopped).toBe(true);
    expect(produced).toBe(33);
    expect(await own.get('big')).toBeUndefined();
    expect(await messagesIn(bucket)).toBe(0);
    // A chunk stored after the purge would show up late.
    await sleep(300);
    expect(await messagesIn(bucket)).toBe(0);
  });

  it("passes a producer's own failure through as it is, and stores nothing", async () => {
    const bucket = 'blobs-failing';
    opened.push(bucket);
    const own = await openBlobStore(bus, bucket, { ttlMs: HOUR_MS });
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield* pieces(4, 100_000);
      throw new Error('client went away');
    }

    await expect(own.put('half', failing())).rejects.toThrow('client went away');

    expect(await own.get('half')).toBeUndefined();
    expect(await messagesIn(bucket)).toBe(0);
  });

  it('keeps namespaces apart: the same bucket and name in another namespace is another object', async () => {
    const other = await connectTestBus();
    try {
      const theirs = await openBlobStore(other, BUCKET, { ttlMs: HOUR_MS });
      await store.put('shared-name', Buffer.from('mine'));

      expect(await theirs.get('shared-name')).toBeUndefined();
    } finally {
      const jsm = await other.nc.jetstreamManager();
      await jsm.streams.delete(`OBJ_${other.streamName(BUCKET)}`).catch(() => undefined);
      await other.close();
    }
  });

  it('forgets an object nobody deleted once its time to live has passed', async () => {
    const bucket = 'blobs-ttl';
    opened.push(bucket);
    const own = await openBlobStore(bus, bucket, { ttlMs: 1_000 });
    await own.put('left-over', randomBytes(10));
    expect(await own.get('left-over')).toBeDefined();

    await waitFor(async () => (await messagesIn(bucket)) === 0, {
      timeoutMs: 5_000,
      what: 'the bucket to expire its object',
    });

    expect(await own.get('left-over')).toBeUndefined();
  });
});

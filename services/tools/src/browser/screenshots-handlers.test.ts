import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { Bus } from '@jarvis/bus';
import { catchBusError, connectTestBus } from '@jarvis/bus/testing';
import { SCREENSHOT_MAX_BYTES, toolsScreenshotsGet } from '@jarvis/contracts';
import { createLogger } from '@jarvis/telemetry';
import { type TestDatabase, uniqueNamespace, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startToolsDatabase } from '../tools-database-fixture';
import { registerScreenshotHandlers } from './screenshots-handlers';
import { startScreenshotPruner } from './screenshots-pruner';
import { getScreenshotPng, insertScreenshot } from './screenshots-repository';

// tools.screenshots.get through the real bus on a real database, and the pruner on its timer.
let db: TestDatabase;
let server: Bus;
let client: Bus;
let subscriptions: { unsubscribe(): void }[];

beforeAll(async () => {
  const namespace = uniqueNamespace('screenshots');
  [db, server, client] = await Promise.all([
    startToolsDatabase(),
    connectTestBus(namespace),
    connectTestBus(namespace),
  ]);
  subscriptions = registerScreenshotHandlers({ bus: server, pool: db.pool });
});
afterAll(async () => {
  for (const subscription of subscriptions ?? []) subscription.unsubscribe();
  await Promise.all([client?.close(), server?.close()]);
  await db?.stop();
});

// The largest PNG stored, of bytes that do not compress: its base64 reply must fit the bus.
function pngOf(size: number): Buffer {
  const bytes = Buffer.alloc(size);
  for (let index = 0; index < size; index += 1) bytes[index] = (index * 7919 + 13) % 251;
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return bytes;
}

describe('tools.screenshots.get', () => {
  it('answers the owner with the PNG, the largest allowed in one message', async () => {
    const userId = randomUUID();
    const id = randomUUID();
    const png = pngOf(SCREENSHOT_MAX_BYTES);
    await insertScreenshot(db.pool, {
      id,
      userId,
      url: 'https://a.test/',
      png,
      width: 1280,
      height: 800,
    });
    const reply = await client.request(toolsScreenshotsGet, { userId, id });
    expect(reply.mediaType).toBe('image/png');
    expect(Buffer.from(reply.data, 'base64').equals(png)).toBe(true);
  });

  it('is not_found for another user, and for an id never taken', async () => {
    const userId = randomUUID();
    const id = randomUUID();
    await insertScreenshot(db.pool, {
      id,
      userId,
      url: 'https://a.test/',
      png: pngOf(64),
      width: 8,
      height: 8,
    });
    const stranger = await catchBusError(
      client.request(toolsScreenshotsGet, { userId: randomUUID(), id }),
    );
    expect(stranger.code).toBe('not_found');
    const missing = await catchBusError(
      client.request(toolsScreenshotsGet, { userId, id: randomUUID() }),
    );
    expect(missing.code).toBe('not_found');
  });
});

describe('screenshot pruner', () => {
  it('deletes screenshots past the retention at start and on its timer, and keeps the rest', async () => {
    const userId = randomUUID();
    const [expired, later, kept] = [randomUUID(), randomUUID(), randomUUID()];
    for (const id of [expired, later, kept]) {
      await insertScreenshot(db.pool, {
        id,
        userId,
        url: 'https://a.test/',
        png: pngOf(16),
        width: 1,
        height: 1,
      });
    }
    await db.pool.query(
      "UPDATE tools.screenshots SET created_at = now() - interval '3 days' WHERE id = $1",
      [expired],
    );
    const logged: string[] = [];
    const logger = createLogger(
      'tools-test',
      'info',
      new Writable({
        write(chunk, _encoding, done) {
          logged.push(String(chunk));
          done();
        },
      }),
    );
    const pruner = startScreenshotPruner({
      pool: db.pool,
      logger,
      retentionDays: 2,
      intervalMs: 50,
    });
    try {
      await waitFor(async () => (await getScreenshotPng(db.pool, userId, expired)) === undefined);
      // Aged after the start: only the timer can take it.
      await db.pool.query(
        "UPDATE tools.screenshots SET created_at = now() - interval '2 days 1 minute' WHERE id = $1",
        [later],
      );
      await waitFor(async () => (await getScreenshotPng(db.pool, userId, later)) === undefined);
    } finally {
      await pruner.stop();
    }
    expect(await getScreenshotPng(db.pool, userId, kept)).toBeDefined();
    expect(logged.join('')).toContain('pruned old screenshots');
  });
});

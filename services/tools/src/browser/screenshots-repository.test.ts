import { randomUUID } from 'node:crypto';
import type { TestDatabase } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startToolsDatabase } from '../tools-database-fixture';
import { getScreenshotPng, insertScreenshot, pruneScreenshots } from './screenshots-repository';

let db: TestDatabase;

beforeAll(async () => {
  db = await startToolsDatabase();
});
afterAll(async () => {
  await db?.stop();
});

// Not a real image: the repository keeps bytes as they are, which is what this checks.
const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 255]);

describe('screenshots repository', () => {
  it('gives a screenshot back byte for byte to its owner and to no one else', async () => {
    const id = randomUUID();
    const userId = randomUUID();
    await insertScreenshot(db.pool, {
      id,
      userId,
      runId: randomUUID(),
      url: 'https://example.com/',
      png,
      width: 1280,
      height: 720,
    });
    expect(await getScreenshotPng(db.pool, userId, id)).toEqual(png);
    expect(await getScreenshotPng(db.pool, randomUUID(), id)).toBeUndefined();
    expect(await getScreenshotPng(db.pool, userId, randomUUID())).toBeUndefined();
  });

  it('prunes only the screenshots taken before the cut-off', async () => {
    const userId = randomUUID();
    const old = randomUUID();
    const recent = randomUUID();
    for (const id of [old, recent]) {
      await insertScreenshot(db.pool, {
        id,
        userId,
        url: 'https://a.test/',
        png,
        width: 1,
        height: 1,
      });
    }
    await db.pool.query(
      "UPDATE tools.screenshots SET created_at = now() - interval '31 days' WHERE id = $1",
      [old],
    );
    const removed = await pruneScreenshots(db.pool, new Date(Date.now() - 30 * 86_400_000));
    expect(removed).toBe(1);
    expect(await getScreenshotPng(db.pool, userId, old)).toBeUndefined();
    expect(await getScreenshotPng(db.pool, userId, recent)).toEqual(png);
  });
});

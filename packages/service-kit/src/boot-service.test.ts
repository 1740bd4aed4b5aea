import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Bus } from '@jarvis/bus';
import type { Pool } from '@jarvis/db';
import {
  makeTempDir,
  NATS_URL,
  REDIS_URL,
  startTestDatabase,
  type TestDatabase,
  uniqueNamespace,
  waitFor,
} from '@jarvis/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BootEnv, bootService } from './boot-service';

let database: TestDatabase;
let removeDir: () => Promise<void>;
let migrations: URL;
let brokenMigrations: URL;

const env: BootEnv = {
  NATS_URL,
  NATS_NAMESPACE: uniqueNamespace('boot'),
  LOG_LEVEL: 'fatal',
  DEPENDENCY_LOSS_EXIT_MS: 60_000,
};

beforeAll(async () => {
  database = await startTestDatabase();
  const dir = await makeTempDir('boot-service');
  removeDir = dir.remove;
  await mkdir(join(dir.path, 'ok'));
  await writeFile(join(dir.path, 'ok', '001_items.sql'), 'CREATE TABLE boot_test.items (id int);');
  await mkdir(join(dir.path, 'broken'));
  await writeFile(join(dir.path, 'broken', '001_broken.sql'), 'CREATE TABLE nonsense (;');
  migrations = pathToFileURL(`${join(dir.path, 'ok')}/`);
  brokenMigrations = pathToFileURL(`${join(dir.path, 'broken')}/`);
}, 60_000);

afterAll(async () => {
  await database?.stop();
  await removeDir?.();
});

function databaseEnv() {
  return {
    DATABASE_URL: database.url,
    DATABASE_STATEMENT_TIMEOUT_MS: 0,
    DATABASE_BATCH_STATEMENT_TIMEOUT_MS: 0,
  };
}

describe('bootService', () => {
  it('migrates, connects, reports every dependency on /readyz, and stops the wiring first', async () => {
    const exits: number[] = [];
    const events: string[] = [];
    let opened: { bus: Bus; pool: Pool; redis: Redis } | undefined;
    const booted = await bootService(
      {
        name: 'boot-test',
        env,
        port: 0,
        host: '127.0.0.1',
        database: { env: databaseEnv(), schema: 'boot_test', migrations },
        redis: { url: REDIS_URL },
        exit: (code) => exits.push(code),
      },
      async (resources) => {
        const { bus, pool, redis, service } = resources;
        opened = { bus, pool, redis };
        // The migrations ran before the wiring, which may use their tables at once.
        await pool.query('INSERT INTO boot_test.items (id) VALUES (1)');
        service.app.get('/wired', (_req, res) => {
          res.json({ isWired: true });
        });
        return {
          stop: async () => {
            // Everything the wiring uses is still open while it drains.
            const { rows } = await pool.query('SELECT count(*)::int AS n FROM boot_test.items');
            events.push(`wiring stopped: items=${rows[0].n}`);
            events.push(`bus connected=${bus.isConnected()}`);
            events.push(`redis=${redis.status}`);
          },
        };
      },
    );
    if (!booted) throw new Error('boot failed');
    const url = `http://127.0.0.1:${booted.port}`;

    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      status: 'ready',
      checks: { nats: true, postgres: true, redis: true },
    });
    expect(await (await fetch(`${url}/wired`)).json()).toEqual({ isWired: true });

    await booted.service.stop();
    expect(events).toEqual(['wiring stopped: items=1', 'bus connected=true', 'redis=ready']);
    // Then the bus, the pool and Redis closed, after the wiring had drained.
    expect(opened?.bus.isConnected()).toBe(false);
    expect(opened?.pool.ended).toBe(true);
    // ioredis reports the disconnect a moment after it is asked for.
    await waitFor(() => opened?.redis.status === 'end', { what: 'Redis to disconnect' });
    expect(exits).toEqual([0]);
  });

  it('boots without a database or Redis, and checks only NATS', async () => {
    const exits: number[] = [];
    let resourceNames: string[] = [];
    const booted = await bootService(
      { name: 'boot-bus-only', env, port: 0, host: '127.0.0.1', exit: (code) => exits.push(code) },
      (resources) => {
        resourceNames = Object.keys(resources).filter(
          (key) => Reflect.get(resources, key) !== undefined,
        );
      },
    );
    if (!booted) throw new Error('boot failed');
    const ready = await fetch(`http://127.0.0.1:${booted.port}/readyz`);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { nats: true } });
    expect(resourceNames.sort()).toEqual(['bus', 'logger', 'metrics', 'service']);
    await booted.service.stop();
    expect(exits).toEqual([0]);
  });

  it('exits with 1, without wiring or listening, when a migration fails', async () => {
    const exits: number[] = [];
    let isWired = false;
    const booted = await bootService(
      {
        name: 'boot-broken',
        env,
        port: 0,
        host: '127.0.0.1',
        database: { env: databaseEnv(), schema: 'boot_broken', migrations: brokenMigrations },
        exit: (code) => exits.push(code),
      },
      () => {
        isWired = true;
      },
    );
    expect(booted).toBeUndefined();
    expect(isWired).toBe(false);
    expect(exits).toEqual([1]);
  });
});

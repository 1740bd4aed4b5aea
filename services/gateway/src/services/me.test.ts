import { migrate } from '@jarvis/db';
import { startTestDatabase, type TestDatabase } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticate, createUser } from './api-keys';
import { adoptTimeZone, describeMe, setTimeZone } from './me';

let db: TestDatabase;

beforeAll(async () => {
  db = await startTestDatabase();
  await migrate(db.pool, {
    schema: 'gateway',
    directory: new URL('../../migrations', import.meta.url),
  });
});

afterAll(async () => {
  await db?.stop();
});

// What a request authenticated with this key sees of its user.
async function principalOfNewUser(name: string) {
  const { apiKey } = await createUser(db.pool, name);
  return { apiKey, principal: await authenticate(db.pool, `Bearer ${apiKey}`) };
}

describe('adoptTimeZone', () => {
  // The request was authenticated before the user set a zone, so it still believes none is set.
  it('leaves a zone set after the request was authenticated', async () => {
    const { apiKey, principal } = await principalOfNewUser('alice');
    await setTimeZone(db.pool, principal, 'Europe/Oslo');

    await adoptTimeZone(db.pool, principal, 'America/New_York');

    const now = await authenticate(db.pool, `Bearer ${apiKey}`);
    expect(describeMe(now)).toMatchObject({ timeZone: 'Europe/Oslo', isTimeZoneSet: true });
  });

  it('keeps the zone one chat stored, whatever the chats in flight beside it name', async () => {
    const { apiKey, principal } = await principalOfNewUser('bob');
    const zones = ['Asia/Kolkata', 'Europe/Oslo', 'America/New_York', 'Australia/Lord_Howe'];

    await adoptTimeZone(db.pool, principal, zones[0]);
    await Promise.all(zones.slice(1).map((zone) => adoptTimeZone(db.pool, principal, zone)));

    const now = await authenticate(db.pool, `Bearer ${apiKey}`);
    expect(now.timeZone).toBe('Asia/Kolkata');
  });
});

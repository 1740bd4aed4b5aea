import { ChatResponse, MeResponse } from '@jarvis/contracts';
import {
  type FakeLlm,
  type FakeLlmRequest,
  isTurnRequest,
  sentMessages,
  startFakeLlm,
} from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser } from '../services/api-keys';
import {
  badRequest,
  type RouterFixture,
  startRouterFixture,
  type TestUser,
} from './router-fixture';

// GET and PATCH /v1/me, and the zone a chat names, in front of the real orchestrator, memory and
// model gateway, which asks the fake LLM: the prompt it is sent tells which zone the turn got.
let fake: FakeLlm;
let harness: RouterFixture;

beforeAll(async () => {
  fake = await startFakeLlm();
  harness = await startRouterFixture('/v1', {
    services: ['memory', 'model-gateway', 'orchestrator'],
    serviceEnv: {
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'test-key',
      MODEL_ROUTE_CHAT: 'openai/fake-chat',
      MODEL_ROUTE_UTILITY: 'openai/fake-chat',
      MODEL_ROUTE_EMBED: '',
    },
  });
});

afterAll(async () => {
  await harness?.stop();
  await fake?.close();
});

const call: RouterFixture['call'] = (method, route, options) =>
  harness.call(method, route, options);

// A user of the test's own: the zone is stored once per user, so each test starts without one.
async function newUser(name: string): Promise<TestUser> {
  const created = await createUser(harness.db.pool, name);
  return { id: created.user.id, key: created.apiKey };
}

async function getMe(key: string) {
  const reply = await call('GET', '/me', { key });
  expect(reply.status).toBe(200);
  return MeResponse.parse(reply.body).user;
}

async function setZone(key: string, timeZone: string) {
  const reply = await call('PATCH', '/me', { key, body: { timeZone } });
  expect(reply.status).toBe(200);
  return MeResponse.parse(reply.body).user;
}

// Sends a chat turn and answers the zone its prompt was told the time in.
async function chatZone(key: string, body: { message: string; timeZone?: string }) {
  const reply = await call('POST', '/chat', { key, body });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  ChatResponse.parse(reply.body);
  const asked = fake.requests.filter(
    (request: FakeLlmRequest) =>
      isTurnRequest(request) && sentMessages(request).at(-1)?.content === body.message,
  );
  expect(asked).toHaveLength(1);
  const system = sentMessages(asked[0])[0]?.content ?? '';
  return system.match(/Current date and time: .* \(([^,]+), [^)]+\)\./)?.[1];
}

describe('GET /v1/me', () => {
  it('answers 401 without a key', async () => {
    expect((await call('GET', '/me')).status).toBe(401);
  });

  it("answers the key's user, in UTC until a zone is set", async () => {
    expect(await getMe(harness.alice.key)).toEqual({
      id: harness.alice.id,
      name: 'alice',
      timeZone: 'UTC',
      isTimeZoneSet: false,
    });
  });
});

describe('PATCH /v1/me', () => {
  it('answers 401 without a key', async () => {
    const reply = await call('PATCH', '/me', { body: { timeZone: 'Europe/Oslo' } });

    expect(reply.status).toBe(401);
  });

  it("sets the key's own user's zone, and only theirs", async () => {
    const carol = await newUser('carol');
    const dave = await newUser('dave');

    expect(await setZone(carol.key, 'Europe/Oslo')).toEqual({
      id: carol.id,
      name: 'carol',
      timeZone: 'Europe/Oslo',
      isTimeZoneSet: true,
    });
    expect(await getMe(carol.key)).toMatchObject({ timeZone: 'Europe/Oslo', isTimeZoneSet: true });
    expect(await getMe(dave.key)).toMatchObject({ timeZone: 'UTC', isTimeZoneSet: false });
    // Set again, it changes: the user's own choice is never locked.
    expect(await setZone(carol.key, 'Asia/Kolkata')).toMatchObject({ timeZone: 'Asia/Kolkata' });
    expect(await getMe(carol.key)).toMatchObject({ timeZone: 'Asia/Kolkata' });
  });

  it.each([
    ['an unknown zone', { timeZone: 'Mars/Olympus_Mons' }, /^timeZone: /],
    ['a zone of another type', { timeZone: 2 }, /^timeZone: /],
    ['no zone', {}, /^timeZone: /],
    // The user is always the key's: naming one is refused, not ignored.
    ['a userId', { timeZone: 'Europe/Oslo', userId: 'x' }, /userId/],
    ['a name', { timeZone: 'Europe/Oslo', name: 'mallory' }, /name/],
  ])('answers 400 to %s, storing nothing', async (_label, body, message) => {
    const erin = await newUser('erin');
    await setZone(erin.key, 'America/New_York');

    expect(await call('PATCH', '/me', { key: erin.key, body })).toEqual(badRequest(message));
    expect(await getMe(erin.key)).toMatchObject({
      name: 'erin',
      timeZone: 'America/New_York',
      isTimeZoneSet: true,
    });
  });

  it('names timeZone and says what it takes', async () => {
    const reply = await call('PATCH', '/me', {
      key: harness.alice.key,
      body: { timeZone: 'Europe/Osloo' },
    });

    expect(reply).toEqual(badRequest('timeZone: an IANA time zone, such as Europe/Oslo'));
  });
});

describe('POST /v1/chat and the stored zone', () => {
  it('stores the first zone a chat names, and tells later turns without one in it', async () => {
    const frank = await newUser('frank');

    expect(await chatZone(frank.key, { message: 'hello from Oslo', timeZone: 'Europe/Oslo' })).toBe(
      'Europe/Oslo',
    );
    expect(await getMe(frank.key)).toMatchObject({ timeZone: 'Europe/Oslo', isTimeZoneSet: true });

    // Another zone applies to its own turn, and the stored one stays.
    expect(
      await chatZone(frank.key, { message: 'hello from New York', timeZone: 'America/New_York' }),
    ).toBe('America/New_York');
    expect(await getMe(frank.key)).toMatchObject({ timeZone: 'Europe/Oslo' });

    expect(await chatZone(frank.key, { message: 'hello from nowhere in particular' })).toBe(
      'Europe/Oslo',
    );
  });

  it('keeps the zone the user set', async () => {
    const grace = await newUser('grace');
    await setZone(grace.key, 'Australia/Lord_Howe');

    expect(
      await chatZone(grace.key, { message: 'hi from Kolkata', timeZone: 'Asia/Kolkata' }),
    ).toBe('Asia/Kolkata');
    expect(await getMe(grace.key)).toMatchObject({ timeZone: 'Australia/Lord_Howe' });
    expect(await chatZone(grace.key, { message: 'hi again' })).toBe('Australia/Lord_Howe');
  });

  it('tells a turn UTC while no zone is set, and stores none', async () => {
    const heidi = await newUser('heidi');

    expect(await chatZone(heidi.key, { message: 'hi without a zone' })).toBe('UTC');
    expect(await getMe(heidi.key)).toMatchObject({ timeZone: 'UTC', isTimeZoneSet: false });
  });

  it('stores nothing for a chat refused for its zone', async () => {
    const ivan = await newUser('ivan');
    const reply = await call('POST', '/chat', {
      key: ivan.key,
      body: { message: 'hi', timeZone: 'Nowhere/Special' },
    });

    expect(reply).toEqual(badRequest(/^timeZone: /));
    expect(await getMe(ivan.key)).toMatchObject({ isTimeZoneSet: false });
  });
});

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  badRequest,
  type RouterFixture,
  startRouterFixture,
  type TestUser,
} from './router-fixture';

// The routes in front of a real orchestrator. Runs exist only as turns leave them, so listing,
// paging and reading real runs is tested through the whole stack (e2e/src/runs-api.test.ts).
let harness: RouterFixture;
let alice: TestUser;

beforeAll(async () => {
  harness = await startRouterFixture('/v1/runs', { services: ['orchestrator'] });
  ({ alice } = harness);
});

afterAll(async () => {
  await harness?.stop();
});

const call: RouterFixture['call'] = (method, route, options) =>
  harness.call(method, route, options);

const NOT_FOUND = {
  status: 404,
  body: { error: { code: 'not_found', message: 'run not found' } },
};

describe('GET /v1/runs and /v1/runs/{id}', () => {
  it.each([['/'], [`/${randomUUID()}`]])('answers 401 to GET %s without a key', async (route) => {
    const reply = await call('GET', route);

    expect(reply.status).toBe(401);
    expect(reply.body).toEqual({
      error: { code: 'unauthorized', message: expect.stringContaining('missing API key') },
    });
  });

  it('answers 404 to a run that does not exist', async () => {
    expect(await call('GET', `/${randomUUID()}`, { key: alice.key })).toEqual(NOT_FOUND);
  });

  it.each([
    ['a run id that is not a uuid', '/nope', /^id: /],
    ['an unknown list parameter', '/?sort=asc', /^\(root\): /],
    // The user is always the key's: naming another one is refused, not ignored.
    ['a userId in the list', `/?userId=${randomUUID()}`, /^\(root\): /],
    ['a userId on a run', `/${randomUUID()}?userId=${randomUUID()}`, /^\(root\): /],
    ['a limit of 0', '/?limit=0', /^limit: /],
    ['a limit over 100', '/?limit=101', /^limit: /],
    ['a limit that is no number', '/?limit=ten', /^limit: /],
    ['a repeated limit', '/?limit=1&limit=2', /^limit: /],
    ['a before that is no datetime', '/?before=yesterday', /^before: /],
    ['an unknown status', '/?status=done', /^status: /],
    ['a conversationId that is not a uuid', '/?conversationId=nope', /^conversationId: /],
  ])('answers 400 to %s', async (_label, route, message) => {
    expect(await call('GET', route, { key: alice.key })).toEqual(badRequest(message));
  });
});

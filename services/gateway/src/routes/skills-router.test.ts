import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RouterFixture, startRouterFixture, type TestUser } from './router-fixture';

let harness: RouterFixture;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  harness = await startRouterFixture('/v1/memory', { services: ['memory'] });
  ({ alice, bob } = harness);
});

afterAll(async () => {
  await harness?.stop();
});

const TRIP =
  '---\nname: trip-planning\ndescription: How I like trips planned\n---\nNo flights before 9.\n';

describe('skills over HTTP', () => {
  it('lists a skill written as a memory file, to its owner only', async () => {
    const written = await harness.call('PUT', '/files/content', {
      key: alice.key,
      body: { path: 'skills/trip-planning.md', content: TRIP },
    });

    expect(written.status).toBe(200);
    expect(await harness.call('GET', '/skills', { key: alice.key })).toEqual({
      status: 200,
      body: { skills: [{ name: 'trip-planning', description: 'How I like trips planned' }] },
    });
    expect(await harness.call('GET', '/skills', { key: bob.key })).toEqual({
      status: 200,
      body: { skills: [] },
    });
  });

  it('answers 400 with the format to a skills/ file that is not a skill', async () => {
    const reply = await harness.call('PUT', '/files/content', {
      key: alice.key,
      body: { path: 'skills/packing.md', content: 'Pack light.' },
    });

    expect(reply).toEqual({
      status: 400,
      body: {
        error: {
          code: 'bad_request',
          message: expect.stringMatching(
            /^content: skills\/packing\.md is not a skill: .* "name: <name>", "description: /,
          ),
        },
      },
    });
  });

  it('answers 401 without a key', async () => {
    expect((await harness.call('GET', '/skills')).status).toBe(401);
  });
});

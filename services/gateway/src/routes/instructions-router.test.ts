import { INSTRUCTIONS_TOKEN_CAP } from '@jarvis/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { badRequest, type RouterFixture, startRouterFixture } from './router-fixture';

// GET and PUT /v1/me/instructions in front of the real memory service.
let harness: RouterFixture;

beforeAll(async () => {
  harness = await startRouterFixture('/v1', { services: ['memory'] });
});

afterAll(async () => {
  await harness?.stop();
});

describe('/v1/me/instructions', () => {
  it('writes and reads the instructions, each user their own', async () => {
    const { alice, bob } = harness;
    const text = 'Answer in Norwegian. Use metric units.';

    expect(
      await harness.call('PUT', '/me/instructions', { key: alice.key, body: { text } }),
    ).toEqual({
      status: 200,
      body: { instructions: { text, tokens: 10, cap: INSTRUCTIONS_TOKEN_CAP, rulesTokens: 0 } },
    });
    expect(await harness.call('GET', '/me/instructions', { key: alice.key })).toMatchObject({
      status: 200,
      body: { instructions: { text, tokens: 10 } },
    });
    expect(await harness.call('GET', '/me/instructions', { key: bob.key })).toMatchObject({
      status: 200,
      body: { instructions: { text: '', tokens: 0 } },
    });
  });

  it('answers 400 past the cap, counting the rules, and keeps the old text', async () => {
    const { alice } = harness;
    const rule = await harness.call('POST', '/memory/facts', {
      key: alice.key,
      body: { content: 'Never book flights before 9.', category: 'rule' },
    });
    expect(rule).toMatchObject({ status: 201, body: { fact: { category: 'rule' } } });

    const tooLong = 'x'.repeat(INSTRUCTIONS_TOKEN_CAP * 4);
    expect(
      await harness.call('PUT', '/me/instructions', { key: alice.key, body: { text: tooLong } }),
    ).toEqual(badRequest(/capped at 1000 tokens: 17 are in use and this needs 1000/));
    expect(await harness.call('GET', '/me/instructions', { key: alice.key })).toMatchObject({
      body: { instructions: { text: 'Answer in Norwegian. Use metric units.', rulesTokens: 7 } },
    });
    expect(
      await harness.call('PUT', '/me/instructions', {
        key: alice.key,
        body: { text: 'x'.repeat(8_001) },
      }),
    ).toEqual(badRequest(/^text: /));
  });
});

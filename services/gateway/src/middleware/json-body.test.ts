import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { badRequest, type RouterFixture, startRouterFixture } from '../routes/router-fixture';
import { JSON_MAX_DEPTH } from '../services/json-depth';

// Metadata nested this deep (about 27 KB) made JSON.stringify throw a RangeError: a 500.
const ATTACK_DEPTH = 4_500;

let harness: RouterFixture;

beforeAll(async () => {
  harness = await startRouterFixture('/v1', { services: ['memory'] });
});

afterAll(async () => {
  await harness?.stop();
});

// `{"a":{"a":…1…}}`, written as text: the test's own JSON.stringify would overflow too.
function nested(depth: number): string {
  return `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

async function send(method: string, route: string, body: string, type = 'application/json') {
  const response = await fetch(`${harness.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${harness.alice.key}`, 'content-type': type },
    body,
  });
  return { status: response.status, body: await response.json() };
}

const TOO_DEEP = badRequest(`JSON nested deeper than ${JSON_MAX_DEPTH} levels`);

describe('the JSON depth limit', () => {
  it('answers 400 to deeply nested metadata on every route that takes it, and stores nothing', async () => {
    const conversationId = randomUUID();
    const metadata = nested(ATTACK_DEPTH);
    const message = `{"role":"user","content":"deep","createdAt":"2024-01-02T10:00:00Z","metadata":${metadata}}`;

    expect(
      await send(
        'PUT',
        '/memory/files/content',
        `{"path":"deep.md","content":"x","metadata":${metadata}}`,
      ),
    ).toEqual(TOO_DEEP);
    expect(
      await send(
        'POST',
        '/memory/documents',
        `{"title":"deep","contentType":"text/plain","content":"x","metadata":${metadata}}`,
      ),
    ).toEqual(TOO_DEEP);
    expect(
      await send(
        'POST',
        `/conversations/${conversationId}/messages/import`,
        `{"messages":[${message}]}`,
      ),
    ).toEqual(TOO_DEEP);
    expect(await send('POST', '/conversations/import/chatgpt', `[${metadata}]`)).toEqual(TOO_DEEP);
    expect(await send('POST', '/memory/search', `{"query":${metadata}}`)).toEqual(TOO_DEEP);

    const listed = await harness.call('GET', '/memory/files', { key: harness.alice.key });
    expect(listed.body).toMatchObject({ files: [] });
    const documents = await harness.call('GET', '/memory/documents', { key: harness.alice.key });
    expect(documents.body).toMatchObject({ documents: [] });
    const history = await harness.call('GET', `/conversations/${conversationId}/messages`, {
      key: harness.alice.key,
    });
    expect(history.status).toBe(404);
  });

  it('answers 400 naming the line of a memory import file nested too deep', async () => {
    const header =
      '{"type":"header","format":"jarvis-memory","version":1,"exportedAt":"2024-05-01T10:00:00Z"}';
    const conversation = `{"type":"conversation","id":"${randomUUID()}","isDefault":false,"createdAt":"2024-05-01T10:00:00Z","metadata":${nested(ATTACK_DEPTH)}}`;
    expect(
      await send('POST', '/memory/import', `${header}\n${conversation}\n`, 'application/x-ndjson'),
    ).toEqual(badRequest(`line 2: JSON nested deeper than ${JSON_MAX_DEPTH} levels`));
  });

  it('takes metadata nested up to the limit', async () => {
    // The body's own object is the first level.
    const metadata = nested(JSON_MAX_DEPTH - 1);
    const written = await send(
      'PUT',
      '/memory/files/content',
      `{"path":"nested.md","content":"x","metadata":${metadata}}`,
    );
    expect(written.status).toBe(200);
    const tooDeep = await send(
      'PUT',
      '/memory/files/content',
      `{"path":"nested.md","content":"x","metadata":${nested(JSON_MAX_DEPTH)}}`,
    );
    expect(tooDeep).toEqual(TOO_DEEP);
  });
});

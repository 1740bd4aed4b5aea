import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RouterFixture, startRouterFixture } from '../routes/router-fixture';

let harness: RouterFixture;

beforeAll(async () => {
  harness = await startRouterFixture('/v1');
});

afterAll(async () => {
  await harness?.stop();
});

// Under every route's body limit, so a server that reads before it authenticates waits for all
// of it.
const DECLARED_BYTES = 3 * 1_024 * 1_024;
const SENT_BYTES = 64 * 1_024;
const ANSWER_WAIT_MS = 3_000;

type EarlyAnswer = { status: number | undefined; connection: string | undefined };

// Declares a large body, sends its first part and waits: only a server that answers without
// reading the body answers at all.
function uploadWithoutKey(route: string, contentType: string): Promise<EarlyAnswer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${harness.url}${route}`, {
      method: 'POST',
      headers: { 'content-type': contentType, 'content-length': DECLARED_BYTES },
    });
    const timer = setTimeout(() => {
      request.destroy();
      reject(new Error(`no answer within ${ANSWER_WAIT_MS} ms: the server is reading the body`));
    }, ANSWER_WAIT_MS);
    request.on('response', (response) => {
      clearTimeout(timer);
      response.resume();
      resolve({ status: response.statusCode, connection: response.headers.connection });
      request.destroy();
    });
    // The server may close while the rest is still being written.
    request.on('error', () => {});
    request.write(contentType === 'application/json' ? '{"messages": [' : '{"kind": "fact"}\n');
    request.write(Buffer.alloc(SENT_BYTES, ' '));
  });
}

describe('a request without a valid key', () => {
  it.each([
    ['/conversations/{id}/messages/import', 'application/json'],
    ['/conversations/import/chatgpt', 'application/json'],
    ['/memory/documents', 'application/json'],
    ['/memory/import', 'application/x-ndjson'],
    ['/memory/facts', 'application/json'],
  ])('to POST %s is refused before its body is read', async (route, contentType) => {
    const answer = await uploadWithoutKey(route.replace('{id}', randomUUID()), contentType);

    expect(answer).toEqual({ status: 401, connection: 'close' });
  });

  it.each([
    [undefined, 'missing API key: send "Authorization: Bearer <key>"'],
    ['', 'missing API key: send "Authorization: Bearer <key>"'],
    ['Bearer {key} extra', 'malformed Authorization header: send "Authorization: Bearer <key>"'],
    [
      'Basic YWxpY2U6c2VjcmV0',
      'malformed Authorization header: send "Authorization: Bearer <key>"',
    ],
    ['Bearer', 'malformed Authorization header: send "Authorization: Bearer <key>"'],
    ['Bearer jv_notAKeyOfAnyone', 'invalid or revoked API key'],
  ])('with Authorization %j answers 401: %s', async (header, message) => {
    const response = await fetch(`${harness.url}/keys`, {
      headers:
        header === undefined ? {} : { authorization: header.replace('{key}', harness.alice.key) },
    });

    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ error: { code: 'unauthorized', message } });
  });

  it('still reads the API description, which is public', async () => {
    expect((await fetch(`${harness.url}/openapi.json`)).status).toBe(200);
  });
});

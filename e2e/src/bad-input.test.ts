import { ErrorBody } from '@jarvis/contracts';
import { type StackFixture, startStackFixture } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

async function errorOf(response: Response) {
  return ErrorBody.parse(await response.json()).error;
}

describe('bad input and missing services', () => {
  let fixture: StackFixture;
  let apiKey: string;
  let url: string;

  const send = (path: string, init: { body?: string; key?: string; type?: string } = {}) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: {
        ...(init.key === undefined ? {} : { authorization: `Bearer ${init.key}` }),
        'content-type': init.type ?? 'application/json',
      },
      ...(init.body === undefined ? {} : { body: init.body }),
    });

  beforeAll(async () => {
    fixture = await startStackFixture({ BODY_LIMIT_BYTES: '4096' });
    url = fixture.stack.gatewayUrl;
    ({ apiKey } = await fixture.createUser('carol'));
  });

  afterAll(async () => {
    await fixture?.close();
  });

  it('answers malformed JSON with 400', async () => {
    const response = await send('/v1/chat', { key: apiKey, body: '{"message": "hi"' });
    expect(response.status).toBe(400);
    expect(await errorOf(response)).toEqual({
      code: 'bad_request',
      message: 'request body is not valid JSON',
    });
  });

  it('names the missing or wrongly typed field', async () => {
    const missing = await send('/v1/chat', { key: apiKey, body: '{}' });
    expect(missing.status).toBe(400);
    expect((await errorOf(missing)).message).toMatch(/^message: /);

    const wrongType = await send('/v1/chat', { key: apiKey, body: '{"message": 42}' });
    expect(wrongType.status).toBe(400);
    expect((await errorOf(wrongType)).message).toMatch(/^message: .*string/);

    const badId = await send('/v1/chat', {
      key: apiKey,
      body: '{"message": "hi", "conversationId": "not-a-uuid"}',
    });
    expect(badId.status).toBe(400);
    expect((await errorOf(badId)).message).toMatch(/^conversationId: /);

    const empty = await send('/v1/chat', { key: apiKey, body: '{"message": "   "}' });
    expect(empty.status).toBe(400);
    expect((await errorOf(empty)).message).toBe('message: message must not be empty');

    const badZone = await send('/v1/chat', {
      key: apiKey,
      body: '{"message": "hi", "timeZone": "Mars/Olympus"}',
    });
    expect(badZone.status).toBe(400);
    expect((await errorOf(badZone)).message).toBe(
      'timeZone: an IANA time zone, such as Europe/Oslo',
    );

    const notJson = await send('/v1/chat', { key: apiKey, body: 'message=hi', type: 'text/plain' });
    expect(notJson.status).toBe(400);
    expect((await errorOf(notJson)).message).toMatch(/Content-Type: application\/json/);
  });

  it('refuses a body over the size limit with 413', async () => {
    const body = JSON.stringify({ message: 'x'.repeat(8_000) });
    const response = await send('/v1/chat', { key: apiKey, body });
    expect(response.status).toBe(413);
    expect((await errorOf(response)).code).toBe('payload_too_large');
  });

  it('answers unknown routes with a 404 JSON error', async () => {
    const response = await send('/v1/nope', { key: apiKey, body: '{}' });
    expect(response.status).toBe(404);
    expect(await errorOf(response)).toEqual({
      code: 'not_found',
      message: 'no route for POST /v1/nope',
    });
    const root = await fetch(`${url}/no/such/page`);
    expect(root.status).toBe(404);
  });

  it('answers a missing or wrong API key with 401, and a user key on admin routes with 403', async () => {
    const missing = await send('/v1/chat', { body: '{"message": "hi"}' });
    expect(missing.status).toBe(401);
    expect((await errorOf(missing)).code).toBe('unauthorized');

    const wrong = await send('/v1/chat', { key: 'jv_not-a-real-key', body: '{"message": "hi"}' });
    expect(wrong.status).toBe(401);
    expect(await errorOf(wrong)).toEqual({
      code: 'unauthorized',
      message: 'invalid or revoked API key',
    });

    const notAdmin = await send('/v1/admin/users', { key: apiKey, body: '{"name": "eve"}' });
    expect(notAdmin.status).toBe(403);

    const badUser = await send('/v1/admin/users', { key: fixture.adminKey, body: '{"name": ""}' });
    expect(badUser.status).toBe(400);
  });

  it('answers 503 quickly, naming the service, when a downstream service is down', async () => {
    await fixture.stack.stopService('model-gateway');
    let started = Date.now();
    const noModel = await send('/v1/chat', { key: apiKey, body: '{"message": "hi"}' });
    expect(noModel.status).toBe(503);
    expect(await errorOf(noModel)).toEqual({
      code: 'unavailable',
      message: 'model-gateway service is not available',
    });
    expect(Date.now() - started).toBeLessThan(5_000);
    await fixture.stack.startService('model-gateway');

    await fixture.stack.stopService('orchestrator');
    started = Date.now();
    const noOrchestrator = await send('/v1/chat', { key: apiKey, body: '{"message": "hi"}' });
    expect(noOrchestrator.status).toBe(503);
    expect(await errorOf(noOrchestrator)).toEqual({
      code: 'unavailable',
      message: 'orchestrator service is not available',
    });
    expect(Date.now() - started).toBeLessThan(5_000);
    await fixture.stack.startService('orchestrator');

    await fixture.stack.stopService('memory');
    const noMemory = await send('/v1/chat', { key: apiKey, body: '{"message": "hi"}' });
    expect(noMemory.status).toBe(503);
    expect((await errorOf(noMemory)).message).toBe('memory service is not available');
    await fixture.stack.startService('memory');

    const recovered = await send('/v1/chat', { key: apiKey, body: '{"message": "hi"}' });
    expect(recovered.status).toBe(200);
  });
});

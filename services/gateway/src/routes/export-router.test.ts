import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RouterFixture, startRouterFixture } from './router-fixture';

let harness: RouterFixture;

beforeAll(async () => {
  harness = await startRouterFixture('/v1/memory');
});

afterAll(async () => {
  await harness?.stop();
});

const HEADER = JSON.stringify({
  type: 'header',
  format: 'jarvis-memory',
  version: 1,
  exportedAt: '2026-01-01T00:00:00.000Z',
});
const DECLARED_BYTES = 3 * 1_024 * 1_024;
const ANSWER_WAIT_MS = 3_000;

type EarlyAnswer = { status: number | undefined; body: unknown; connection: string | undefined };

// Declares a large file and sends its start only: a server that reads the whole body before it
// looks at the lines never answers.
function sendStartOfImport(start: string): Promise<EarlyAnswer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${harness.url}/import`, {
      method: 'POST',
      agent: false,
      headers: {
        authorization: `Bearer ${harness.alice.key}`,
        'content-type': 'application/x-ndjson',
        'content-length': DECLARED_BYTES,
      },
    });
    const timer = setTimeout(() => {
      request.destroy();
      reject(new Error(`no answer within ${ANSWER_WAIT_MS} ms: the server waits for the file`));
    }, ANSWER_WAIT_MS);
    request.on('response', (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (part: string) => {
        text += part;
      });
      response.on('end', () => {
        clearTimeout(timer);
        const connection = response.headers.connection;
        resolve({ status: response.statusCode, body: JSON.parse(text), connection });
        request.destroy();
      });
    });
    // The server may close while the rest is still being written.
    request.on('error', () => {});
    request.write(start);
    request.write(' '.repeat(64 * 1_024));
  });
}

describe('POST /v1/memory/import', () => {
  it('reads the file as it arrives: a bad line answers before the rest is sent', async () => {
    const answer = await sendStartOfImport(`${HEADER}\nnot json\n`);

    expect(answer).toEqual({
      status: 400,
      body: { error: { code: 'bad_request', message: 'line 2: not valid JSON' } },
      connection: 'close',
    });
  });

  it('answers 400 to a body that is not an export file', async () => {
    const response = await fetch(`${harness.url}/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${harness.alice.key}`, 'content-type': 'application/json' },
      body: HEADER,
    });

    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: {
        code: 'bad_request',
        message: 'expected an export file with Content-Type: application/x-ndjson',
      },
    });
  });
});

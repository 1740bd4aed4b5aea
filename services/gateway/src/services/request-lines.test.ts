import { request as httpRequest } from 'node:http';
import { gzipSync } from 'node:zlib';
import { createService, type Service } from '@jarvis/service-kit';
import { createLogger, createMetrics } from '@jarvis/telemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestLines } from './request-lines';

const LIMIT_BYTES = 1_024;
const LINE_MAX_CHARS = 200;

let service: Service;
let url: string;

beforeAll(async () => {
  service = createService({
    name: 'request-lines-test',
    port: 0,
    host: '127.0.0.1',
    logger: createLogger('request-lines-test', 'silent'),
    metrics: createMetrics('request-lines-test'),
    checks: {},
    dependencyLossExitMs: 60_000,
    onStop: async () => {},
    exit: () => {},
  });
  service.app.post('/lines', async (req, res) => {
    const lines: string[] = [];
    const lineLimit = { maxChars: LINE_MAX_CHARS, whatFits: 'a short line' };
    for await (const line of requestLines(req, LIMIT_BYTES, lineLimit)) lines.push(line);
    res.json({ lines });
  });
  const { port } = await service.start();
  url = `http://127.0.0.1:${port}/lines`;
});

afterAll(async () => {
  await service?.stop();
});

type Answer = { status: number; body: unknown };

// Sends the body in the chunks given, each written on its own, so lines and characters straddle
// the chunks as they would on the wire.
function send(chunks: (string | Buffer)[], headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    // A connection of its own: one whose declared length was not sent is no use afterwards.
    const request = httpRequest(url, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/x-ndjson', ...headers },
    });
    request.on('error', reject);
    request.on('response', (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (part: string) => {
        text += part;
      });
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }),
      );
    });
    const write = async () => {
      for (const chunk of chunks) {
        request.write(chunk);
        await new Promise((done) => setTimeout(done, 5));
      }
      request.end();
    };
    void write();
  });
}

describe('requestLines', () => {
  it('splits lines across chunks, characters split between chunks included', async () => {
    const euro = Buffer.from('€');
    const answer = await send([
      'first\nsec',
      Buffer.concat([Buffer.from('ond '), euro.subarray(0, 1)]),
      Buffer.concat([euro.subarray(1), Buffer.from('\r\n\nlast')]),
    ]);

    expect(answer).toEqual({ status: 200, body: { lines: ['first', 'second €\r', '', 'last'] } });
  });

  it('reads a compressed body, and one in another charset', async () => {
    const gzipped = await send([gzipSync('one\ntwo\n')], { 'content-encoding': 'gzip' });
    const latin1 = await send([Buffer.from('café\n', 'latin1')], {
      'content-type': 'text/plain; charset=iso-8859-1',
    });

    expect(gzipped).toEqual({ status: 200, body: { lines: ['one', 'two', ''] } });
    expect(latin1).toEqual({ status: 200, body: { lines: ['café', ''] } });
  });

  it('answers 413 once more than the limit has arrived, whatever the declared length', async () => {
    const line = `${'x'.repeat(99)}\n`;
    const chunked = await send(Array.from({ length: 11 }, () => line));
    const declared = await send(['x'], { 'content-length': String(LIMIT_BYTES + 1) });
    // Decompressed size is what counts.
    const bomb = await send([gzipSync('x'.repeat(LIMIT_BYTES * 10))], {
      'content-encoding': 'gzip',
    });

    const tooLarge = {
      status: 413,
      body: {
        error: {
          code: 'payload_too_large',
          message: `request body too large: at most ${LIMIT_BYTES} bytes`,
        },
      },
    };
    expect(chunked).toEqual(tooLarge);
    expect(declared).toEqual(tooLarge);
    expect(bomb).toEqual(tooLarge);
  });

  it('answers 413 naming the line once it is longer than the line limit, in one chunk or many', async () => {
    const long = 'y'.repeat(LINE_MAX_CHARS + 1);
    const inOneChunk = await send([`short\n${long}\nmore\n`]);
    const growing = await send(['a\nb\n', 'y'.repeat(150), 'y'.repeat(51)]);
    const exactlyAtTheLimit = await send([`${'y'.repeat(LINE_MAX_CHARS)}\n`]);

    const tooLong = (line: number) => ({
      status: 413,
      body: {
        error: {
          code: 'payload_too_large',
          message: `line ${line}: longer than ${LINE_MAX_CHARS} characters (a short line)`,
        },
      },
    });
    expect(inOneChunk).toEqual(tooLong(2));
    expect(growing).toEqual(tooLong(3));
    expect(exactlyAtTheLimit).toEqual({
      status: 200,
      body: { lines: ['y'.repeat(LINE_MAX_CHARS), ''] },
    });
  });

  it.each([
    [{ 'content-encoding': 'zstd' }, 415, 'unsupported content encoding "zstd"'],
    [{ 'content-type': 'text/plain; charset=utf-99' }, 415, 'unsupported charset "utf-99"'],
    [{ 'content-encoding': 'gzip' }, 400, /^the request body could not be read: /],
  ])('refuses %j with %i', async (headers, status, message) => {
    const answer = await send(['not gzip\n'], headers);

    expect(answer).toEqual({
      status,
      body: {
        error: {
          code: 'bad_request',
          message: typeof message === 'string' ? message : expect.stringMatching(message),
        },
      },
    });
  });
});

import { pipeline, type Readable, type Transform } from 'node:stream';
import { MIMEType, TextDecoder } from 'node:util';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { HttpError } from '@jarvis/service-kit';
import type { Request } from 'express';

const UNSUPPORTED_MEDIA_TYPE = 415;

// The encodings express's body parsers take.
const INFLATERS = new Map<string, () => Transform>([
  ['gzip', createGunzip],
  ['x-gzip', createGunzip],
  ['deflate', createInflate],
  ['br', createBrotliDecompress],
]);

function decompressed(req: Request): Readable {
  const encoding = (req.get('content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity') return req;
  const inflate = INFLATERS.get(encoding);
  if (!inflate) {
    throw new HttpError(
      'bad_request',
      `unsupported content encoding "${encoding}"`,
      UNSUPPORTED_MEDIA_TYPE,
    );
  }
  // An error on either side reaches the reader; nothing else ends the request.
  return pipeline(req, inflate(), () => {});
}

function textDecoder(req: Request): TextDecoder {
  let charset: string;
  try {
    charset = new MIMEType(req.get('content-type') ?? '').params.get('charset') ?? 'utf-8';
  } catch {
    throw new HttpError('bad_request', 'malformed Content-Type header');
  }
  try {
    return new TextDecoder(charset);
  } catch {
    throw new HttpError('bad_request', `unsupported charset "${charset}"`, UNSUPPORTED_MEDIA_TYPE);
  }
}

function tooLarge(limitBytes: number): HttpError {
  return new HttpError('payload_too_large', `request body too large: at most ${limitBytes} bytes`);
}

// The longest line a reader takes, and what fits in it, for the 413's message.
type LineLimit = { maxChars: number; whatFits: string };

function lineTooLong(line: number, limit: LineLimit): HttpError {
  return new HttpError(
    'payload_too_large',
    `line ${line}: longer than ${limit.maxChars} characters (${limit.whatFits})`,
  );
}

// A request body's lines (split at \n, as in JSON Lines), decoded as they arrive, so a large
// upload is never held whole. More than limitBytes, decompressed, is refused with a 413, and so is
// a line longer than lineLimit as soon as that much of it has arrived: only one line is held at a
// time, so it bounds what the reader holds. A reader that stops early leaves the rest unread
// instead of destroying the request, whose answer must still reach the client.
export async function* requestLines(
  req: Request,
  limitBytes: number,
  lineLimit: LineLimit = { maxChars: limitBytes, whatFits: 'the whole body' },
): AsyncGenerator<string> {
  if (Number(req.get('content-length')) > limitBytes) throw tooLarge(limitBytes);
  const decoder = textDecoder(req);
  const body = decompressed(req);
  let received = 0;
  let lineNumber = 1;
  // The line under way, in pieces: joined once it ends, however many chunks it spans.
  let pending: string[] = [];
  let pendingChars = 0;
  const checkLength = (chars: number) => {
    if (chars > lineLimit.maxChars) throw lineTooLong(lineNumber, lineLimit);
  };
  try {
    for await (const chunk of body.iterator({ destroyOnReturn: false })) {
      // A byte stream yields Buffers: the check only gives the chunk its type.
      if (!(chunk instanceof Uint8Array)) continue;
      received += chunk.byteLength;
      if (received > limitBytes) throw tooLarge(limitBytes);
      const lines = decoder.decode(chunk, { stream: true }).split('\n');
      const last = lines.pop() ?? '';
      const [first] = lines;
      if (first !== undefined) {
        checkLength(pendingChars + first.length);
        lines[0] = pending.join('') + first;
        pending = [];
        pendingChars = 0;
        for (const line of lines) {
          checkLength(line.length);
          yield line;
          lineNumber += 1;
        }
      }
      pending.push(last);
      pendingChars += last.length;
      checkLength(pendingChars);
    }
  } catch (error) {
    if (error instanceof HttpError) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw new HttpError('bad_request', `the request body could not be read: ${reason}`);
  }
  yield pending.join('') + decoder.decode();
}

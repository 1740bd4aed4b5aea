import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { type BlobStore, type Bus, isBusError } from '@jarvis/bus';
import {
  DOCUMENT_SOURCE_MAX_CHARS,
  DOCUMENT_TITLE_MAX_CHARS,
  type MemoryDocumentsIngestResponse,
  toolsDocumentsImport,
} from '@jarvis/contracts';
import { HttpError } from '@jarvis/service-kit';
import busboy from 'busboy';
import type { Request } from 'express';

// A file posted as multipart/form-data, in the uploads bucket under `blob`: the caller owns the
// object from here and deletes it once done with it.
export type ReceivedUpload = {
  blob: string;
  filename: string;
  // The part's Content-Type, unless it says nothing (application/octet-stream).
  declaredType: string | undefined;
  size: number;
  title: string | undefined;
};

export type ReceiveUploadOptions = { store: BlobStore; maxBytes: number };

// The only parts the form takes.
const FILE_FIELD = 'file';
const TITLE_FIELD = 'title';
// An upload is extracted (the tools service gives that up to DOCUMENT_EXTRACT_TIMEOUT_MS, a
// minute by default) and then ingested (memory's wait is a minute too): the wait covers both.
const IMPORT_TIMEOUT_MS = 180_000;
// A title of the longest allowed, all four-byte characters, and one byte over: a longer one is
// refused as too long rather than cut.
const TITLE_MAX_BYTES = DOCUMENT_TITLE_MAX_CHARS * 4 + 1;
// What a browser names a part whose type it does not know: no claim about the content.
const UNDECLARED_TYPES = new Set(['application/octet-stream']);

function isControlCharacter(character: string): boolean {
  const code = character.charCodeAt(0);
  return code < 0x20 || code === 0x7f;
}

// The name as the document's source may hold it: one line, within its length. A name with
// nothing left is not a reason to refuse the file.
function cleanFilename(name: string): string {
  const clean = [...name]
    .filter((character) => !isControlCharacter(character))
    .join('')
    .trim()
    .slice(0, DOCUMENT_SOURCE_MAX_CHARS);
  return clean === '' ? 'upload' : clean;
}

const MIB = 1024 * 1024;

function tooLargeMessage(maxBytes: number): string {
  const mib = maxBytes % MIB === 0 ? `${maxBytes / MIB} MiB, ` : '';
  return `the file is larger than the upload limit (${mib}${maxBytes} bytes)`;
}

function badRequest(message: string): HttpError {
  return new HttpError('bad_request', message);
}

// Reads the form part by part as it arrives: the file goes straight into the blob store (never
// whole in memory, cut at maxBytes + 1 with a 413), the title is kept. Refused, at the first
// problem and with nothing left in the bucket: a form without the file, a part it does not take,
// a second file, an empty file, a malformed body, a client that goes away.
export async function receiveUpload(
  req: Request,
  options: ReceiveUploadOptions,
): Promise<ReceivedUpload> {
  const blob = randomUUID();
  let stored: Promise<{ size: number }> | undefined;
  try {
    const form = await readForm(req, options, blob, (put) => {
      stored = put;
    });
    if (!form.file || !stored) {
      throw badRequest(`expected a file in the form field \`${FILE_FIELD}\``);
    }
    const { size } = await stored;
    if (size === 0) throw badRequest('the file is empty');
    return { blob, ...form.file, size, title: form.title };
  } catch (error) {
    // A put cut short by the failure settles first, so the delete finds what it wrote.
    await stored?.catch(() => undefined);
    await options.store.delete(blob).catch(() => undefined);
    // The blob store's refusal, in the words of an upload.
    if (isBusError(error) && error.code === 'payload_too_large') {
      throw new HttpError('payload_too_large', tooLargeMessage(options.maxBytes));
    }
    throw error;
  }
}

type Form = {
  file: { filename: string; declaredType: string | undefined } | undefined;
  title: string | undefined;
};

function readForm(
  req: Request,
  options: ReceiveUploadOptions,
  blob: string,
  onPut: (put: Promise<{ size: number }>) => void,
): Promise<Form> {
  return new Promise<Form>((resolve, reject) => {
    const form: Form = { file: undefined, title: undefined };
    let fileStream: Readable | undefined;
    let isSettled = false;
    const fail = (error: Error) => {
      if (isSettled) return;
      isSettled = true;
      req.unpipe(parser);
      // Ends the put reading from it, which then purges what it wrote.
      fileStream?.destroy(error);
      reject(error);
    };

    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        // Browsers send file names as UTF-8.
        defParamCharset: 'utf8',
        // busboy tells of a part past these as it begins: a third part is always one of them.
        limits: { files: 1, fields: 1, fieldSize: TITLE_MAX_BYTES },
      });
    } catch {
      reject(badRequest('expected multipart/form-data with a boundary'));
      return;
    }

    parser.on('file', (name, stream, info) => {
      // Its errors reach the put reading it (or nobody, for a part that is thrown away); an
      // error event with no listener would end the process.
      stream.on('error', () => undefined);
      if (name !== FILE_FIELD) {
        stream.resume();
        fail(
          badRequest(
            `the form takes the fields \`${FILE_FIELD}\` and \`${TITLE_FIELD}\`, not \`${name}\``,
          ),
        );
        return;
      }
      fileStream = stream;
      form.file = {
        filename: cleanFilename(info.filename ?? ''),
        declaredType: UNDECLARED_TYPES.has(info.mimeType) ? undefined : info.mimeType,
      };
      const put = options.store.put(blob, stream, { maxBytes: options.maxBytes });
      onPut(put);
      put.catch((error: unknown) => {
        fail(error instanceof Error ? error : new Error(String(error)));
      });
    });
    parser.on('field', (name, value, info) => {
      if (name === FILE_FIELD) {
        fail(
          badRequest(`\`${FILE_FIELD}\` must be a file part (with a filename), not a text field`),
        );
      } else if (name !== TITLE_FIELD) {
        fail(
          badRequest(
            `the form takes the fields \`${FILE_FIELD}\` and \`${TITLE_FIELD}\`, not \`${name}\``,
          ),
        );
      } else if (info.valueTruncated) {
        fail(badRequest(`title: must be at most ${DOCUMENT_TITLE_MAX_CHARS} characters`));
      } else {
        form.title = value;
      }
    });
    parser.on('filesLimit', () => fail(badRequest('the form takes one file')));
    parser.on('fieldsLimit', () => fail(badRequest(`the form takes one \`${TITLE_FIELD}\``)));
    parser.on('error', (error: unknown) => {
      const reason = error instanceof Error ? `: ${error.message}` : '';
      fail(badRequest(`malformed multipart/form-data${reason}`));
    });
    parser.on('close', () => {
      if (isSettled) return;
      isSettled = true;
      resolve(form);
    });
    // A client that goes away mid-body leaves the parser waiting for the rest for ever.
    req.on('close', () => {
      if (!req.complete) fail(badRequest('the upload did not finish'));
    });
    req.pipe(parser);
  });
}

// Longest a refused upload's rest is read (and thrown away) before the answer goes out.
const DISCARD_MAX_MS = 5_000;

// Reads what is left of a refused request's body, within limits, and drops it. Answering while
// the client is still sending and then closing makes the kernel reset the connection, which can
// discard the answer before the client reads it: the client would see a broken connection
// instead of the 413 or 400 that says why.
export async function discardRestOf(req: Request, maxBytes: number): Promise<void> {
  if (req.complete || req.destroyed) return;
  await new Promise<void>((resolve) => {
    let discarded = 0;
    const done = () => {
      clearTimeout(timer);
      req.off('data', count);
      req.off('end', done);
      req.off('close', done);
      resolve();
    };
    const count = (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > maxBytes) done();
    };
    const timer = setTimeout(done, DISCARD_MAX_MS);
    req.on('data', count);
    req.on('end', done);
    req.on('close', done);
    req.resume();
  });
}

// Has the tools service extract the upload's text and memory keep it as the user's document.
export function importUpload(
  bus: Bus,
  userId: string,
  upload: ReceivedUpload,
): Promise<MemoryDocumentsIngestResponse> {
  return bus.request(
    toolsDocumentsImport,
    {
      userId,
      upload: upload.blob,
      filename: upload.filename,
      ...(upload.declaredType === undefined ? {} : { declaredType: upload.declaredType }),
      ...(upload.title === undefined ? {} : { title: upload.title }),
    },
    { timeoutMs: IMPORT_TIMEOUT_MS },
  );
}

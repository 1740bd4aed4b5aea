import { extname } from 'node:path';
import { Worker } from 'node:worker_threads';
import { BusError } from '@jarvis/bus';
import { DOCX_MEDIA_TYPE, type DocumentContentType, PDF_MEDIA_TYPE } from '@jarvis/contracts';
import { Parser } from 'htmlparser2';
import type { ExtractJob, ExtractReply } from './extract-worker';

export type ExtractedDocument = {
  mediaType: DocumentContentType;
  // PDF info Title, DOCX core title, HTML <title>.
  title?: string;
  // PDFs: the page count.
  pages?: number;
  // PDF/DOCX: plain text; HTML, Markdown and plain text: the decoded source.
  text: string;
  // PDFs: where in `text` each page begins (the first is 0).
  pageStarts?: number[];
};

export type ExtractLimits = {
  // Pages a PDF may have; more is refused before any page is read.
  maxPages: number;
  // Longest a PDF or DOCX is read before the worker is ended.
  timeoutMs: number;
  // The worker's heap (V8 old generation).
  memoryMb: number;
  // Characters of text a document may yield.
  maxTextChars: number;
  // Bytes a DOCX may unpack to, all its entries together.
  maxUnzippedBytes: number;
};

type Kind = 'pdf' | 'zip' | 'text' | 'binary';
// What the bytes are; text comes decoded.
type Sniffed = { kind: Exclude<Kind, 'text'> } | { kind: 'text'; text: string };

type Claim = { mediaType: DocumentContentType; said: string } | { unsupported: string } | undefined;

// The types a client may say a file is, as browsers and tools name them.
const DECLARED: Record<string, DocumentContentType> = {
  'application/pdf': PDF_MEDIA_TYPE,
  'application/x-pdf': PDF_MEDIA_TYPE,
  [DOCX_MEDIA_TYPE]: DOCX_MEDIA_TYPE,
  'text/html': 'text/html',
  'application/xhtml+xml': 'text/html',
  'text/markdown': 'text/markdown',
  'text/x-markdown': 'text/markdown',
  'text/plain': 'text/plain',
  'text/csv': 'text/plain',
  'application/json': 'text/plain',
};
// Says nothing about the content: the file's name is asked instead.
const GENERIC = new Set([
  '',
  'application/octet-stream',
  'binary/octet-stream',
  'application/unknown',
]);
const EXTENSIONS: Record<string, DocumentContentType> = {
  '.pdf': PDF_MEDIA_TYPE,
  '.docx': DOCX_MEDIA_TYPE,
  '.html': 'text/html',
  '.htm': 'text/html',
  '.xhtml': 'text/html',
  '.md': 'text/markdown',
  '.markdown': 'text/markdown',
  '.txt': 'text/plain',
  '.text': 'text/plain',
  '.csv': 'text/plain',
  '.json': 'text/plain',
  '.log': 'text/plain',
};
const KIND_NAMES: Record<Kind, string> = {
  pdf: 'a PDF',
  zip: 'a ZIP archive',
  text: 'text',
  binary: 'binary data that is none of PDF, DOCX or UTF-8 text',
};
const TYPE_NAMES: Record<DocumentContentType, string> = {
  'application/pdf': 'a PDF',
  [DOCX_MEDIA_TYPE]: 'a Word (DOCX) document',
  'text/html': 'HTML',
  'text/markdown': 'Markdown',
  'text/plain': 'plain text',
};
const SUPPORTED = 'PDF, DOCX, HTML, Markdown and plain text (UTF-8)';
// Acrobat finds the header within the first 1,024 bytes; pdf.js does too.
const PDF_HEADER_WINDOW = 1_024;
const PDF_MAGIC = Buffer.from('%PDF-', 'latin1');
const ZIP_MAGIC = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
const HTML_START = /^\s*(<!doctype\s+html|<html[\s>])/i;
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

// Reads a document's text. PDF and DOCX are parsed in a worker thread with a heap limit and a
// time limit; text formats are only checked (UTF-8, no NUL) and passed on as they are, for
// memory converts HTML and Markdown itself. The content decides what the file is: a declared
// type or a file name that says otherwise is refused, never believed.
export async function extractDocument(
  bytes: Uint8Array,
  input: { filename?: string; declaredType?: string },
  limits: ExtractLimits,
): Promise<ExtractedDocument> {
  if (bytes.byteLength === 0) throw new BusError('bad_request', 'The file is empty.');
  const claim = readClaim(input);
  if (claim && 'unsupported' in claim) {
    throw new BusError(
      'bad_request',
      `Files of type ${claim.unsupported} cannot be imported; only ${SUPPORTED} can.`,
    );
  }
  const sniffed = sniff(bytes);
  const mediaType = settleType(sniffed, claim);
  if (sniffed.kind === 'text') return readText(sniffed.text, mediaType, limits);
  const extracted = await withReadingSlot(() =>
    runWorker(
      {
        kind: mediaType === PDF_MEDIA_TYPE ? 'pdf' : 'docx',
        bytes,
        maxPages: limits.maxPages,
        maxTextChars: limits.maxTextChars,
        maxUnzippedBytes: limits.maxUnzippedBytes,
      },
      limits,
    ),
  );
  return { mediaType, ...extracted };
}

// What the client says the file is: its declared type, or else its name's extension.
function readClaim(input: { filename?: string; declaredType?: string }): Claim {
  const declared = (input.declaredType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (!GENERIC.has(declared)) {
    const mediaType = DECLARED[declared];
    return mediaType ? { mediaType, said: `declared as ${declared}` } : { unsupported: declared };
  }
  const extension = extname(input.filename ?? '').toLowerCase();
  const mediaType = EXTENSIONS[extension];
  return mediaType ? { mediaType, said: `named ${input.filename}` } : undefined;
}

// A PDF starts with its header, or (as Acrobat and pdf.js allow) has it within the first 1,024
// bytes after some junk; but text that merely mentions "%PDF-" near its start is text.
function sniff(bytes: Uint8Array): Sniffed {
  const head = Buffer.from(
    bytes.buffer,
    bytes.byteOffset,
    Math.min(bytes.byteLength, PDF_HEADER_WINDOW),
  );
  if (head.subarray(0, PDF_MAGIC.length).equals(PDF_MAGIC)) return { kind: 'pdf' };
  if (head.subarray(0, ZIP_MAGIC.length).equals(ZIP_MAGIC)) return { kind: 'zip' };
  const text = decodeText(bytes);
  if (text !== undefined) return { kind: 'text', text };
  return { kind: head.indexOf(PDF_MAGIC) === -1 ? 'binary' : 'pdf' };
}

// UTF-8 without NUL, its BOM dropped (ignoreBOM: false); undefined for anything else.
function decodeText(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

function settleType(sniffed: Sniffed, claim: Claim): DocumentContentType {
  const claimed = claim && 'mediaType' in claim ? claim : undefined;
  switch (sniffed.kind) {
    case 'binary':
      throw new BusError(
        'bad_request',
        claimed
          ? `The file is ${claimed.said} but its content is not ${TYPE_NAMES[claimed.mediaType]}: only ${SUPPORTED} can be imported.`
          : `The file's content is ${KIND_NAMES.binary}: only ${SUPPORTED} can be imported.`,
      );
    case 'text':
      // Unnamed text that starts as an HTML document is HTML; named text is what its name says.
      if (!claimed) return HTML_START.test(sniffed.text) ? 'text/html' : 'text/plain';
      if (isTextType(claimed.mediaType)) return claimed.mediaType;
      throw mismatch(claimed, sniffed.kind);
    default: {
      // A ZIP is taken for a DOCX until the worker finds no word/document.xml in it.
      const found = sniffed.kind === 'pdf' ? PDF_MEDIA_TYPE : DOCX_MEDIA_TYPE;
      if (claimed && claimed.mediaType !== found) throw mismatch(claimed, sniffed.kind);
      return found;
    }
  }
}

function isTextType(mediaType: DocumentContentType): boolean {
  return mediaType === 'text/plain' || mediaType === 'text/markdown' || mediaType === 'text/html';
}

function mismatch(claimed: { mediaType: DocumentContentType; said: string }, kind: Kind): BusError {
  return new BusError(
    'bad_request',
    `The file is ${claimed.said} but its content is ${KIND_NAMES[kind]}, not ${TYPE_NAMES[claimed.mediaType]}.`,
  );
}

function readText(
  text: string,
  mediaType: DocumentContentType,
  limits: ExtractLimits,
): ExtractedDocument {
  if (text.trim() === '') throw new BusError('bad_request', 'The file has no text.');
  if (text.length > limits.maxTextChars) {
    throw new BusError(
      'payload_too_large',
      `The document has more than ${limits.maxTextChars.toLocaleString('en')} characters of text; split it into smaller files.`,
    );
  }
  const title = mediaType === 'text/html' ? readHtmlTitle(text) : undefined;
  return { mediaType, text, ...(title === undefined ? {} : { title }) };
}

function readHtmlTitle(html: string): string | undefined {
  let depth = 0;
  let title: string | undefined;
  let collected = '';
  const parser = new Parser(
    {
      onopentag(name) {
        if (name === 'title' && title === undefined) depth += 1;
      },
      ontext(text) {
        if (depth > 0) collected += text;
      },
      onclosetag(name) {
        if (name !== 'title' || depth === 0) return;
        depth = 0;
        title = collected;
      },
    },
    { decodeEntities: true },
  );
  parser.write(html);
  parser.end();
  const line = (title ?? '').replace(/\s+/g, ' ').trim().slice(0, 300);
  return line === '' ? undefined : line;
}

type Extracted = Omit<ExtractedDocument, 'mediaType'>;

// Documents read at once in this process, and how many more may wait for a turn. Each worker may
// use its whole heap limit, so this bounds what uploads take from the service (which runs the
// browser too) to twice DOCUMENT_EXTRACT_MEMORY_MB; and a longer queue would keep an upload
// waiting past the gateway's patience, to be stored after its user was told it failed.
const MAX_READING = 2;
const MAX_WAITING = 2;
let reading = 0;
const waiting: (() => void)[] = [];

async function withReadingSlot<T>(work: () => Promise<T>): Promise<T> {
  if (reading < MAX_READING) {
    reading += 1;
  } else if (waiting.length < MAX_WAITING) {
    // The slot is handed over by the reading that ends, still counted.
    await new Promise<void>((resolve) => waiting.push(resolve));
  } else {
    throw new BusError(
      'unavailable',
      'Other documents are being read right now; try again in a minute.',
    );
  }
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else reading -= 1;
  }
}

// Under the tests this module is TypeScript and so is its worker, which tsx then loads through
// extract-worker-source.mjs; in the image both are bundled JavaScript side by side in dist/
// (tsup.config.ts).
const WORKER_URL = new URL(
  import.meta.url.endsWith('.ts') ? './extract-worker-source.mjs' : './extract-worker.js',
  import.meta.url,
);

function runWorker(job: ExtractJob, limits: ExtractLimits): Promise<Extracted> {
  // A copy the worker owns: the caller's bytes may be a slice of a larger buffer it reuses.
  const bytes = new Uint8Array(job.bytes);
  const worker = new Worker(WORKER_URL, {
    workerData: { ...job, bytes },
    transferList: [bytes.buffer],
    resourceLimits: { maxOldGenerationSizeMb: limits.memoryMb },
    stdout: false,
    stderr: false,
  });
  return new Promise<Extracted>((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      outcome();
      void worker.terminate();
    };
    const timer = setTimeout(() => {
      settle(() =>
        reject(
          new BusError(
            'bad_request',
            `Reading the document took longer than ${formatSeconds(limits.timeoutMs)}; it is too large or too complex to import.`,
          ),
        ),
      );
    }, limits.timeoutMs);
    worker.on('message', (reply: ExtractReply) => {
      settle(() => {
        if (reply.ok) {
          const { ok: _ok, ...extracted } = reply;
          resolve(extracted);
        } else {
          reject(new BusError(reply.code, reply.message));
        }
      });
    });
    worker.on('error', (error: Error & { code?: string }) => {
      settle(() =>
        reject(
          error.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? new BusError(
                'bad_request',
                `Reading the document needed more than ${limits.memoryMb} MB of memory; it is too large or too complex to import.`,
              )
            : new BusError('internal', `Reading the document failed: ${error.message}`),
        ),
      );
    });
    worker.on('exit', (code) => {
      settle(() =>
        reject(
          new BusError(
            'internal',
            `The document reader stopped (exit code ${code}) without an answer.`,
          ),
        ),
      );
    });
  });
}

function formatSeconds(ms: number): string {
  return ms % 1_000 === 0 ? `${ms / 1_000} s` : `${ms} ms`;
}

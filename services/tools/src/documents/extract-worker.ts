// Reads the text of one PDF or DOCX, in a worker thread that extract.ts starts with a heap
// limit and ends when its time is up: parsers of untrusted files run here, away from the
// service's own heap and event loop.
//
// This file imports npm packages only, never a relative or workspace module: under the tests it
// runs through tsx as a .ts file, in the image as its own tsup entry (dist/extract-worker.js),
// and either way it must load without the service's module resolution.
import { parentPort, workerData } from 'node:worker_threads';
import mammoth from 'mammoth';
import { getDocumentProxy } from 'unpdf';
import yauzl from 'yauzl';

export type ExtractJob = {
  kind: 'pdf' | 'docx';
  bytes: Uint8Array;
  maxPages: number;
  maxTextChars: number;
  maxUnzippedBytes: number;
};

export type ExtractReply =
  | { ok: true; title?: string; pages?: number; text: string; pageStarts?: number[] }
  | { ok: false; code: 'bad_request' | 'payload_too_large'; message: string };

// What a user's document is refused for; extract.ts turns it into a BusError.
class Refusal extends Error {
  readonly code: 'bad_request' | 'payload_too_large';

  constructor(code: 'bad_request' | 'payload_too_large', message: string) {
    super(message);
    this.code = code;
  }
}

// A page break in the text: memory's chunker splits on blank lines first, so a chunk seldom
// spans two pages.
const PAGE_SEPARATOR = '\n\n';
// Word documents hold tens to a few hundred parts (XML, images); tens of thousands is a bomb
// of entries, each costing a header parse and a stream.
const MAX_ZIP_ENTRIES = 10_000;
// Real DOCX XML deflates about 5 to 30 to 1; an entry of over 1 MiB packed 1,000 to 1 is made
// to blow up, whatever the total limit says.
const MAX_ZIP_RATIO = 1_000;
const RATIO_FLOOR_BYTES = 1 << 20;
const CORE_PROPERTIES = 'docProps/core.xml';
const MAIN_DOCUMENT = 'word/document.xml';
// C0 controls other than tab and newline, and DEL: Postgres refuses NUL in text, and the rest
// are font-mapping debris that only confuses search.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its job
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000b-\u001f\u007f]/g;

async function extract(job: ExtractJob): Promise<ExtractReply> {
  try {
    const result = job.kind === 'pdf' ? await extractPdf(job) : await extractDocx(job);
    return { ok: true, ...result };
  } catch (error) {
    if (error instanceof Refusal) return { ok: false, code: error.code, message: error.message };
    throw error;
  }
}

async function extractPdf(job: ExtractJob) {
  // Not destroyed when done: the worker is ended once it has answered, and all with it.
  const pdf = await openPdf(job.bytes);
  // Counted from the page tree's root before any page is read: a 10,000-page PDF is refused
  // in milliseconds, not after reading 2,000 pages of it.
  if (pdf.numPages > job.maxPages) {
    throw new Refusal(
      'payload_too_large',
      `The PDF has ${pdf.numPages} pages; at most ${job.maxPages} can be imported.`,
    );
  }
  const title = await readPdfTitle(pdf);
  const pageStarts: number[] = [];
  const texts: string[] = [];
  let length = 0;
  for (let number = 1; number <= pdf.numPages; number += 1) {
    const pageText = await readPdfPage(pdf, number);
    pageStarts.push(length);
    texts.push(pageText);
    length += pageText.length + PAGE_SEPARATOR.length;
    if (length > job.maxTextChars) throw tooMuchText(job.maxTextChars);
  }
  const text = texts.join(PAGE_SEPARATOR);
  if (text.trim() === '') {
    throw new Refusal(
      'bad_request',
      'The PDF has no text to read: it may be scanned images, and text in images is not recognised.',
    );
  }
  return { ...(title === undefined ? {} : { title }), pages: pdf.numPages, text, pageStarts };
}

async function openPdf(bytes: Uint8Array) {
  try {
    // Errors only: pdf.js warns on the console about every odd font, once per page.
    return await getDocumentProxy(bytes, { verbosity: 0 });
  } catch (error) {
    const name = error instanceof Error ? error.name : '';
    if (name === 'PasswordException') {
      throw new Refusal(
        'bad_request',
        'The PDF is protected by a password; remove the password and upload it again.',
      );
    }
    throw new Refusal('bad_request', `The PDF is damaged and cannot be read (${describe(error)}).`);
  }
}

type PdfDocument = Awaited<ReturnType<typeof getDocumentProxy>>;

async function readPdfTitle(pdf: PdfDocument): Promise<string | undefined> {
  try {
    const { info } = await pdf.getMetadata();
    const title: unknown =
      typeof info === 'object' && info !== null ? Reflect.get(info, 'Title') : undefined;
    return typeof title === 'string' ? oneLine(title) : undefined;
  } catch {
    // A damaged info dictionary costs the title, not the document.
    return undefined;
  }
}

async function readPdfPage(pdf: PdfDocument, number: number): Promise<string> {
  try {
    const page = await pdf.getPage(number);
    const content = await page.getTextContent();
    page.cleanup();
    let text = '';
    for (const item of content.items) {
      if ('str' in item) text += item.str + (item.hasEOL ? '\n' : '');
    }
    return tidy(text);
  } catch (error) {
    throw new Refusal(
      'bad_request',
      `The PDF is damaged: page ${number} cannot be read (${describe(error)}).`,
    );
  }
}

async function extractDocx(job: ExtractJob) {
  const buffer = Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength);
  // Everything is unpacked once here, within the limits, before mammoth unpacks it again
  // without any: a bomb stops at the limit instead of filling the heap.
  const core = await checkZip(buffer, job.maxUnzippedBytes);
  let value: string;
  try {
    ({ value } = await mammoth.extractRawText({ buffer }));
  } catch (error) {
    throw new Refusal(
      'bad_request',
      `The DOCX is damaged and cannot be read (${describe(error)}).`,
    );
  }
  const text = tidy(value);
  if (text.length > job.maxTextChars) throw tooMuchText(job.maxTextChars);
  if (text === '') throw new Refusal('bad_request', 'The DOCX has no text to read.');
  const title = core === undefined ? undefined : readCoreTitle(core);
  return { ...(title === undefined ? {} : { title }), text };
}

// Walks the archive's entries and unpacks each: counts the entries, adds up the sizes their
// headers declare, checks each one's ratio, and has yauzl end any entry that yields more than its
// header declared (so the declared total bounds what comes out). Answers docProps/core.xml, for
// the title.
function checkZip(buffer: Buffer, maxUnzippedBytes: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const tooBig = () =>
      new Refusal(
        'payload_too_large',
        `The DOCX unpacks to more than ${formatBytes(maxUnzippedBytes)}; it looks like a zip bomb.`,
      );
    const fail = (error: unknown) => {
      if (error instanceof Refusal) reject(error);
      // yauzl's words for an entry that yields more than its header declared.
      else if (describe(error).startsWith('too many bytes in the stream')) {
        reject(
          new Refusal(
            'payload_too_large',
            'The DOCX unpacks to more than its headers declare; it looks like a zip bomb.',
          ),
        );
      } else {
        reject(
          new Refusal(
            'bad_request',
            `The DOCX is damaged and cannot be read (${describe(error)}).`,
          ),
        );
      }
    };
    yauzl.fromBuffer(
      buffer,
      { lazyEntries: true, validateEntrySizes: true, strictFileNames: false },
      (openError, zip) => {
        if (openError || !zip) {
          fail(openError);
          return;
        }
        if (zip.entryCount > MAX_ZIP_ENTRIES) {
          fail(
            new Refusal(
              'payload_too_large',
              `The DOCX holds ${zip.entryCount} files; a Word document has far fewer (at most ${MAX_ZIP_ENTRIES} are read).`,
            ),
          );
          return;
        }
        let declared = 0;
        let hasMainDocument = false;
        let core: string | undefined;
        zip.on('error', fail);
        zip.on('end', () => {
          if (!hasMainDocument) {
            fail(
              new Refusal(
                'bad_request',
                'The file is a ZIP archive but not a Word (DOCX) document.',
              ),
            );
            return;
          }
          resolve(core);
        });
        zip.on('entry', (entry: yauzl.Entry) => {
          declared += entry.uncompressedSize;
          if (declared > maxUnzippedBytes) {
            zip.close();
            fail(tooBig());
            return;
          }
          if (
            entry.uncompressedSize > RATIO_FLOOR_BYTES &&
            entry.uncompressedSize > MAX_ZIP_RATIO * Math.max(1, entry.compressedSize)
          ) {
            zip.close();
            fail(tooBig());
            return;
          }
          if (entry.fileName === MAIN_DOCUMENT) hasMainDocument = true;
          if (entry.fileName.endsWith('/')) {
            zip.readEntry();
            return;
          }
          zip.openReadStream(entry, (streamError, stream) => {
            if (streamError || !stream) {
              fail(streamError);
              return;
            }
            const keep = entry.fileName === CORE_PROPERTIES ? ([] as Buffer[]) : undefined;
            stream.on('data', (chunk: Buffer) => keep?.push(chunk));
            stream.on('error', fail);
            stream.on('end', () => {
              if (keep) core = Buffer.concat(keep).toString('utf8');
              zip.readEntry();
            });
          });
        });
        zip.readEntry();
      },
    );
  });
}

const XML_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
};

function readCoreTitle(core: string): string | undefined {
  const match = /<dc:title(?:\s[^>]*)?>([^<]*)<\/dc:title>/.exec(core);
  if (!match?.[1]) return undefined;
  const decoded = match[1].replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (whole, name: string) => {
    if (name.startsWith('#x') || name.startsWith('#X'))
      return safeCodePoint(Number.parseInt(name.slice(2), 16), whole);
    if (name.startsWith('#')) return safeCodePoint(Number.parseInt(name.slice(1), 10), whole);
    return XML_ENTITIES[name] ?? whole;
  });
  return oneLine(decoded);
}

function safeCodePoint(code: number, fallback: string): string {
  return Number.isInteger(code) && code > 0 && code <= 0x10ffff
    ? String.fromCodePoint(code)
    : fallback;
}

// Text as memory keeps it: no control characters, runs of spaces made one, no space at a line's
// end, at most one blank line in a row.
function tidy(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(CONTROL_CHARACTERS, '')
    .replace(/[ \t\u00a0]+/g, ' ')
    .replace(/ ?\n ?/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

// A title as memory takes it: one line, not empty, at most 300 characters.
function oneLine(text: string): string | undefined {
  const line = text.replace(CONTROL_CHARACTERS, ' ').replace(/\s+/g, ' ').trim().slice(0, 300);
  return line === '' ? undefined : line;
}

function tooMuchText(maxTextChars: number): Refusal {
  return new Refusal(
    'payload_too_large',
    `The document has more than ${maxTextChars.toLocaleString('en')} characters of text; split it into smaller files.`,
  );
}

function formatBytes(bytes: number): string {
  return bytes >= 1 << 20 ? `${Math.round(bytes / (1 << 20))} MiB` : `${bytes} bytes`;
}

// The parser's own words, for whoever reads the answer closely: its first line, shortened.
function describe(error: unknown): string {
  const message = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
  return message.length > 160 ? `${message.slice(0, 160)}...` : message;
}

// An exception here is a bug, not the user's file: it ends the worker with an error that
// extract.ts reports as internal.
const job: ExtractJob = workerData;
void extract(job).then((reply) => parentPort?.postMessage(reply));

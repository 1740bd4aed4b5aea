import { readFile } from 'node:fs/promises';
import { crc32, deflateRawSync, constants as zlibConstants } from 'node:zlib';
import { Document, Packer, Paragraph, TextRun } from 'docx';
import { PDFDocument, StandardFonts } from 'pdf-lib';

type MakePdfOptions = {
  // One string per page (lines split on \n), or a page count: each page then says "Page N of M"
  // (or nothing, with `blank`: a 10,000-page PDF is generated in half the time).
  pages: string[] | number;
  title?: string;
  blank?: boolean;
};

const PAGE_SIZE: [number, number] = [595, 842];
const FONT_SIZE = 11;
const MARGIN = 56;

// A real PDF, written by pdf-lib. Standard fonts only encode WinAnsi (Latin-1 and a few more):
// text outside it throws here rather than making a PDF that reads differently.
export async function makePdf(options: MakePdfOptions): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  if (options.title !== undefined) doc.setTitle(options.title);
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const texts =
    typeof options.pages === 'number'
      ? pageNumbers(options.pages, options.blank === true)
      : options.pages;
  for (const text of texts) {
    const page = doc.addPage(PAGE_SIZE);
    if (text === '') continue;
    page.drawText(text, {
      x: MARGIN,
      y: PAGE_SIZE[1] - MARGIN,
      size: FONT_SIZE,
      lineHeight: FONT_SIZE * 1.4,
      font,
    });
  }
  return doc.save();
}

function pageNumbers(count: number, blank: boolean): string[] {
  return Array.from({ length: count }, (_, index) =>
    blank ? '' : `Page ${index + 1} of ${count}`,
  );
}

type MakeDocxOptions = { paragraphs: string[]; title?: string };

// A real DOCX, written by the docx package; `title` goes to its core properties (dc:title).
export async function makeDocx(options: MakeDocxOptions): Promise<Uint8Array> {
  const doc = new Document({
    ...(options.title === undefined ? {} : { title: options.title }),
    sections: [
      {
        children: options.paragraphs.map(
          (text) => new Paragraph({ children: [new TextRun(text)] }),
        ),
      },
    ],
  });
  return new Uint8Array(await Packer.toBuffer(doc));
}

// A PDF encrypted by qpdf with the user password "secret" (AES-256): it cannot be read
// without the password. Made once and committed, as no JavaScript library here encrypts.
export async function encryptedPdf(): Promise<Uint8Array> {
  return new Uint8Array(await readFile(new URL('../fixtures/encrypted.pdf', import.meta.url)));
}

// The same PDF encrypted with only an owner password (no copying, printing, ...): anyone may
// open it, as readers do without asking, so its text can be read.
export async function ownerPasswordPdf(): Promise<Uint8Array> {
  return new Uint8Array(await readFile(new URL('../fixtures/owner-password.pdf', import.meta.url)));
}

type ZipEntry = {
  name: string;
  // The entry's content, or `repeat` copies of `unit` between `prefix` and `suffix` (built
  // without holding them all).
  data: Uint8Array | string | { unit: string; repeat: number; prefix?: string; suffix?: string };
  // What the headers claim the uncompressed size is; the real size if not given. A bomb that
  // lies about it passes a check that only reads the headers.
  declaredSize?: number;
};

const SECTOR = 1 << 20;
const DOCX_CONTENT_TYPES =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>';
const DOCX_RELS =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>';
const DOCX_PARAGRAPH =
  '<w:p><w:r><w:t>All work and no play makes Jack a dull boy. </w:t></w:r></w:p>';

type DocxZipBombOptions = {
  // Bytes word/document.xml unzips to (default 1 GiB).
  unzippedBytes?: number;
  // The headers claim only this many bytes (default: the truth).
  declaredSize?: number;
};

// A DOCX whose word/document.xml is valid XML that unzips to `unzippedBytes` (1 GiB by
// default): deflate packs its repeated paragraph about 290 to 1 (1 GiB in 3.7 MB).
export function makeDocxZipBomb(options: DocxZipBombOptions = {}): Uint8Array {
  const unzipped = options.unzippedBytes ?? 1 << 30;
  const head =
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>';
  const tail = '</w:body></w:document>';
  const repeat = Math.max(
    1,
    Math.floor((unzipped - head.length - tail.length) / DOCX_PARAGRAPH.length),
  );
  return makeZip([
    { name: '[Content_Types].xml', data: DOCX_CONTENT_TYPES },
    { name: '_rels/.rels', data: DOCX_RELS },
    {
      name: 'word/document.xml',
      data: { unit: DOCX_PARAGRAPH, repeat, prefix: head, suffix: tail },
      ...(options.declaredSize === undefined ? {} : { declaredSize: options.declaredSize }),
    },
  ]);
}

// A DOCX with `count` entries besides its document (a bomb of many small files).
export function makeDocxWithEntries(count: number): Uint8Array {
  const entries: ZipEntry[] = [
    { name: '[Content_Types].xml', data: DOCX_CONTENT_TYPES },
    { name: '_rels/.rels', data: DOCX_RELS },
    {
      name: 'word/document.xml',
      data: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${DOCX_PARAGRAPH}</w:body></w:document>`,
    },
  ];
  for (let index = 0; index < count; index += 1) {
    entries.push({ name: `customXml/item${index}.xml`, data: '<a/>' });
  }
  return makeZip(entries);
}

// A ZIP archive (deflate, no zip64: every size under 4 GiB). The repeated content of an entry
// is compressed a 1 MiB block at a time, each block flushed so it stands alone; one block's
// bytes then serve every copy and a 1 GiB entry costs one block's deflate.
export function makeZip(entries: ZipEntry[]): Uint8Array {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const { compressed, size, crc } = deflateEntry(entry.data);
    const name = Buffer.from(entry.name, 'utf8');
    const declared = entry.declaredSize ?? size;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(8, 8); // deflate
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(compressed.length, 18);
    local.writeUInt32LE(declared, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(compressed.length, 20);
    central.writeUInt32LE(declared, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, compressed);
    centrals.push(central, name);
    offset += local.length + name.length + compressed.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return new Uint8Array(Buffer.concat([...locals, directory, end]));
}

function deflateEntry(data: ZipEntry['data']): { compressed: Buffer; size: number; crc: number } {
  if (typeof data === 'string' || data instanceof Uint8Array) {
    const raw = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data);
    return { compressed: deflateRawSync(raw), size: raw.length, crc: crc32(raw) };
  }
  const flush = { finishFlush: zlibConstants.Z_FULL_FLUSH };
  const parts: Buffer[] = [];
  let size = 0;
  let crc = 0;
  const add = (raw: Buffer) => {
    parts.push(deflateRawSync(raw, flush));
    size += raw.length;
    crc = crc32(raw, crc);
  };
  if (data.prefix) add(Buffer.from(data.prefix, 'utf8'));
  const perBlock = Math.max(1, Math.floor(SECTOR / data.unit.length));
  const block = Buffer.from(data.unit.repeat(Math.min(perBlock, data.repeat)), 'utf8');
  const blockBytes = deflateRawSync(block, flush);
  const blockCount = Math.floor(data.repeat / perBlock);
  for (let index = 0; index < blockCount; index += 1) {
    parts.push(blockBytes);
    size += block.length;
    crc = crc32(block, crc);
  }
  const rest = data.repeat - blockCount * perBlock;
  if (rest > 0) add(Buffer.from(data.unit.repeat(rest), 'utf8'));
  if (data.suffix) add(Buffer.from(data.suffix, 'utf8'));
  // An empty final block (fixed Huffman, end of block at once) closes the deflate stream.
  parts.push(Buffer.from([0x03, 0x00]));
  return { compressed: Buffer.concat(parts), size, crc };
}

import { deflateRawSync } from 'node:zlib';
import { DOCX_MEDIA_TYPE, PDF_MEDIA_TYPE } from '@jarvis/contracts';
import {
  encryptedPdf,
  makeDocx,
  makeDocxWithEntries,
  makeDocxZipBomb,
  makePdf,
  makeZip,
  ownerPasswordPdf,
} from '@jarvis/testkit';
import { describe, expect, it } from 'vitest';
import { type ExtractLimits, extractDocument } from './extract';

const LIMITS: ExtractLimits = {
  maxPages: 2_000,
  timeoutMs: 60_000,
  memoryMb: 512,
  maxTextChars: 2_000_000,
  maxUnzippedBytes: 200 * 1024 * 1024,
};

function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

describe('extractDocument: PDF', () => {
  it('reads each page and says where each begins in the text', async () => {
    const pages = [
      'Lisbon trip\nFly out on June 3.',
      'Hotel: Casa do Rio, two nights.',
      '',
      'Return flight on June 9.',
    ];
    const pdf = await makePdf({ pages, title: 'Summer plans' });

    const document = await extractDocument(pdf, { filename: 'plans.pdf' }, LIMITS);

    expect(document).toMatchObject({ mediaType: PDF_MEDIA_TYPE, title: 'Summer plans', pages: 4 });
    const starts = document.pageStarts ?? [];
    expect(starts).toHaveLength(4);
    expect(starts[0]).toBe(0);
    const pageText = (index: number) =>
      document.text.slice(starts[index], starts[index + 1] ?? document.text.length).trim();
    expect(pageText(0)).toBe('Lisbon trip\nFly out on June 3.');
    expect(pageText(1)).toBe('Hotel: Casa do Rio, two nights.');
    expect(pageText(2)).toBe('');
    expect(pageText(3)).toBe('Return flight on June 9.');
    expect(starts.every((start, index) => index === 0 || start > (starts[index - 1] ?? 0))).toBe(
      true,
    );
  });

  it('believes the content, not a generic declared type', async () => {
    const pdf = await makePdf({ pages: ['Only page'] });

    const document = await extractDocument(
      pdf,
      { filename: 'scan', declaredType: 'application/octet-stream' },
      LIMITS,
    );

    expect(document).toMatchObject({ mediaType: PDF_MEDIA_TYPE, pages: 1, text: 'Only page' });
    expect(document.title).toBeUndefined();
  });

  it('refuses an encrypted PDF, saying it has a password', async () => {
    await expect(
      extractDocument(await encryptedPdf(), { filename: 'secret.pdf' }, LIMITS),
    ).rejects.toMatchObject({ code: 'bad_request', message: expect.stringMatching(/password/) });
  });

  it('reads a PDF encrypted with only an owner password, which opens without one', async () => {
    const document = await extractDocument(await ownerPasswordPdf(), { filename: 'r.pdf' }, LIMITS);

    expect(document).toMatchObject({
      mediaType: PDF_MEDIA_TYPE,
      title: 'Secret plan',
      text: 'Confidential plan\nThe launch code is in the drawer.',
    });
  });

  it('refuses a truncated PDF as damaged', async () => {
    const pdf = await makePdf({ pages: ['Some text', 'More text'] });

    await expect(
      extractDocument(pdf.subarray(0, 200), { filename: 'cut.pdf' }, LIMITS),
    ).rejects.toMatchObject({ code: 'bad_request', message: expect.stringMatching(/damaged/) });
  });

  it('refuses a PDF header followed by garbage as damaged', async () => {
    const bytes = utf8(`%PDF-1.7\n${'garbage '.repeat(500)}`);

    await expect(extractDocument(bytes, { filename: 'bad.pdf' }, LIMITS)).rejects.toMatchObject({
      code: 'bad_request',
      message: expect.stringMatching(/damaged/),
    });
  });

  it('refuses a 10,000-page PDF quickly, before reading its pages', async () => {
    const pdf = await makePdf({ pages: 10_000, blank: true });

    const started = performance.now();
    await expect(extractDocument(pdf, { filename: 'huge.pdf' }, LIMITS)).rejects.toMatchObject({
      code: 'payload_too_large',
      message: 'The PDF has 10000 pages; at most 2000 can be imported.',
    });
    expect(performance.now() - started).toBeLessThan(5_000);
  }, 60_000);

  it('refuses a PDF without text (scanned images)', async () => {
    const pdf = await makePdf({ pages: 3, blank: true });

    await expect(extractDocument(pdf, { filename: 'scan.pdf' }, LIMITS)).rejects.toMatchObject({
      code: 'bad_request',
      message: expect.stringMatching(/no text/),
    });
  });

  it('refuses a PDF with more text than the limit', async () => {
    const pdf = await makePdf({ pages: 50 });

    await expect(
      extractDocument(pdf, { filename: 'long.pdf' }, { ...LIMITS, maxTextChars: 200 }),
    ).rejects.toMatchObject({ code: 'payload_too_large', message: expect.stringMatching(/200/) });
  });

  it('ends a reading that takes longer than its time, when the time is up', async () => {
    // 2,000 pages take pdf.js seconds on any machine; 1 s is up well before.
    const pdf = await makePdf({ pages: 2_000 });

    const started = performance.now();
    await expect(
      extractDocument(pdf, { filename: 'slow.pdf' }, { ...LIMITS, timeoutMs: 1_000 }),
    ).rejects.toMatchObject({
      code: 'bad_request',
      message:
        'Reading the document took longer than 1 s; it is too large or too complex to import.',
    });
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(990);
    expect(elapsed).toBeLessThan(2_500);
  }, 60_000);
});

describe('extractDocument: many at once', () => {
  it('reads two documents at a time, lets two wait and turns the fifth away', async () => {
    const pdf = await makePdf({ pages: 20 });

    const outcomes = await Promise.allSettled(
      Array.from({ length: 5 }, () => extractDocument(pdf, { filename: 'a.pdf' }, LIMITS)),
    );

    const refused = outcomes.filter((outcome) => outcome.status === 'rejected');
    expect(refused).toEqual([
      {
        status: 'rejected',
        reason: expect.objectContaining({
          code: 'unavailable',
          message: 'Other documents are being read right now; try again in a minute.',
        }),
      },
    ]);
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(4);
    // The slots are all free again.
    await expect(extractDocument(pdf, { filename: 'a.pdf' }, LIMITS)).resolves.toMatchObject({
      pages: 20,
    });
  }, 60_000);
});

describe('extractDocument: DOCX', () => {
  it('reads the paragraphs and the title', async () => {
    const docx = await makeDocx({
      paragraphs: ['Minutes of the board', 'The budget was approved.'],
      title: 'Board minutes',
    });

    const document = await extractDocument(docx, { filename: 'minutes.docx' }, LIMITS);

    expect(document).toEqual({
      mediaType: DOCX_MEDIA_TYPE,
      title: 'Board minutes',
      text: 'Minutes of the board\n\nThe budget was approved.',
    });
  });

  it('refuses a zip bomb by the sizes its headers declare', async () => {
    const started = performance.now();
    await expect(
      extractDocument(makeDocxZipBomb(), { filename: 'bomb.docx' }, LIMITS),
    ).rejects.toMatchObject({
      code: 'payload_too_large',
      message: 'The DOCX unpacks to more than 200 MiB; it looks like a zip bomb.',
    });
    expect(performance.now() - started).toBeLessThan(5_000);
  }, 30_000);

  it('refuses a zip bomb whose headers lie about its size', async () => {
    const bomb = makeDocxZipBomb({ declaredSize: 10_000 });

    await expect(extractDocument(bomb, { filename: 'bomb.docx' }, LIMITS)).rejects.toMatchObject({
      code: 'payload_too_large',
      message: 'The DOCX unpacks to more than its headers declare; it looks like a zip bomb.',
    });
  }, 30_000);

  it('refuses a DOCX of tens of thousands of entries', async () => {
    await expect(
      extractDocument(makeDocxWithEntries(20_000), { filename: 'many.docx' }, LIMITS),
    ).rejects.toMatchObject({
      code: 'payload_too_large',
      message: expect.stringMatching(/20003 files/),
    });
  });

  it('refuses a DOCX that needs more memory than its worker has', async () => {
    // 40 MiB of paragraphs, within the unpacked limit: mammoth's tree of it is far over 64 MB.
    const docx = makeDocxZipBomb({ unzippedBytes: 40 << 20 });

    await expect(
      extractDocument(
        docx,
        { filename: 'big.docx' },
        { ...LIMITS, memoryMb: 64, maxTextChars: 1_000_000_000 },
      ),
    ).rejects.toMatchObject({
      code: 'bad_request',
      message:
        'Reading the document needed more than 64 MB of memory; it is too large or too complex to import.',
    });
  }, 60_000);

  it('does not expand XML entities (a billion laughs)', async () => {
    const entities = ['<!ENTITY lol0 "lol">'];
    for (let level = 1; level < 10; level += 1) {
      entities.push(`<!ENTITY lol${level} "${`&lol${level - 1};`.repeat(10)}">`);
    }
    const docx = makeZip([
      { name: '[Content_Types].xml', data: '<Types/>' },
      {
        name: 'word/document.xml',
        data: `<?xml version="1.0"?><!DOCTYPE w:document [${entities.join('')}]><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>`,
      },
    ]);

    await expect(extractDocument(docx, { filename: 'lol.docx' }, LIMITS)).rejects.toMatchObject({
      code: 'bad_request',
      message: expect.stringMatching(/^The DOCX is damaged/),
    });
  });

  it('refuses a ZIP archive that is not a Word document', async () => {
    const zip = makeZip([{ name: 'notes.txt', data: 'hello' }]);

    await expect(extractDocument(zip, { filename: 'notes.docx' }, LIMITS)).rejects.toMatchObject({
      code: 'bad_request',
      message: 'The file is a ZIP archive but not a Word (DOCX) document.',
    });
  });

  it('refuses a DOCX whose document is not XML', async () => {
    const docx = makeZip([
      { name: '[Content_Types].xml', data: '<Types/>' },
      { name: 'word/document.xml', data: deflateRawSync(Buffer.from('not xml')) },
    ]);

    await expect(extractDocument(docx, { filename: 'odd.docx' }, LIMITS)).rejects.toMatchObject({
      code: 'bad_request',
    });
  });
});

describe('extractDocument: text', () => {
  it('passes HTML on as it is, with its title', async () => {
    const html = '<!doctype html><title>Trip &amp; plans</title><p>Day one</p>';

    const document = await extractDocument(utf8(html), { filename: 'trip.html' }, LIMITS);

    expect(document).toEqual({ mediaType: 'text/html', title: 'Trip & plans', text: html });
  });

  it('takes Markdown and plain text by name or declared type, dropping a BOM', async () => {
    await expect(
      extractDocument(utf8('\uFEFF# Notes\n\nHello'), { filename: 'notes.md' }, LIMITS),
    ).resolves.toEqual({ mediaType: 'text/markdown', text: '# Notes\n\nHello' });
    await expect(
      extractDocument(utf8('a,b\n1,2'), { filename: 'x', declaredType: 'text/csv' }, LIMITS),
    ).resolves.toEqual({ mediaType: 'text/plain', text: 'a,b\n1,2' });
  });

  it('reads text that mentions a PDF header near its start as text', async () => {
    const markdown = '# File signatures\n\nA PDF begins with %PDF-1.7 and a ZIP with PK.';

    await expect(
      extractDocument(utf8(markdown), { filename: 'signatures.md' }, LIMITS),
    ).resolves.toEqual({ mediaType: 'text/markdown', text: markdown });
  });

  it('takes unnamed text that starts as an HTML document for HTML, named text for what it is called', async () => {
    const html = '<!DOCTYPE html><html><head><title>Page</title></head><body>Hi</body></html>';

    await expect(extractDocument(utf8(html), {}, LIMITS)).resolves.toEqual({
      mediaType: 'text/html',
      title: 'Page',
      text: html,
    });
    await expect(
      extractDocument(utf8(html), { filename: 'page-source.txt' }, LIMITS),
    ).resolves.toEqual({ mediaType: 'text/plain', text: html });
  });

  it('refuses text that is not UTF-8, or has NUL in it', async () => {
    const latin1 = Buffer.from('Caf\xe9 au lait', 'latin1');
    const utf16 = Buffer.from('\uFEFFhello', 'utf16le');

    for (const bytes of [latin1, utf16, utf8('a\u0000b')]) {
      await expect(extractDocument(bytes, { filename: 'notes.txt' }, LIMITS)).rejects.toMatchObject(
        { code: 'bad_request', message: expect.stringMatching(/not plain text/) },
      );
    }
  });

  it('refuses an empty file and a file of only white space', async () => {
    await expect(extractDocument(new Uint8Array(0), {}, LIMITS)).rejects.toMatchObject({
      code: 'bad_request',
      message: 'The file is empty.',
    });
    await expect(extractDocument(utf8(' \n\t'), {}, LIMITS)).rejects.toMatchObject({
      code: 'bad_request',
      message: 'The file has no text.',
    });
  });
});

describe('extractDocument: content that does not match its type', () => {
  it('refuses a PDF named or declared as something else', async () => {
    const pdf = await makePdf({ pages: ['text'] });

    await expect(extractDocument(pdf, { filename: 'a.docx' }, LIMITS)).rejects.toMatchObject({
      code: 'bad_request',
      message: 'The file is named a.docx but its content is a PDF, not a Word (DOCX) document.',
    });
    await expect(
      extractDocument(pdf, { filename: 'a.pdf', declaredType: 'text/plain' }, LIMITS),
    ).rejects.toMatchObject({
      code: 'bad_request',
      message: 'The file is declared as text/plain but its content is a PDF, not plain text.',
    });
  });

  it('refuses text named as a PDF, and a DOCX declared as a PDF', async () => {
    const docx = await makeDocx({ paragraphs: ['x'] });

    await expect(
      extractDocument(utf8('just text'), { filename: 'fake.pdf' }, LIMITS),
    ).rejects.toMatchObject({
      code: 'bad_request',
      message: 'The file is named fake.pdf but its content is text, not a PDF.',
    });
    await expect(
      extractDocument(docx, { filename: 'a.docx', declaredType: 'application/pdf' }, LIMITS),
    ).rejects.toMatchObject({
      code: 'bad_request',
      message: expect.stringMatching(/declared as application\/pdf but its content is a ZIP/),
    });
  });

  it('refuses an image, whatever it is called', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

    await expect(extractDocument(png, { filename: 'photo.pdf' }, LIMITS)).rejects.toMatchObject({
      code: 'bad_request',
      message: expect.stringMatching(/^The file is named photo.pdf but its content is not a PDF/),
    });
    await expect(
      extractDocument(png, { filename: 'photo.png', declaredType: 'image/png' }, LIMITS),
    ).rejects.toMatchObject({
      code: 'bad_request',
      message: expect.stringMatching(/^Files of type image\/png cannot be imported/),
    });
  });
});

import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { type Bus, openBlobStore } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import {
  type MemoryDocumentsIngestRequest,
  memoryDocumentsIngest,
  toolsDocumentsImport,
  UPLOADS_BUCKET,
  UPLOADS_TTL_MS,
} from '@jarvis/contracts';
import { makePdf } from '@jarvis/testkit';
import { z } from 'zod';
import { prepareBenchStack } from '../bench-stack';
import { RESULTS_DIR } from '../paths';
import { percentiles } from '../percentiles';

// `make bench` (documents): how fast the tools service reads the text of an uploaded PDF. The
// tools service runs as its own process from its main.ts, with production's limits; the bench
// puts a PDF made by pdf-lib in the uploads bucket, as the gateway does with an upload, and asks
// tools.documents.import for it, as the gateway does. Memory is a stand-in in the bench's
// process that answers memory.documents.ingest at once and notes when the request came: from
// the import's call to that moment is the extraction (the upload read back from the bucket, the
// worker thread started, every page read, the text sent), with nothing of memory's chunking and
// indexing in it. A 1-page PDF, run in turn with the long one, gives the fixed cost (the worker's
// start, the bucket), so the pages a second of the reading itself come out too.

const Settings = z.object({
  // A PostgreSQL server for the tools service's own tables; the bench makes a database of its
  // own there and drops it at the end. Without it, the embedded one.
  DATABASE_URL: z.string().url().optional(),
  // Pages of the long PDF, each about 2,800 characters of text in 40 lines.
  BENCH_PAGES: z.coerce.number().int().min(2).max(2_000).default(100),
  // Imports of each PDF measured, and run before measuring.
  BENCH_RUNS: z.coerce.number().int().min(1).default(10),
  BENCH_WARM_UP: z.coerce.number().int().min(0).default(2),
  // How the stack runs the tools service (the test kit's Stack reads it): from its TypeScript,
  // where tsx loads the worker too, or from its bundle, as the image does.
  JARVIS_STACK_RUN_FROM: z.enum(['source', 'build']).default('source'),
});
const settings = Settings.parse(process.env);
const RESULTS = resolve(RESULTS_DIR, 'documents.json');
const IMPORT_TIMEOUT_MS = 120_000;
const LINES_PER_PAGE = 40;
const WORDS = (
  'the budget for the next quarter was approved after a long discussion of travel costs ' +
  'hiring plans and the office move which the board asked to revisit in spring'
).split(' ');

// Prose-like lines of about 70 characters, different on every page as a real report's are.
function pageText(page: number): string {
  const lines: string[] = [];
  for (let line = 0; line < LINES_PER_PAGE; line += 1) {
    const words: string[] = [];
    for (let index = 0; words.join(' ').length < 66; index += 1) {
      words.push(WORDS[(page * 7 + line * 3 + index) % WORDS.length] ?? 'word');
    }
    lines.push(`${page + 1}.${line + 1} ${words.join(' ')}`);
  }
  return lines.join('\n');
}

type Arrival = { at: number; request: MemoryDocumentsIngestRequest };

const { database, namespace, stack } = await prepareBenchStack('bench-documents', ['tools']);
let bus: Bus | undefined;

try {
  const long = await makePdf({
    pages: Array.from({ length: settings.BENCH_PAGES }, (_, page) => pageText(page)),
    title: 'Quarterly report',
  });
  const short = await makePdf({ pages: [pageText(0)], title: 'One page' });
  await stack.start();
  bus = await connectTestBus(namespace);
  const connectedBus = bus;
  const uploads = await openBlobStore(connectedBus, UPLOADS_BUCKET, { ttlMs: UPLOADS_TTL_MS });

  // Memory's stand-in: notes when each ingest came, keyed by its source (the upload's file name).
  const arrivals = new Map<string, Arrival>();
  connectedBus.serve(memoryDocumentsIngest, (request) => {
    const source = request.source ?? '';
    arrivals.set(source, { at: performance.now(), request });
    const now = new Date().toISOString();
    const pages = request.pageStarts?.length;
    return Promise.resolve({
      document: {
        id: randomUUID(),
        title: request.title,
        contentType: request.contentType,
        mediaType: request.contentType,
        source,
        sizeChars: request.content?.length ?? 0,
        chunkCount: 0,
        chunks: 0,
        ...(pages === undefined ? {} : { pages }),
        metadata: {},
        createdAt: now,
      },
    });
  });

  const userId = randomUUID();
  // One import: milliseconds to memory's request (the extraction) and to the answer.
  const importOnce = async (pdf: Uint8Array, pages: number) => {
    const filename = `report-${randomUUID()}.pdf`;
    await uploads.put(filename, pdf);
    const started = performance.now();
    await connectedBus.request(
      toolsDocumentsImport,
      { userId, upload: filename, filename },
      { timeoutMs: IMPORT_TIMEOUT_MS },
    );
    const answered = performance.now();
    const arrival = arrivals.get(filename);
    arrivals.delete(filename);
    if (!arrival) throw new Error(`memory got no ingest for ${filename}`);
    if (arrival.request.pageStarts?.length !== pages) {
      throw new Error(
        `${filename}: ${arrival.request.pageStarts?.length ?? 'no'} page starts for ${pages} pages`,
      );
    }
    return { extractMs: arrival.at - started, importMs: answered - started };
  };

  for (let run = 0; run < settings.BENCH_WARM_UP; run += 1) {
    await importOnce(long, settings.BENCH_PAGES);
    await importOnce(short, 1);
  }
  const loadAtStart = loadavg().map((value) => Math.round(value * 100) / 100);
  const longRuns: number[] = [];
  const shortRuns: number[] = [];
  const longImports: number[] = [];
  // Turn by turn, so both meet the same moments of the machine's other load.
  for (let run = 0; run < settings.BENCH_RUNS; run += 1) {
    const longRun = await importOnce(long, settings.BENCH_PAGES);
    longRuns.push(longRun.extractMs);
    longImports.push(longRun.importMs);
    shortRuns.push((await importOnce(short, 1)).extractMs);
  }
  const round = (value: number) => Math.round(value * 10) / 10;
  const longFigures = percentiles(longRuns, round);
  const shortFigures = percentiles(shortRuns, round);
  const pagesPerSecond = round((settings.BENCH_PAGES / longFigures.p50) * 1_000);
  const readingPagesPerSecond = round(
    ((settings.BENCH_PAGES - 1) / (longFigures.p50 - shortFigures.p50)) * 1_000,
  );

  process.stdout.write(
    `PDF of ${settings.BENCH_PAGES} pages (${long.byteLength} bytes), ${settings.BENCH_RUNS} runs: ` +
      `extraction p50 ${longFigures.p50} ms, p95 ${longFigures.p95} ms: ${pagesPerSecond} pages/s\n` +
      `PDF of 1 page: extraction p50 ${shortFigures.p50} ms, p95 ${shortFigures.p95} ms (the fixed cost)\n` +
      `reading alone (the difference): ${readingPagesPerSecond} pages/s\n`,
  );

  const report = {
    date: new Date().toISOString(),
    runFrom: settings.JARVIS_STACK_RUN_FROM,
    loadAverageAtStart: loadAtStart,
    pages: settings.BENCH_PAGES,
    pdfBytes: long.byteLength,
    runs: settings.BENCH_RUNS,
    extractionMs: longFigures,
    importMs: percentiles(longImports, round),
    pagesPerSecond,
    onePageExtractionMs: shortFigures,
    readingPagesPerSecond,
  };
  await mkdir(RESULTS_DIR, { recursive: true });
  await writeFile(RESULTS, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`written to ${RESULTS}\n`);
} finally {
  await bus?.close();
  await stack.stop();
  await database.stop();
}

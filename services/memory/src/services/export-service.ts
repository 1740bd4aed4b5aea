import { BusError } from '@jarvis/bus';
import type {
  ExportRecord,
  ExportRecordType,
  MemoryExportPageRequest,
  MemoryExportPageResponse,
} from '@jarvis/contracts';
import { type Pool, type Queryable, withBatchTransaction } from '@jarvis/db';
import type { z } from 'zod';
import {
  type ExportPosition,
  type ExportQuery,
  type ExportRow,
  listConversationsForExport,
  listDocumentChunksForExport,
  listDocumentsForExport,
  listFactsForExport,
  listFilesForExport,
  listFileVersionsForExport,
  listInstructionsForExport,
  listMessagesForExport,
  listSummariesForExport,
} from '../repositories/export-repository';

type PageRequest = z.output<typeof MemoryExportPageRequest>;

// A page's records as JSON stay under this, well under NATS's 1 MB message limit; a single
// record larger than it still goes alone.
const PAGE_MAX_BYTES = 512 * 1_024;

const LISTERS: Record<
  ExportRecordType,
  (db: Queryable, query: ExportQuery) => Promise<ExportRow[]>
> = {
  instructions: listInstructionsForExport,
  conversation: listConversationsForExport,
  message: listMessagesForExport,
  summary: listSummariesForExport,
  fact: listFactsForExport,
  file: listFilesForExport,
  fileVersion: listFileVersionsForExport,
  document: listDocumentsForExport,
  documentChunk: listDocumentChunksForExport,
};

// Messages and summaries sort by their place in the conversation; the rest by time.
const SEQUENCE_ORDERED = new Set<ExportRecordType>(['message', 'summary']);
const SEQUENCE_KEY = /^\d{1,19}$/;
// `<sort key>_<id>_<index>`: the last record's position.
const CURSOR =
  /^(\d{1,19}|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6})_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})_(\d{1,9})$/;

function encodeCursor(position: ExportPosition): string {
  return `${position.key}_${position.id}_${position.index}`;
}

function decodeCursor(type: ExportRecordType, cursor: string): ExportPosition {
  const [, key, id, index] = CURSOR.exec(cursor) ?? [];
  if (!key || !id || !index || SEQUENCE_KEY.test(key) !== SEQUENCE_ORDERED.has(type)) {
    throw new BusError('bad_request', `after: not a cursor of a ${type} export`);
  }
  return { key, id, index: Number(index) };
}

// The user's records of one type after the cursor. One row more than the limit is read, to know
// whether another page follows.
export async function exportPage(
  pool: Pool,
  request: PageRequest,
): Promise<MemoryExportPageResponse> {
  const after = request.after === undefined ? undefined : decodeCursor(request.type, request.after);
  // A page of large files or chunks is batch work: the request timeout would cut it short.
  const rows = await withBatchTransaction(pool, (db) =>
    LISTERS[request.type](db, {
      userId: request.userId,
      after,
      limit: request.limit + 1,
      maxBytes: PAGE_MAX_BYTES,
    }),
  );
  const records: ExportRecord[] = [];
  let bytes = 0;
  let last: ExportPosition | undefined;
  for (const row of rows.slice(0, request.limit)) {
    if (!row.record) break;
    const size = Buffer.byteLength(JSON.stringify(row.record));
    if (records.length > 0 && bytes + size > PAGE_MAX_BYTES) break;
    records.push(row.record);
    bytes += size;
    last = row.position;
  }
  const isLastPage = records.length === rows.length;
  return isLastPage || !last ? { records } : { records, next: encodeCursor(last) };
}

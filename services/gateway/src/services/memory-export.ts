import type { Bus } from '@jarvis/bus';
import {
  EXPORT_FORMAT,
  EXPORT_VERSION,
  type ExportHeader,
  ExportRecordType,
  memoryExportPage,
} from '@jarvis/contracts';

// One page is at most 500 records or half a megabyte; this is generous for either.
const PAGE_TIMEOUT_MS = 30_000;

// The user's whole memory as JSON Lines, a page at a time, so no export is ever held whole. The
// header goes out with the first page: a memory service that is down fails the export before
// anything is sent.
export async function* exportMemoryLines(
  bus: Bus,
  userId: string,
  now = new Date(),
): AsyncGenerator<string> {
  const header: ExportHeader = {
    type: 'header',
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    exportedAt: now.toISOString(),
  };
  let pending = `${JSON.stringify(header)}\n`;
  for (const type of ExportRecordType.options) {
    let after: string | undefined;
    do {
      const page = await bus.request(
        memoryExportPage,
        { userId, type, ...(after === undefined ? {} : { after }) },
        { timeoutMs: PAGE_TIMEOUT_MS },
      );
      const lines = pending + page.records.map((record) => `${JSON.stringify(record)}\n`).join('');
      pending = '';
      if (lines.length > 0) yield lines;
      after = page.next;
    } while (after !== undefined);
  }
}

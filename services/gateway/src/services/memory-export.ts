import type { BlobStore, Bus } from '@jarvis/bus';
import {
  EXPORT_FORMAT,
  EXPORT_VERSION,
  type ExportedWorkspaceFile,
  type ExportHeader,
  ExportRecordType,
  memoryExportPage,
  toolsWorkspacesExportPage,
  type WorkspaceExportFile,
} from '@jarvis/contracts';
import { HttpError } from '@jarvis/service-kit';

// One page is at most 500 records or half a megabyte; this is generous for either.
const PAGE_TIMEOUT_MS = 30_000;
// A workspace page may read one file of the largest size out of Postgres into the uploads bucket.
const WORKSPACE_PAGE_TIMEOUT_MS = 60_000;

// The user's whole memory as JSON Lines, a page at a time, so no export is ever held whole. The
// header goes out with the first page, and the first page of workspace files is asked for before
// it: a memory or tools service that is down fails the export before anything is sent, rather
// than cutting it off after the memory's records.
export async function* exportMemoryLines(
  bus: Bus,
  userId: string,
  uploads: () => Promise<BlobStore>,
  now = new Date(),
): AsyncGenerator<string> {
  const header: ExportHeader = {
    type: 'header',
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    exportedAt: now.toISOString(),
  };
  const firstWorkspacePage = await workspacePage(bus, userId, undefined);
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
  yield* exportWorkspaceLines(bus, userId, uploads, firstWorkspacePage);
}

function workspacePage(bus: Bus, userId: string, after: string | undefined) {
  return bus.request(
    toolsWorkspacesExportPage,
    { userId, ...(after === undefined ? {} : { after }) },
    { timeoutMs: WORKSPACE_PAGE_TIMEOUT_MS },
  );
}

// The files of the user's workspaces, kept by the tools service, after the memory's records: a
// page's small files come inline, a large one through the uploads bucket, read and deleted here.
async function* exportWorkspaceLines(
  bus: Bus,
  userId: string,
  uploads: () => Promise<BlobStore>,
  firstPage: Awaited<ReturnType<typeof workspacePage>>,
): AsyncGenerator<string> {
  let page = firstPage;
  for (;;) {
    let lines = '';
    for (const file of page.files) {
      const content = 'blob' in file ? await takeBase64(uploads, file.blob) : file.content;
      lines += `${JSON.stringify(exportedWorkspaceFile(file, content))}\n`;
    }
    if (lines.length > 0) yield lines;
    if (page.next === undefined) return;
    page = await workspacePage(bus, userId, page.next);
  }
}

function exportedWorkspaceFile(file: WorkspaceExportFile, content: string): ExportedWorkspaceFile {
  const { kind, id, path, mediaType } = file;
  return { type: 'workspaceFile', kind, id, path, mediaType, content };
}

async function takeBase64(uploads: () => Promise<BlobStore>, blob: string): Promise<string> {
  const store = await uploads();
  try {
    const bytes = await store.get(blob);
    if (!bytes) throw new HttpError('unavailable', 'a workspace file could not be read; try again');
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  } finally {
    await store.delete(blob).catch(() => undefined);
  }
}

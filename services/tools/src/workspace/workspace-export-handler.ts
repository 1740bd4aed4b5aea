import { type BlobStore, type Bus, BusError } from '@jarvis/bus';
import {
  newWorkspaceBlobName,
  type ToolsWorkspacesExportPageRequest,
  type ToolsWorkspacesExportPageResponse,
  toolsWorkspacesExportPage,
  type WorkspaceExportFile,
  WorkspaceKind,
  WorkspacePath,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { z } from 'zod';
import {
  type ExportedWorkspaceFileRow,
  listWorkspaceFilesAfter,
  readWorkspaceFile,
  type WorkspaceFilePosition,
} from './workspace-repository';

// A page stays well under one NATS message (1 MiB by default): its inline bytes, base64, come to
// at most about half of one, and its paths and dates of this many files to a tenth.
const PAGE_MAX_FILES = 100;
const PAGE_INLINE_MAX_BYTES = 384 * 1_024;
// A file up to this size goes inline; a larger one by blob, alone at the end of its page, so the
// caller never holds more than one large file, and the bucket never more than one of an export.
const INLINE_FILE_MAX_BYTES = 128 * 1_024;

type WorkspaceExportHandlerDeps = { bus: Bus; pool: Pool; uploads: BlobStore };

const ExportPosition = z.tuple([WorkspaceKind, z.uuid(), WorkspacePath]);

function encodeCursor(position: WorkspaceFilePosition): string {
  return JSON.stringify([position.kind, position.id, position.path]);
}

function decodeCursor(cursor: string): WorkspaceFilePosition {
  let value: unknown;
  try {
    value = JSON.parse(cursor);
  } catch {
    value = undefined;
  }
  const parsed = ExportPosition.safeParse(value);
  if (!parsed.success) throw new BusError('bad_request', 'after: not a cursor of this export');
  const [kind, id, path] = parsed.data;
  return { kind, id, path };
}

function infoOf(row: ExportedWorkspaceFileRow) {
  const { kind, id, path, mediaType, size, updatedAt } = row;
  return { kind, id, path, mediaType, size, updatedAt };
}

// tools.workspaces.exportPage: the memory export's workspace files (GET /v1/memory/export).
export function registerWorkspaceExportHandler(deps: WorkspaceExportHandlerDeps) {
  return deps.bus.serve(toolsWorkspacesExportPage, (request) => exportPage(deps, request));
}

async function exportPage(
  deps: WorkspaceExportHandlerDeps,
  request: ToolsWorkspacesExportPageRequest,
): Promise<ToolsWorkspacesExportPageResponse> {
  const { pool, uploads } = deps;
  const { userId } = request;
  // One row past the page tells whether there is another.
  const rows = await listWorkspaceFilesAfter(pool, userId, {
    ...(request.after === undefined ? {} : { after: decodeCursor(request.after) }),
    limit: PAGE_MAX_FILES + 1,
    inlineMaxBytes: INLINE_FILE_MAX_BYTES,
  });
  const files: WorkspaceExportFile[] = [];
  let inlineBytes = 0;
  let looked = 0;
  for (const row of rows.slice(0, PAGE_MAX_FILES)) {
    if (row.content !== undefined) {
      if (files.length > 0 && inlineBytes + row.size > PAGE_INLINE_MAX_BYTES) break;
      looked += 1;
      inlineBytes += row.size;
      files.push({ ...infoOf(row), content: row.content.toString('base64') });
      continue;
    }
    looked += 1;
    const stored = await readWorkspaceFile(pool, userId, row, row.path);
    // Deleted since the listing: nothing to export.
    if (!stored) continue;
    const blob = newWorkspaceBlobName();
    await uploads.put(blob, stored.content);
    files.push({ ...infoOf(row), size: stored.size, mediaType: stored.mediaType, blob });
    break;
  }
  const last = rows[looked - 1];
  return looked < rows.length && last ? { files, next: encodeCursor(last) } : { files };
}

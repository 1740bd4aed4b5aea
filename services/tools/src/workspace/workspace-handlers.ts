import { type BlobStore, type Bus, BusError } from '@jarvis/bus';
import {
  newWorkspaceBlobName,
  type ToolsWorkspacesPutRequest,
  type ToolsWorkspacesPutResponse,
  toolsWorkspacesDelete,
  toolsWorkspacesGet,
  toolsWorkspacesList,
  toolsWorkspacesPut,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import type { Logger } from '@jarvis/telemetry';
import {
  deleteWorkspaceFile,
  listWorkspaceFiles,
  readWorkspaceFile,
  storeWorkspaceFile,
  WORKSPACE_MAX_FILES,
  workspaceUsage,
} from './workspace-repository';
import { mediaTypeOf, type WorkspaceLimits } from './workspace-sync';

export type WorkspaceHandlerDeps = {
  bus: Bus;
  pool: Pool;
  // The uploads bucket: file bodies cross it both ways, larger than one NATS message may be.
  uploads: BlobStore;
  limits: WorkspaceLimits;
  logger: Logger;
};

// tools.workspaces.*: the gateway's /v1/workspaces/{kind}/{id}/files. Another user's workspace
// reads as empty and its files as not_found, like files that never were.
export function registerWorkspaceHandlers(deps: WorkspaceHandlerDeps) {
  const { bus, pool, uploads, limits } = deps;
  return [
    bus.serve(toolsWorkspacesList, async ({ userId, kind, id }) => ({
      files: await listWorkspaceFiles(pool, userId, { kind, id }),
      usedBytes: await workspaceUsage(pool, userId),
      quotaBytes: limits.quotaBytes,
    })),
    // The gateway reads the object and deletes it; the bucket's time to live takes it if not.
    bus.serve(toolsWorkspacesGet, async ({ userId, kind, id, path }) => {
      const file = await readWorkspaceFile(pool, userId, { kind, id }, path);
      if (!file) throw new BusError('not_found', 'no such file in the workspace');
      const blob = newWorkspaceBlobName();
      await uploads.put(blob, file.content);
      return { blob, size: file.size, mediaType: file.mediaType };
    }),
    bus.serve(toolsWorkspacesPut, (request) => putFile(deps, request)),
    bus.serve(toolsWorkspacesDelete, async ({ userId, kind, id, path }) => {
      if (!(await deleteWorkspaceFile(pool, userId, { kind, id }, path))) {
        throw new BusError('not_found', 'no such file in the workspace');
      }
      return {};
    }),
  ];
}

// Reads the upload and stores it within the file limit and the user's quota. The upload is
// deleted whatever happens: stored or refused, it is not read again.
async function putFile(
  deps: WorkspaceHandlerDeps,
  request: ToolsWorkspacesPutRequest,
): Promise<ToolsWorkspacesPutResponse> {
  const { userId, kind, id, path } = request;
  const { limits } = deps;
  try {
    const bytes = await deps.uploads.get(request.blob);
    if (!bytes) {
      throw new BusError('not_found', 'The upload is gone (kept too long); send the file again.');
    }
    if (bytes.byteLength > limits.fileMaxBytes) {
      throw new BusError(
        'payload_too_large',
        `the file is larger than the limit of ${limits.fileMaxBytes} bytes for one file`,
      );
    }
    const stored = await storeWorkspaceFile(
      deps.pool,
      userId,
      { kind, id },
      {
        path,
        content: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
        mediaType: request.mediaType ?? mediaTypeOf(path),
      },
      limits.quotaBytes,
    );
    if (stored.outcome === 'over_quota') {
      throw new BusError(
        'payload_too_large',
        `the workspace quota of ${limits.quotaBytes} bytes has no room for it (${stored.usedBytes} used)`,
      );
    }
    if (stored.outcome === 'too_many_files') {
      throw new BusError(
        'payload_too_large',
        `the workspace holds ${WORKSPACE_MAX_FILES} files, the most it may: delete some first`,
      );
    }
    if (stored.outcome === 'conflict') {
      throw new BusError(
        'bad_request',
        `path: the workspace file ${stored.path} is in the way (a file cannot also be a folder)`,
      );
    }
    return { file: stored.file, created: stored.isCreated };
  } finally {
    await deps.uploads.delete(request.blob).catch((error: unknown) => {
      deps.logger.warn({ err: error, blob: request.blob }, 'could not delete an upload');
    });
  }
}

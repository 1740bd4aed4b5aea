import { MIMEType } from 'node:util';
import { type Bus, isBusError } from '@jarvis/bus';
import {
  type GatewayHandler,
  newWorkspaceBlobName,
  toolsWorkspacesDelete,
  toolsWorkspacesGet,
  toolsWorkspacesPut,
  WorkspaceFileParams,
} from '@jarvis/contracts';
import { HttpError } from '@jarvis/service-kit';
import type { Request, RequestHandler, Response } from 'express';
import type { z } from 'zod';
import { principalOf } from '../middleware/authenticate';
import { discardRestOf } from '../services/document-upload';
import { lazyUploadsBucket } from '../services/uploads-bucket';
import { parseBody } from './parse-body';

export type WorkspacesHandlersDeps = {
  bus: Bus;
  // WORKSPACE_FILE_MAX_MB, in bytes: the largest file PUT takes.
  workspaceFileMaxBytes: number;
};

type WorkspaceFileRef = z.output<typeof WorkspaceFileParams>;

// A file of the largest size goes through the uploads bucket and into (or out of) Postgres: more
// than a request's usual wait.
const TRANSFER_TIMEOUT_MS = 60_000;

// Types a file is served as. Anything else, HTML and SVG above all (which a browser would run in
// this origin, with the user's key in reach), is served as bytes.
const SERVED_MEDIA_TYPES = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'text/plain',
  'text/csv',
  'application/json',
  'application/pdf',
]);

// Content-Types that say nothing about the file (curl's --data-binary sends a form encoding):
// the file's extension tells more.
const UNDECLARED_TYPES = new Set(['application/octet-stream', 'application/x-www-form-urlencoded']);
const MEDIA_TYPE_MAX_CHARS = 255;
const UNSUPPORTED_MEDIA_TYPE = 415;

// The file a request names. Express hands the multi-segment `path` over split at its '/'s, each
// segment decoded: a segment holding '/' was sent as %2F, and joined it would name another file
// than the URL's segments do, so it is refused.
function fileRefOf(req: Request): WorkspaceFileRef {
  const { kind, id, path } = req.params;
  const segments = Array.isArray(path) ? path : [path ?? ''];
  const file = parseBody(WorkspaceFileParams, { kind, id, path: segments.join('/') });
  if (segments.some((segment) => segment.includes('/'))) {
    throw new HttpError('bad_request', "path: must not contain an encoded '/' (%2F)");
  }
  return file;
}

// The file's type as the client declared it, unless it declared nothing specific.
function declaredMediaTypeOf(req: Request): string | undefined {
  const header = req.get('content-type')?.trim();
  if (!header) return undefined;
  let essence: string;
  try {
    essence = new MIMEType(header).essence;
  } catch {
    throw new HttpError('bad_request', 'malformed Content-Type header');
  }
  if (essence.length > MEDIA_TYPE_MAX_CHARS) {
    throw new HttpError('bad_request', `Content-Type: at most ${MEDIA_TYPE_MAX_CHARS} characters`);
  }
  return UNDECLARED_TYPES.has(essence) ? undefined : essence;
}

// The body is kept byte for byte: a compressed one would be stored compressed under a type that
// says otherwise.
function refuseContentEncoding(req: Request): void {
  const encoding = (req.get('content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity') {
    throw new HttpError(
      'bad_request',
      `unsupported content encoding "${encoding}": send the file as it is`,
      UNSUPPORTED_MEDIA_TYPE,
    );
  }
}

function tooLarge(maxBytes: number): HttpError {
  const mib = maxBytes / (1024 * 1024);
  return new HttpError(
    'payload_too_large',
    `the file is larger than WORKSPACE_FILE_MAX_MB (${mib} MiB, ${maxBytes} bytes)`,
  );
}

// The request body as it arrives. Iterated without destroying the request when the reader stops
// early (past the limit), so the 413 still reaches the client; a client that goes away mid-body
// is a request that did not finish, not a server error.
async function* bodyOf(req: Request): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of req.iterator({ destroyOnReturn: false })) {
      if (chunk instanceof Uint8Array) yield chunk;
    }
  } catch {
    throw new HttpError('bad_request', 'the upload did not finish');
  }
}

// "attachment; filename*=UTF-8''…" (RFC 6266 with RFC 5987's encoding, whose attr-char leaves
// out ' ( ) * too), named after the file's last segment.
function contentDispositionOf(path: string): string {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const encoded = encodeURIComponent(name).replace(
    /['()*]/g,
    (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename*=UTF-8''${encoded}`;
}

function servedMediaTypeOf(stored: string): string {
  const essence = stored.split(';')[0]?.trim().toLowerCase() ?? '';
  return SERVED_MEDIA_TYPES.has(essence) ? essence : 'application/octet-stream';
}

// A workspace file is whatever a run or a user put there. Served from the API's own origin, it
// must never be taken for a page: always a download, no sniffing, a policy that sandboxes it and
// allows nothing, and no cache but the user's own browser's memory.
function sendFile(res: Response, path: string, mediaType: string, bytes: Uint8Array): void {
  res.status(200);
  // setHeader, not express's set: that would add a charset to the type.
  res.setHeader('content-type', servedMediaTypeOf(mediaType));
  res.setHeader('content-disposition', contentDispositionOf(path));
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('content-security-policy', "sandbox; default-src 'none'");
  res.setHeader('cache-control', 'private, no-store');
  res.setHeader('content-length', bytes.byteLength);
  res.end(bytes);
}

// Workspace files move through the uploads bucket (larger than one NATS message may be): the
// gateway puts an upload's bytes there for tools.workspaces.put, and reads a download's bytes
// that tools.workspaces.get put there. Whichever side reads an object deletes it, and the gateway
// deletes what it put whatever happened.
export function createWorkspacesHandlers(
  deps: WorkspacesHandlersDeps,
): Record<
  Extract<GatewayHandler, 'getWorkspaceFile' | 'putWorkspaceFile' | 'deleteWorkspaceFile'>,
  RequestHandler[]
> {
  const uploads = lazyUploadsBucket(deps.bus);
  const maxBytes = deps.workspaceFileMaxBytes;

  const discardQuietly = async (blob: string) => {
    await uploads()
      .then((store) => store.delete(blob))
      .catch(() => undefined);
  };

  // Work on a request whose body may still be arriving. Refused, the rest of the body is read
  // and dropped first, so that the client reads the answer rather than a reset connection.
  const whileReceiving = async <T>(req: Request, res: Response, work: () => Promise<T>) => {
    try {
      return await work();
    } catch (error) {
      await discardRestOf(req, maxBytes);
      if (!req.complete) res.setHeader('connection', 'close');
      throw error;
    }
  };

  // Everything an upload is refused for before a byte of it is stored.
  const checkUpload = (req: Request) => {
    const file = fileRefOf(req);
    const mediaType = declaredMediaTypeOf(req);
    refuseContentEncoding(req);
    if (Number(req.get('content-length')) > maxBytes) throw tooLarge(maxBytes);
    return { file, mediaType };
  };

  // The body into the bucket as `blob`, cut with a 413 at the byte past the limit (leaving
  // nothing there).
  const storeBody = async (req: Request, blob: string) => {
    const store = await uploads();
    try {
      await store.put(blob, bodyOf(req), { maxBytes });
    } catch (error) {
      if (isBusError(error) && error.code === 'payload_too_large') throw tooLarge(maxBytes);
      throw error;
    }
  };

  const takeBlob = async (blob: string): Promise<Uint8Array> => {
    const store = await uploads();
    try {
      const bytes = await store.get(blob);
      if (!bytes) throw new HttpError('unavailable', 'the file could not be read; try again');
      return bytes;
    } finally {
      await store.delete(blob).catch(() => undefined);
    }
  };

  return {
    getWorkspaceFile: [
      async (req, res) => {
        const { userId } = principalOf(req);
        const file = fileRefOf(req);
        const stored = await deps.bus.request(
          toolsWorkspacesGet,
          { userId, ...file },
          { timeoutMs: TRANSFER_TIMEOUT_MS },
        );
        sendFile(res, file.path, stored.mediaType, await takeBlob(stored.blob));
      },
    ],

    putWorkspaceFile: [
      async (req, res) => {
        const { userId } = principalOf(req);
        const { file, mediaType } = await whileReceiving(req, res, async () => checkUpload(req));
        const blob = newWorkspaceBlobName();
        try {
          await whileReceiving(req, res, () => storeBody(req, blob));
          const stored = await deps.bus.request(
            toolsWorkspacesPut,
            { userId, ...file, blob, ...(mediaType === undefined ? {} : { mediaType }) },
            { timeoutMs: TRANSFER_TIMEOUT_MS },
          );
          res.status(stored.created ? 201 : 200).json({ file: stored.file });
        } finally {
          // The tools service deletes it once read; this covers every way it may not have been.
          await discardQuietly(blob);
        }
      },
    ],

    deleteWorkspaceFile: [
      async (req, res) => {
        const { userId } = principalOf(req);
        await deps.bus.request(toolsWorkspacesDelete, { userId, ...fileRefOf(req) });
        res.status(204).end();
      },
    ],
  };
}

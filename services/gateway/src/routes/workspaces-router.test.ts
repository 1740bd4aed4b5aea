import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { type BlobStore, type Bus, BusError, openBlobStore } from '@jarvis/bus';
import { connectTestBus, storedBlobNames } from '@jarvis/bus/testing';
import {
  ErrorBody,
  newWorkspaceBlobName,
  ToolsWorkspacesListResponse,
  toolsWorkspacesDelete,
  toolsWorkspacesGet,
  toolsWorkspacesList,
  toolsWorkspacesPut,
  UPLOADS_BUCKET,
  UPLOADS_TTL_MS,
  type WorkspaceFile,
  WorkspaceFilePutResponse,
  type WorkspaceKind,
  workspaceFileUrl,
} from '@jarvis/contracts';
import { waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type RouterFixture, startRouterFixture, type TestUser } from './router-fixture';

// /v1/workspaces/{kind}/{id}/files… through the gateway's real router, on real NATS and the real
// uploads bucket, in front of a responder that serves the tools.workspaces.* contracts as the
// tools service does: files kept per user, bodies handed over in the bucket and deleted by the
// reader, a quota and a file limit. What the tools service itself does with them (Postgres, the
// media type by extension, run_code's view) is its own tests'. The file limit is small here so
// that "one byte over" costs little.
const FILE_MAX_BYTES = 256 * 1024;
const QUOTA_BYTES = 2 * FILE_MAX_BYTES;

let harness: RouterFixture;
let alice: TestUser;
let bob: TestUser;
let tools: WorkspacesResponder;

beforeAll(async () => {
  harness = await startRouterFixture('/v1/workspaces', { workspaceFileMaxBytes: FILE_MAX_BYTES });
  ({ alice, bob } = harness);
  tools = await startWorkspacesResponder(harness.bus.namespace);
}, 60_000);

afterAll(async () => {
  await tools?.stop();
  await harness?.stop();
});

beforeEach(() => {
  tools.requests.length = 0;
});

type StoredFile = { bytes: Uint8Array; mediaType: string; updatedAt: string };
type Asked = { subject: string; request: Record<string, unknown> };

type WorkspacesResponder = {
  // Every request it answered, in order.
  requests: Asked[];
  files: Map<string, StoredFile>;
  stop(): Promise<void>;
};

const EXTENSION_TYPES: Record<string, string> = {
  png: 'image/png',
  txt: 'text/plain',
  html: 'text/html',
  svg: 'image/svg+xml',
};

function keyOf(request: { userId: string; kind: string; id: string }, path = ''): string {
  return `${request.userId}/${request.kind}/${request.id}/${path}`;
}

// The tools side of the four contracts, on a bus of its own, kept in memory.
async function startWorkspacesResponder(namespace: string): Promise<WorkspacesResponder> {
  const bus: Bus = await connectTestBus(namespace);
  const bucket: BlobStore = await openBlobStore(bus, UPLOADS_BUCKET, { ttlMs: UPLOADS_TTL_MS });
  const files = new Map<string, StoredFile>();
  const requests: Asked[] = [];
  const describe = (key: string, file: StoredFile): WorkspaceFile => ({
    path: key.split('/').slice(3).join('/'),
    size: file.bytes.byteLength,
    mediaType: file.mediaType,
    updatedAt: file.updatedAt,
  });
  const usedBy = (userId: string) =>
    [...files]
      .filter(([key]) => key.startsWith(`${userId}/`))
      .reduce((total, [, file]) => total + file.bytes.byteLength, 0);

  const subscriptions = [
    bus.serve(toolsWorkspacesList, async (request) => {
      requests.push({ subject: 'list', request });
      const prefix = keyOf(request);
      return {
        files: [...files]
          .filter(([key]) => key.startsWith(prefix))
          .map(([key, file]) => describe(key, file)),
        usedBytes: usedBy(request.userId),
        quotaBytes: QUOTA_BYTES,
      };
    }),
    bus.serve(toolsWorkspacesGet, async (request) => {
      requests.push({ subject: 'get', request });
      const file = files.get(keyOf(request, request.path));
      if (!file) throw new BusError('not_found', 'no such file');
      const blob = newWorkspaceBlobName();
      await bucket.put(blob, file.bytes);
      return { blob, size: file.bytes.byteLength, mediaType: file.mediaType };
    }),
    bus.serve(toolsWorkspacesPut, async (request) => {
      requests.push({ subject: 'put', request });
      const bytes = await bucket.get(request.blob);
      await bucket.delete(request.blob);
      if (!bytes) throw new BusError('not_found', 'the upload is gone');
      const key = keyOf(request, request.path);
      const isNew = !files.has(key);
      const replaced = files.get(key)?.bytes.byteLength ?? 0;
      if (usedBy(request.userId) - replaced + bytes.byteLength > QUOTA_BYTES) {
        throw new BusError('payload_too_large', 'over your workspace quota');
      }
      const extension = request.path.split('.').pop() ?? '';
      const file = {
        bytes,
        mediaType: request.mediaType ?? EXTENSION_TYPES[extension] ?? 'application/octet-stream',
        updatedAt: new Date().toISOString(),
      };
      files.set(key, file);
      return { file: describe(key, file), created: isNew };
    }),
    bus.serve(toolsWorkspacesDelete, async (request) => {
      requests.push({ subject: 'delete', request });
      if (!files.delete(keyOf(request, request.path))) {
        throw new BusError('not_found', 'no such file');
      }
      return {};
    }),
  ];
  return {
    requests,
    files,
    async stop() {
      for (const subscription of subscriptions) subscription.unsubscribe();
      await bus.close();
    },
  };
}

type Answer = { status: number; headers: Headers; bytes: Buffer };

function fileUrl(kind: WorkspaceKind, id: string, path: string): string {
  return `${harness.url}${workspaceFileUrl(kind, id, path).slice('/v1/workspaces'.length)}`;
}

async function put(
  url: string,
  body: Uint8Array | string,
  headers: Record<string, string> = {},
  key = alice.key,
): Promise<Answer> {
  const response = await fetch(url, {
    method: 'PUT',
    headers: { authorization: `Bearer ${key}`, ...headers },
    body,
  });
  return {
    status: response.status,
    headers: response.headers,
    bytes: Buffer.from(await response.arrayBuffer()),
  };
}

// '' for no key at all.
async function call(method: string, url: string, key = alice.key) {
  const response = await fetch(url, {
    method,
    headers: key ? { authorization: `Bearer ${key}` } : {},
  });
  return {
    status: response.status,
    headers: response.headers,
    bytes: Buffer.from(await response.arrayBuffer()),
  };
}

function json(answer: Answer): unknown {
  return JSON.parse(answer.bytes.toString());
}

// A request with its path sent byte for byte: fetch would resolve '..' and '%2e%2e' first.
function sendRaw(
  method: string,
  rawPath: string,
  body?: Buffer,
): Promise<{ status: number; text: string }> {
  const { hostname, port } = new URL(harness.url);
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        host: hostname,
        port,
        method,
        path: `/v1/workspaces${rawPath}`,
        headers: { authorization: `Bearer ${alice.key}` },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString() }),
        );
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

// A PNG's signature, then bytes a sniffer could take for a page, were it let to sniff.
const PNG = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  Buffer.from('<html><script>alert(1)</script></html>'),
  Buffer.from([0, 255, 128]),
]);

describe('uploading and downloading a file', () => {
  it('stores the body as it is, under its path, and serves it back as a download only', async () => {
    const conversation = randomUUID();
    const url = fileUrl('conversation', conversation, 'charts/sales 2026.png');

    const stored = await put(url, PNG, { 'content-type': 'image/png' });

    expect(stored.status, stored.bytes.toString()).toBe(201);
    expect(WorkspaceFilePutResponse.parse(json(stored)).file).toMatchObject({
      path: 'charts/sales 2026.png',
      size: PNG.length,
      mediaType: 'image/png',
    });
    expect(tools.requests).toEqual([
      {
        subject: 'put',
        request: expect.objectContaining({
          userId: alice.id,
          kind: 'conversation',
          id: conversation,
          path: 'charts/sales 2026.png',
          mediaType: 'image/png',
          blob: expect.stringMatching(/^workspace-[0-9a-f-]{36}$/),
        }),
      },
    ]);

    const served = await call('GET', url);

    expect(served.status).toBe(200);
    expect(served.bytes.equals(PNG)).toBe(true);
    expect(Object.fromEntries(served.headers)).toMatchObject({
      'content-type': 'image/png',
      'content-disposition': "attachment; filename*=UTF-8''sales%202026.png",
      'x-content-type-options': 'nosniff',
      'content-security-policy': "sandbox; default-src 'none'",
      'cache-control': 'private, no-store',
      'content-length': String(PNG.length),
    });
    // Both ways, what went through the bucket is gone from it.
    expect(await storedBlobNames(harness.bus, UPLOADS_BUCKET)).toEqual([]);
  });

  it('lists the workspace, with the quota; an empty one answers an empty list', async () => {
    const mission = randomUUID();
    await put(fileUrl('mission', mission, 'a.txt'), 'first', { 'content-type': 'text/plain' });
    await put(fileUrl('mission', mission, 'out/b.txt'), 'second');

    const listed = await call('GET', `${harness.url}/mission/${mission}/files`);
    const empty = await call('GET', `${harness.url}/mission/${randomUUID()}/files`);

    expect(listed.status).toBe(200);
    const { files, quotaBytes } = ToolsWorkspacesListResponse.parse(json(listed));
    expect(files.map((file) => [file.path, file.size]).sort()).toEqual([
      ['a.txt', 5],
      ['out/b.txt', 6],
    ]);
    expect(quotaBytes).toBe(QUOTA_BYTES);
    expect(ToolsWorkspacesListResponse.parse(json(empty)).files).toEqual([]);
  });

  it('answers 200 when the upload replaced a file, and serves the new bytes', async () => {
    const url = fileUrl('conversation', randomUUID(), 'notes.txt');
    expect((await put(url, 'old')).status).toBe(201);

    const replaced = await put(url, 'new and longer');

    expect(replaced.status).toBe(200);
    expect(WorkspaceFilePutResponse.parse(json(replaced)).file.size).toBe(14);
    expect((await call('GET', url)).bytes.toString()).toBe('new and longer');
  });

  it('keeps a specific Content-Type without its parameters, and passes on no generic one', async () => {
    const id = randomUUID();
    await put(fileUrl('conversation', id, 'a.csv'), 'x,y', {
      'content-type': 'Text/CSV; charset=utf-8',
    });
    await put(fileUrl('conversation', id, 'b.png'), PNG, {
      'content-type': 'application/octet-stream',
    });
    await put(fileUrl('conversation', id, 'c.png'), PNG, {
      'content-type': 'application/x-www-form-urlencoded',
    });

    expect(tools.requests.map(({ request }) => [request.path, request.mediaType])).toEqual([
      ['a.csv', 'text/csv'],
      ['b.png', undefined],
      ['c.png', undefined],
    ]);
  });

  it('takes an empty file, and one of exactly the limit', async () => {
    const id = randomUUID();
    const empty = await put(fileUrl('conversation', id, 'empty'), new Uint8Array());
    const full = await put(fileUrl('conversation', id, 'full.bin'), Buffer.alloc(FILE_MAX_BYTES));

    expect(empty.status).toBe(201);
    expect(full.status).toBe(201);
    expect((await call('GET', fileUrl('conversation', id, 'empty'))).bytes.length).toBe(0);
    const served = await call('GET', fileUrl('conversation', id, 'full.bin'));
    expect(served.bytes.equals(Buffer.alloc(FILE_MAX_BYTES))).toBe(true);
    await call('DELETE', fileUrl('conversation', id, 'full.bin'));
  });

  it('names the download after the last segment, encoded as RFC 5987 asks', async () => {
    const url = fileUrl('conversation', randomUUID(), "dir/résumé (final)'s *copy*#1?.txt");
    expect((await put(url, 'cv')).status).toBe(201);

    const served = await call('GET', url);

    expect(served.headers.get('content-disposition')).toBe(
      "attachment; filename*=UTF-8''r%C3%A9sum%C3%A9%20%28final%29%27s%20%2Acopy%2A%231%3F.txt",
    );
  });
});

describe('serving what a browser would run', () => {
  it.each([
    ['an HTML page', 'page.html', 'text/html', '<script>alert(document.cookie)</script>'],
    ['an SVG image', 'chart.svg', 'image/svg+xml', '<svg onload="alert(1)"/>'],
    ['a type it declared itself', 'x.js', 'application/javascript', 'alert(1)'],
    ['a type with no name', 'x', 'text/html; charset=utf-8', '<b>hi</b>'],
  ])('serves %s as bytes, never as its own type', async (_what, path, type, body) => {
    const url = fileUrl('conversation', randomUUID(), path);
    await put(url, body, { 'content-type': type });

    const served = await call('GET', url);

    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('application/octet-stream');
    expect(served.headers.get('content-disposition')).toMatch(/^attachment; /);
    expect(served.headers.get('content-security-policy')).toBe("sandbox; default-src 'none'");
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');
    expect(served.bytes.toString()).toBe(body);
  });

  it.each([
    ['image/jpeg'],
    ['image/gif'],
    ['image/webp'],
    ['text/plain'],
    ['text/csv'],
    ['application/json'],
    ['application/pdf'],
  ])('serves %s as it is', async (type) => {
    const url = fileUrl('conversation', randomUUID(), 'file');
    await put(url, 'x', { 'content-type': type });

    expect((await call('GET', url)).headers.get('content-type')).toBe(type);
  });
});

describe('deleting a file', () => {
  it('answers 204, then 404 for it on every method', async () => {
    const url = fileUrl('mission', randomUUID(), 'tmp/x.txt');
    await put(url, 'x');

    expect((await call('DELETE', url)).status).toBe(204);
    expect((await call('DELETE', url)).status).toBe(404);
    const gone = await call('GET', url);
    expect(gone.status).toBe(404);
    expect(ErrorBody.parse(json(gone)).error.code).toBe('not_found');
  });
});

describe("another user's workspace", () => {
  it('is asked for with the key’s user, so that user sees none of it', async () => {
    const id = randomUUID();
    const url = fileUrl('conversation', id, 'secret.txt');
    await put(url, 'alice only');

    expect((await call('GET', url, bob.key)).status).toBe(404);
    expect((await call('DELETE', url, bob.key)).status).toBe(404);
    const listed = await call('GET', `${harness.url}/conversation/${id}/files`, bob.key);
    expect(ToolsWorkspacesListResponse.parse(json(listed)).files).toEqual([]);
    expect((await call('GET', url)).bytes.toString()).toBe('alice only');
  });

  it('answers 401 without a key, before anything is read or asked', async () => {
    const url = fileUrl('conversation', randomUUID(), 'a.txt');

    expect((await call('GET', url, '')).status).toBe(401);
    expect((await put(url, 'x', {}, '')).status).toBe(401);
    expect(tools.requests).toEqual([]);
  });
});

describe('refusing a request, before the tools service is asked', () => {
  const id = '0b8f5c3e-2f41-4d7a-9c55-3e1f0a6b7d21';
  const base = `/conversation/${id}/files`;

  it.each([
    ['a parent segment', `${base}/a/../b.txt`, /^path: /],
    ['a parent segment alone', `${base}/..`, /^path: /],
    ['an encoded parent segment', `${base}/%2e%2e/b.txt`, /^path: /],
    ['a current segment', `${base}/./b.txt`, /^path: /],
    ['an empty segment', `${base}/a//b.txt`, /^path: /],
    ['an empty first segment', `${base}//b.txt`, /^path: /],
    ['a trailing slash', `${base}/a/`, /^path: /],
    ['an encoded slash', `${base}/a%2Fb.txt`, /^path: must not contain an encoded '\/'/],
    ['an encoded slash that climbs', `${base}/..%2F..%2Fkeys`, /^path: /],
    ['an encoded backslash', `${base}/a%5C..%5Cb`, /^path: /],
    ['an encoded NUL', `${base}/a%00b`, /^path: /],
    ['a control character', `${base}/a%0Ab`, /^path: /],
    ['a malformed escape', `${base}/%E0%A4%A`, /./],
    ['a lone %', `${base}/a%`, /./],
    ['a name over 255 bytes', `${base}/${'a'.repeat(256)}`, /^path: /],
    ['17 segments', `${base}/${Array.from({ length: 17 }, () => 'd').join('/')}`, /^path: /],
    ['a kind that is none', `/user/${id}/files/a.txt`, /^kind: /],
    ['an id that is no uuid', '/conversation/x/files/a.txt', /^id: /],
  ])('answers 400 to %s on every method', async (_what, rawPath, message) => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const answer = await sendRaw(method, rawPath, method === 'PUT' ? PNG : undefined);
      expect(answer.status, `${method} ${rawPath}`).toBe(400);
      expect(ErrorBody.parse(JSON.parse(answer.text)).error.message).toMatch(message);
    }
    expect(tools.requests).toEqual([]);
    expect(await storedBlobNames(harness.bus, UPLOADS_BUCKET)).toEqual([]);
  });

  it('answers 400 to a kind that is none on the listing too', async () => {
    const listed = await call('GET', `${harness.url}/user/${id}/files`);

    expect(listed.status).toBe(400);
    expect(ErrorBody.parse(json(listed)).error.message).toMatch(/^kind: /);
    expect(tools.requests).toEqual([]);
  });

  it('answers 415 to a compressed body, and 400 to a malformed Content-Type', async () => {
    const url = fileUrl('conversation', id, 'a.txt');

    expect((await put(url, 'x', { 'content-encoding': 'gzip' })).status).toBe(415);
    expect((await put(url, 'x', { 'content-type': 'not a type' })).status).toBe(400);
    expect(tools.requests).toEqual([]);
  });
});

// The chunks the uploads bucket's stream holds, of objects whole or in the making.
async function chunkCount(): Promise<number> {
  const jsm = await harness.bus.nc.jetstreamManager();
  const bucket = harness.bus.streamName(UPLOADS_BUCKET);
  const info = await jsm.streams.info(`OBJ_${bucket}`, { subjects_filter: `$O.${bucket}.C.>` });
  return Object.values(info.state.subjects ?? {}).reduce((total, count) => total + count, 0);
}

// A body sent in pieces, with no Content-Length: only the count of bytes as they stream tells.
function chunked(bytes: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      const piece = Math.min(64 * 1024, bytes - sent);
      if (piece === 0) controller.close();
      else controller.enqueue(new Uint8Array(piece));
      sent += piece;
    },
  });
}

describe('a file too large', () => {
  it.each([
    ['one byte over the limit', () => Buffer.alloc(FILE_MAX_BYTES + 1)],
    ['far over the limit', () => Buffer.alloc(32 * FILE_MAX_BYTES)],
  ])('answers 413 to a file %s, keeping nothing', async (_what, make) => {
    const url = fileUrl('conversation', randomUUID(), 'big.bin');

    const refused = await put(url, make());

    expect(refused.status).toBe(413);
    expect(ErrorBody.parse(json(refused)).error.message).toBe(
      `the file is larger than WORKSPACE_FILE_MAX_MB (0.25 MiB, ${FILE_MAX_BYTES} bytes)`,
    );
    expect(tools.requests).toEqual([]);
    expect(await storedBlobNames(harness.bus, UPLOADS_BUCKET)).toEqual([]);
  });

  it('answers 413 to a streamed body when it passes the limit, keeping nothing', async () => {
    const chunksBefore = await chunkCount();

    const response = await fetch(fileUrl('conversation', randomUUID(), 'big.bin'), {
      method: 'PUT',
      headers: { authorization: `Bearer ${alice.key}` },
      body: chunked(4 * FILE_MAX_BYTES),
      duplex: 'half',
    } as RequestInit);

    expect(response.status).toBe(413);
    expect(tools.requests).toEqual([]);
    expect(await storedBlobNames(harness.bus, UPLOADS_BUCKET)).toEqual([]);
    await waitFor(async () => (await chunkCount()) === chunksBefore, {
      what: 'the chunks to be purged',
    });
  });

  // Bob's, who has stored nothing: two files of the limit fill his quota.
  it("passes on the tools service's 413 for the quota, leaving nothing in the bucket", async () => {
    const mission = randomUUID();
    const putAsBob = (path: string) =>
      put(fileUrl('mission', mission, path), Buffer.alloc(FILE_MAX_BYTES), {}, bob.key);
    const first = await putAsBob('a.bin');
    const second = await putAsBob('b.bin');
    const over = await putAsBob('c.bin');

    expect([first.status, second.status, over.status]).toEqual([201, 201, 413]);
    expect(ErrorBody.parse(json(over)).error).toEqual({
      code: 'payload_too_large',
      message: 'over your workspace quota',
    });
    expect(await storedBlobNames(harness.bus, UPLOADS_BUCKET)).toEqual([]);
  });
});

describe('a client that goes away mid-upload', () => {
  it('leaves no chunk of its file behind, and asks nothing', async () => {
    const chunksBefore = await chunkCount();
    const { hostname, port } = new URL(harness.url);
    const path = workspaceFileUrl('conversation', randomUUID(), 'half.bin');
    const socket = connect(Number(port), hostname);
    socket.write(
      `PUT ${path} HTTP/1.1\r\nHost: ${hostname}\r\n` +
        `Authorization: Bearer ${alice.key}\r\n` +
        `Content-Length: ${FILE_MAX_BYTES}\r\n\r\n`,
    );
    // Past the object store's 128 KiB chunk: part of the file is written before the client goes.
    socket.write(Buffer.alloc(200 * 1024));
    await waitFor(async () => (await chunkCount()) > chunksBefore, { what: 'a chunk written' });

    socket.destroy();

    await waitFor(async () => (await chunkCount()) === chunksBefore, {
      what: 'the chunks to be purged',
    });
    expect(await storedBlobNames(harness.bus, UPLOADS_BUCKET)).toEqual([]);
    expect(tools.requests).toEqual([]);
  });
});

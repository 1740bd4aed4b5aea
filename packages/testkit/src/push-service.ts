import { execFileSync } from 'node:child_process';
import {
  createDecipheriv,
  createECDH,
  createPublicKey,
  hkdfSync,
  randomBytes,
  verify,
} from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A push service as a browser vendor runs one, standing in on loopback over HTTPS with a
// certificate made for the run: it records each push as it came and answers as the test says.
// And the browser's side of a subscription: its keys, with which a push's payload is decrypted
// as RFC 8291 says, in node:crypto (web-push's own http_ece is no dependency of the tests).

export type ReceivedPush = {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
};

type Responder = (push: ReceivedPush, response: ServerResponse) => void;

export type PushServiceStandIn = {
  // https://127.0.0.1:<port>
  url: string;
  // The certificate to trust: it is its own issuer. And the same as a file, for a process
  // started with NODE_EXTRA_CA_CERTS.
  ca: string;
  caFile: string;
  pushes: ReceivedPush[];
  respondWith(responder: Responder): void;
  close(): Promise<void>;
};

export async function startPushServiceStandIn(): Promise<PushServiceStandIn> {
  const { key, cert } = makeCertificate();
  const directory = mkdtempSync(join(tmpdir(), 'push-stand-in-ca-'));
  const caFile = join(directory, 'ca.pem');
  writeFileSync(caFile, cert);
  const pushes: ReceivedPush[] = [];
  const created: Responder = (_push, response) => {
    response.writeHead(201).end();
  };
  let responder = created;
  const server = createServer({ key, cert }, (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const push = {
        path: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks),
      };
      pushes.push(push);
      responder(push, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    ca: cert,
    caFile,
    pushes,
    respondWith(next) {
      responder = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          rmSync(directory, { recursive: true, force: true });
          resolve();
        });
      }),
  };
}

// A self-signed P-256 certificate for 127.0.0.1, made by openssl for this run only.
function makeCertificate(): { key: string; cert: string } {
  const directory = mkdtempSync(join(tmpdir(), 'push-stand-in-'));
  try {
    const keyPath = join(directory, 'key.pem');
    const certPath = join(directory, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        keyPath,
        '-out',
        certPath,
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(keyPath, 'utf8'), cert: readFileSync(certPath, 'utf8') };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

// A browser's side of a subscription: the P-256 key pair and auth secret it makes, and the keys
// as PushSubscription.toJSON() gives them.
export type BrowserKeys = {
  keys: { p256dh: string; auth: string };
  decrypt(body: Buffer): string;
};

export function makeBrowserKeys(): BrowserKeys {
  const ecdh = createECDH('prime256v1');
  const publicKey = ecdh.generateKeys();
  const auth = randomBytes(16);
  return {
    keys: { p256dh: publicKey.toString('base64url'), auth: auth.toString('base64url') },
    decrypt: (body) => decryptAes128gcm(body, ecdh, publicKey, auth),
  };
}

// RFC 8291 over RFC 8188: the header (salt, record size, the sender's public key), then one
// record, whose plaintext ends with the 0x02 delimiter and any zero padding.
function decryptAes128gcm(
  body: Buffer,
  ecdh: ReturnType<typeof createECDH>,
  userAgentPublic: Buffer,
  authSecret: Buffer,
): string {
  const salt = body.subarray(0, 16);
  const idLength = body.readUInt8(20);
  const senderPublic = body.subarray(21, 21 + idLength);
  const record = body.subarray(21 + idLength);
  const shared = ecdh.computeSecret(senderPublic);
  const keyInfo = Buffer.concat([
    Buffer.from('WebPush: info\0', 'latin1'),
    userAgentPublic,
    senderPublic,
  ]);
  const ikm = Buffer.from(hkdfSync('sha256', shared, authSecret, keyInfo, 32));
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, 'Content-Encoding: aes128gcm\0', 16));
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, 'Content-Encoding: nonce\0', 12));
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce);
  decipher.setAuthTag(record.subarray(record.length - 16));
  const padded = Buffer.concat([
    decipher.update(record.subarray(0, record.length - 16)),
    decipher.final(),
  ]);
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end -= 1;
  if (padded[end] !== 2) throw new Error('the last record has no 0x02 delimiter');
  return padded.subarray(0, end).toString('utf8');
}

export type VapidClaims = { aud: string; exp: number; sub: string };

// Reads `Authorization: vapid t=<JWT>, k=<public key>` (RFC 8292) and checks the JWT's ES256
// signature with k, as a push service does; answers the key and the claims.
export function verifyVapid(authorization: string | undefined): {
  publicKey: string;
  claims: VapidClaims;
} {
  const match = /^vapid t=([\w-]+\.[\w-]+\.[\w-]+), k=([\w-]+)$/.exec(authorization ?? '');
  if (!match?.[1] || !match[2]) throw new Error(`not a VAPID authorization: ${authorization}`);
  const [header, payload, signature] = match[1].split('.') as [string, string, string];
  const point = Buffer.from(match[2], 'base64url');
  const key = createPublicKey({
    key: {
      kty: 'EC',
      crv: 'P-256',
      x: point.subarray(1, 33).toString('base64url'),
      y: point.subarray(33, 65).toString('base64url'),
    },
    format: 'jwk',
  });
  const isValid = verify(
    'sha256',
    Buffer.from(`${header}.${payload}`),
    { key, dsaEncoding: 'ieee-p1363' },
    Buffer.from(signature, 'base64url'),
  );
  if (!isValid) throw new Error('the VAPID signature does not verify');
  if (JSON.parse(Buffer.from(header, 'base64url').toString('utf8')).alg !== 'ES256') {
    throw new Error('the VAPID JWT is not ES256');
  }
  return {
    publicKey: match[2],
    claims: JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')),
  };
}

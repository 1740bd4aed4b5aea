import {
  type CipherGCM,
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  type DecipherGCM,
  randomBytes,
  scrypt,
  timingSafeEqual,
} from 'node:crypto';
import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { PassThrough, Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { StringDecoder } from 'node:string_decoder';
import { createGunzip, createGzip } from 'node:zlib';
import { z } from 'zod';

// The backup file: a magic line, a header line (JSON, never secret), the body, and a trailer
// line of fixed length holding the SHA-256 of everything before it and, when encrypted, the
// AES-GCM tag. The body is gzip of the payload's lines, encrypted when a passphrase is given.
// The checksum catches a damaged file without the passphrase; the tag catches a file changed
// on purpose (whoever can rewrite it can also rewrite a plain checksum).
//
// Encryption is node:crypto's scrypt (a memory-hard key derivation, its cost stored in the
// header so it can rise later) and AES-256-GCM: both in Node itself, so restoring needs nothing
// but the release. A short keyed check value in the header tells a wrong passphrase apart at
// once, before the body is read.

const MAGIC = 'JARVIS-BACKUP 1\n';
const TRAILER_PREFIX = 'JARVIS-BACKUP-END sha256=';
const NO_TAG = '-'.repeat(32);
// Prefix, 64 hex digits of SHA-256, " tag=", 32 hex digits of the GCM tag, newline.
const TRAILER_LENGTH = TRAILER_PREFIX.length + 64 + ' tag='.length + 32 + 1;
const TRAILER = /^JARVIS-BACKUP-END sha256=([0-9a-f]{64}) tag=([0-9a-f]{32}|-{32})\n$/;
// The header line is a few hundred bytes; more means this is not a backup.
const HEADER_READ_BYTES = 4_096;

// OWASP's recommended scrypt cost for passwords: 128 MiB and a fraction of a second per try.
const SCRYPT = { cost: 2 ** 17, blockSize: 8, parallelization: 1 };
const SCRYPT_MAX_MEMORY = 256 * 1024 * 1024;
const PASSPHRASE_CHECK_LABEL = 'jarvis-backup passphrase check';

const Encryption = z.object({
  cipher: z.literal('aes-256-gcm'),
  kdf: z.literal('scrypt'),
  cost: z.number().int().min(2),
  blockSize: z.number().int().min(1),
  parallelization: z.number().int().min(1),
  salt: z.base64(),
  iv: z.base64(),
  check: z.base64(),
});
type Encryption = z.infer<typeof Encryption>;

const BackupHeader = z.object({
  createdAt: z.string(),
  encryption: Encryption.nullable(),
});
type BackupHeader = z.infer<typeof BackupHeader>;

// The file cannot be used: damaged, not a backup, or the wrong passphrase. Nothing was touched.
export class BackupFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupFileError';
  }
}

type Key = { key: Buffer; check: Buffer };

async function deriveKey(passphrase: string, salt: Buffer, params: typeof SCRYPT): Promise<Key> {
  const key = await new Promise<Buffer>((resolve, reject) => {
    scrypt(
      passphrase,
      salt,
      32,
      {
        N: params.cost,
        r: params.blockSize,
        p: params.parallelization,
        maxmem: SCRYPT_MAX_MEMORY,
      },
      (error, derived) => (error ? reject(error) : resolve(derived)),
    );
  });
  return { key, check: createHmac('sha256', key).update(PASSPHRASE_CHECK_LABEL).digest() };
}

async function write(out: Writable, chunk: Buffer | string): Promise<void> {
  if (!out.write(chunk)) await once(out, 'drain');
}

// Writes a backup of the payload's lines to `out` (which the caller ends). Returns the SHA-256.
export async function writeBackupFile(
  out: Writable,
  lines: AsyncIterable<string>,
  passphrase: string | undefined,
): Promise<string> {
  const hash = createHash('sha256');
  const put = async (chunk: Buffer | string) => {
    hash.update(chunk);
    await write(out, chunk);
  };
  let encryption: Encryption | null = null;
  let cipher: CipherGCM | undefined;
  if (passphrase !== undefined) {
    const salt = randomBytes(16);
    const iv = randomBytes(12);
    const { key, check } = await deriveKey(passphrase, salt, SCRYPT);
    cipher = createCipheriv('aes-256-gcm', key, iv);
    encryption = {
      cipher: 'aes-256-gcm',
      kdf: 'scrypt',
      ...SCRYPT,
      salt: salt.toString('base64'),
      iv: iv.toString('base64'),
      check: check.toString('base64'),
    };
  }
  const header: BackupHeader = { createdAt: new Date().toISOString(), encryption };
  await put(MAGIC);
  await put(`${JSON.stringify(header)}\n`);
  await pipeline(
    Readable.from(withNewlines(lines)),
    createGzip(),
    cipher ?? new PassThrough(),
    async (source: AsyncIterable<Buffer>) => {
      for await (const chunk of source) await put(chunk);
    },
  );
  const tag = cipher ? cipher.getAuthTag().toString('hex') : NO_TAG;
  const checksum = hash.digest('hex');
  await write(out, `${TRAILER_PREFIX}${checksum} tag=${tag}\n`);
  return checksum;
}

async function* withNewlines(lines: AsyncIterable<string>): AsyncIterable<string> {
  for await (const line of lines) yield `${line}\n`;
}

export type OpenedBackup = {
  path: string;
  header: BackupHeader;
  checksum: string;
  bodyStart: number;
  bodyEnd: number;
  tag: Buffer | undefined;
  key: Buffer | undefined;
};

// Checks the file whole (its checksum, then the passphrase) before anything else reads it.
export async function openBackupFile(
  path: string,
  passphrase: string | undefined,
): Promise<OpenedBackup> {
  const handle = await open(path, 'r');
  let head: string;
  let trailer: string;
  let size: number;
  try {
    size = (await handle.stat()).size;
    if (size < MAGIC.length + TRAILER_LENGTH) throw notABackup(path);
    const headBuffer = Buffer.alloc(Math.min(HEADER_READ_BYTES, size - TRAILER_LENGTH));
    await handle.read(headBuffer, 0, headBuffer.length, 0);
    head = headBuffer.toString('latin1');
    const trailerBuffer = Buffer.alloc(TRAILER_LENGTH);
    await handle.read(trailerBuffer, 0, TRAILER_LENGTH, size - TRAILER_LENGTH);
    trailer = trailerBuffer.toString('latin1');
  } finally {
    await handle.close();
  }
  if (!head.startsWith(MAGIC)) throw notABackup(path);
  const headerEnd = head.indexOf('\n', MAGIC.length);
  const trailerMatch = TRAILER.exec(trailer);
  if (headerEnd < 0 || !trailerMatch) throw damaged(path);
  const [, checksum = '', tagHex = ''] = trailerMatch;
  const bodyEnd = size - TRAILER_LENGTH;
  const actual = createHash('sha256');
  await pipeline(createReadStream(path, { start: 0, end: bodyEnd - 1 }), actual);
  if (actual.digest('hex') !== checksum) throw damaged(path);

  const header = BackupHeader.safeParse(parseJson(head.slice(MAGIC.length, headerEnd)));
  if (!header.success) throw damaged(path);
  const opened: OpenedBackup = {
    path,
    header: header.data,
    checksum,
    bodyStart: headerEnd + 1,
    bodyEnd,
    tag: undefined,
    key: undefined,
  };
  const encryption = header.data.encryption;
  if (!encryption) return opened;
  if (passphrase === undefined) {
    throw new BackupFileError(
      `${path} is encrypted: give its passphrase in JARVIS_BACKUP_PASSPHRASE`,
    );
  }
  const { key, check } = await deriveKey(passphrase, Buffer.from(encryption.salt, 'base64'), {
    cost: encryption.cost,
    blockSize: encryption.blockSize,
    parallelization: encryption.parallelization,
  });
  const expected = Buffer.from(encryption.check, 'base64');
  if (expected.length !== check.length || !timingSafeEqual(expected, check)) {
    throw new BackupFileError(`wrong passphrase for ${path}`);
  }
  return { ...opened, key, tag: Buffer.from(tagHex, 'hex') };
}

// Feeds the payload's lines, in order, to `onLine`; throws if the encrypted body fails its tag.
export async function readBackupLines(
  backup: OpenedBackup,
  onLine: (line: string) => Promise<void>,
): Promise<void> {
  const encryption = backup.header.encryption;
  let decipher: DecipherGCM | undefined;
  if (encryption && backup.key && backup.tag) {
    decipher = createDecipheriv('aes-256-gcm', backup.key, Buffer.from(encryption.iv, 'base64'));
    decipher.setAuthTag(backup.tag);
  }
  try {
    await pipeline(
      createReadStream(backup.path, { start: backup.bodyStart, end: backup.bodyEnd - 1 }),
      decipher ?? new PassThrough(),
      createGunzip(),
      async (source: AsyncIterable<Buffer>) => {
        const decoder = new StringDecoder('utf8');
        let rest = '';
        for await (const chunk of source) {
          rest += decoder.write(chunk);
          let start = 0;
          let end = rest.indexOf('\n', start);
          while (end >= 0) {
            await onLine(rest.slice(start, end));
            start = end + 1;
            end = rest.indexOf('\n', start);
          }
          rest = rest.slice(start);
        }
        rest += decoder.end();
        if (rest !== '') throw damaged(backup.path);
      },
    );
  } catch (error) {
    if (error instanceof BackupFileError || !isStreamDamage(error)) throw error;
    throw damaged(backup.path);
  }
}

// zlib's and the GCM tag's failures: the body is not what was written.
function isStreamDamage(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = 'code' in error ? error.code : undefined;
  return (
    (typeof code === 'string' && code.startsWith('Z_')) ||
    error.message.includes('Unsupported state or unable to authenticate data')
  );
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function notABackup(path: string): BackupFileError {
  return new BackupFileError(`${path} is not a Jarvis backup`);
}

function damaged(path: string): BackupFileError {
  return new BackupFileError(
    `${path} is damaged: its checksum does not match its content; nothing was restored`,
  );
}

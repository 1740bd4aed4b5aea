import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { link, mkdir, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { Logger } from '@jarvis/telemetry';
import type { ChannelSecrets, SecretBox } from './channel';

const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
// The first byte of every sealed blob: a later format (another cipher, a rotated key's id) gets
// another version and blobs sealed before it still open.
const VERSION = 1;

export type SecretKeyEnv = {
  JARVIS_SECRET_KEY?: string | undefined;
  JARVIS_SECRET_KEY_FILE: string;
};

// The install's secret box: the key from JARVIS_SECRET_KEY, else from JARVIS_SECRET_KEY_FILE,
// which the first start creates. The key is never in the database, so a dump alone does not
// open the channels' secrets; losing the key file loses them (the users enter them again).
export async function loadSecretBox(env: SecretKeyEnv, logger: Logger): Promise<SecretBox> {
  const key =
    env.JARVIS_SECRET_KEY === undefined
      ? await loadKeyFile(resolve(env.JARVIS_SECRET_KEY_FILE), logger)
      : parseKey(env.JARVIS_SECRET_KEY, 'JARVIS_SECRET_KEY');
  return createSecretBox(key);
}

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== KEY_BYTES) throw new Error(`a secret key is ${KEY_BYTES} bytes`);
  return {
    seal(secrets: ChannelSecrets): Buffer {
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, nonce);
      const sealed = Buffer.concat([
        cipher.update(JSON.stringify(secrets), 'utf8'),
        cipher.final(),
      ]);
      return Buffer.concat([Buffer.of(VERSION), nonce, cipher.getAuthTag(), sealed]);
    },
    open(blob: Buffer): ChannelSecrets {
      if (blob[0] !== VERSION || blob.length < 1 + NONCE_BYTES + TAG_BYTES) {
        throw new Error('sealed secrets of an unknown format');
      }
      const nonce = blob.subarray(1, 1 + NONCE_BYTES);
      const tag = blob.subarray(1 + NONCE_BYTES, 1 + NONCE_BYTES + TAG_BYTES);
      const decipher = createDecipheriv('aes-256-gcm', key, nonce);
      decipher.setAuthTag(tag);
      // Throws when the blob was sealed with another key or changed: never a wrong secret.
      const text = Buffer.concat([
        decipher.update(blob.subarray(1 + NONCE_BYTES + TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8');
      return parseSecrets(JSON.parse(text));
    },
  };
}

function parseSecrets(value: unknown): ChannelSecrets {
  if (typeof value !== 'object' || value === null) throw new Error('sealed secrets: not an object');
  const secrets: ChannelSecrets = {};
  for (const name of ['token', 'secret', 'smtpPassword'] as const) {
    const field: unknown = Reflect.get(value, name);
    if (typeof field === 'string') secrets[name] = field;
  }
  return secrets;
}

// Strict base64 of exactly 32 bytes: Buffer.from skips what is not base64, so a key that was cut
// or mistyped would otherwise turn silently into another key.
function parseKey(text: string, where: string): Buffer {
  const trimmed = text.trim();
  const key = Buffer.from(trimmed, 'base64');
  if (key.length !== KEY_BYTES || key.toString('base64') !== trimmed) {
    throw new Error(
      `${where} must be the base64 of ${KEY_BYTES} random bytes (openssl rand -base64 32)`,
    );
  }
  return key;
}

async function loadKeyFile(path: string, logger: Logger): Promise<Buffer> {
  const existing = await readKeyFile(path, logger);
  if (existing) return existing;
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  // Written whole under another name, then linked into place: a replica starting at the same
  // time never reads half a key, and link fails when another process' key got there first.
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}`;
  await writeFile(temporary, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { mode: 0o600 });
  try {
    await link(temporary, path);
    logger.info(
      { path },
      'generated the secret key that seals notification secrets; back up this file (make backup does), or set JARVIS_SECRET_KEY',
    );
  } catch (error) {
    if (!isCode(error, 'EEXIST')) throw error;
  } finally {
    await unlink(temporary);
  }
  const key = await readKeyFile(path, logger);
  if (!key) throw new Error(`${path} vanished while it was being created`);
  return key;
}

async function readKeyFile(path: string, logger: Logger): Promise<Buffer | undefined> {
  try {
    const [text, info] = await Promise.all([readFile(path, 'utf8'), stat(path)]);
    // A warning, not a refusal: a restore may have widened the mode, and the install still works.
    if ((info.mode & 0o077) !== 0) {
      logger.warn({ path }, 'the secret key file is open to other users: chmod 600 it');
    }
    return parseKey(text, path);
  } catch (error) {
    if (isCode(error, 'ENOENT')) return undefined;
    throw error;
  }
}

function isCode(error: unknown, code: string): boolean {
  return error instanceof Error && 'code' in error && error.code === code;
}

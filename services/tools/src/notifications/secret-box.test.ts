import { randomBytes } from 'node:crypto';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createLogger } from '@jarvis/telemetry';
import { makeTempDir } from '@jarvis/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { createSecretBox, loadSecretBox } from './secret-box';

const dirs: { remove(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => dir.remove()));
});

async function tempDir(): Promise<string> {
  const dir = await makeTempDir('secret-box');
  dirs.push(dir);
  return dir.path;
}

// A logger whose lines the test reads.
function capturingLogger() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: createLogger('tools-test', 'info', sink), lines };
}

describe('the secret box', () => {
  it('opens what it sealed, and each seal is new (a fresh nonce)', () => {
    const box = createSecretBox(randomBytes(32));
    const secrets = { token: 'tk_live_123', smtpPassword: 'hunter2' };

    const first = box.seal(secrets);
    const second = box.seal(secrets);

    expect(box.open(first)).toEqual(secrets);
    expect(first.equals(second)).toBe(false);
    expect(first[0]).toBe(1);
    expect(first.toString('latin1')).not.toContain('hunter2');
  });

  it('refuses a blob sealed with another key, changed, or of an unknown version', () => {
    const box = createSecretBox(randomBytes(32));
    const sealed = box.seal({ secret: 'whsec-0123456789abcdef' });

    expect(() => createSecretBox(randomBytes(32)).open(sealed)).toThrow();
    const changed = Buffer.from(sealed);
    changed[changed.length - 1] = (changed[changed.length - 1] ?? 0) ^ 1;
    expect(() => box.open(changed)).toThrow();
    const otherVersion = Buffer.from(sealed);
    otherVersion[0] = 2;
    expect(() => box.open(otherVersion)).toThrow(/unknown format/);
  });
});

describe('loadSecretBox', () => {
  it('takes JARVIS_SECRET_KEY and writes no file', async () => {
    const dir = await tempDir();
    const key = randomBytes(32);
    const { logger } = capturingLogger();
    const file = join(dir, 'secret.key');

    const box = await loadSecretBox(
      { JARVIS_SECRET_KEY: key.toString('base64'), JARVIS_SECRET_KEY_FILE: file },
      logger,
    );

    expect(createSecretBox(key).open(box.seal({ token: 't' }))).toEqual({ token: 't' });
    await expect(stat(file)).rejects.toThrow(/ENOENT/);
  });

  it('refuses a key that is not the base64 of 32 bytes', async () => {
    const { logger } = capturingLogger();
    const file = join(await tempDir(), 'secret.key');
    for (const bad of [randomBytes(16).toString('base64'), 'not base64 at all!', '']) {
      await expect(
        loadSecretBox({ JARVIS_SECRET_KEY: bad, JARVIS_SECRET_KEY_FILE: file }, logger),
      ).rejects.toThrow(/JARVIS_SECRET_KEY must be the base64 of 32 random bytes/);
    }
  });

  it('creates the key file on first start (0600, logged without the key) and reads it after', async () => {
    const dir = await tempDir();
    const file = join(dir, 'secrets', 'secret.key');
    const { logger, lines } = capturingLogger();

    const first = await loadSecretBox({ JARVIS_SECRET_KEY_FILE: file }, logger);
    const sealed = first.seal({ secret: 'whsec-0123456789abcdef' });
    const second = await loadSecretBox({ JARVIS_SECRET_KEY_FILE: file }, logger);

    expect(second.open(sealed)).toEqual({ secret: 'whsec-0123456789abcdef' });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const key = (await readFile(file, 'utf8')).trim();
    expect(Buffer.from(key, 'base64')).toHaveLength(32);
    // Said once, by the start that made it; the key itself never.
    expect(lines.filter((line) => line.includes('generated the secret key'))).toHaveLength(1);
    expect(lines.join('')).toContain(file);
    expect(lines.join('')).not.toContain(key);
  });

  it('gives replicas starting together one key', async () => {
    const file = join(await tempDir(), 'secret.key');
    const { logger } = capturingLogger();

    const boxes = await Promise.all(
      Array.from({ length: 8 }, () => loadSecretBox({ JARVIS_SECRET_KEY_FILE: file }, logger)),
    );

    const sealed = boxes[0]?.seal({ token: 'shared' });
    if (!sealed) throw new Error('no box');
    for (const box of boxes) expect(box.open(sealed)).toEqual({ token: 'shared' });
  });

  it('refuses a key file that holds no key, and warns of one others can read', async () => {
    const dir = await tempDir();
    const { logger, lines } = capturingLogger();
    const broken = join(dir, 'broken.key');
    await writeFile(broken, 'short\n', { mode: 0o600 });
    await expect(loadSecretBox({ JARVIS_SECRET_KEY_FILE: broken }, logger)).rejects.toThrow(
      /must be the base64 of 32 random bytes/,
    );

    await mkdir(join(dir, 'open'));
    const open = join(dir, 'open', 'secret.key');
    await writeFile(open, randomBytes(32).toString('base64'), { mode: 0o644 });
    await loadSecretBox({ JARVIS_SECRET_KEY_FILE: open }, logger);
    expect(lines.join('')).toContain('open to other users');
  });
});

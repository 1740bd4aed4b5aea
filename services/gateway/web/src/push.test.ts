import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeBase64Url } from './push';

describe('decodeBase64Url', () => {
  it('gives the raw bytes of a VAPID public key, as web-push prints it', () => {
    // web-push's generateVAPIDKeys prints the uncompressed P-256 point base64url-encoded.
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-65);
    const bytes = decodeBase64Url(raw.toString('base64url'));
    expect(bytes).toHaveLength(65);
    expect(bytes[0]).toBe(4);
    expect(Buffer.from(bytes).equals(raw)).toBe(true);
  });

  it('reads the URL-safe letters and a missing padding', () => {
    expect(Array.from(decodeBase64Url('-_8'))).toEqual([0xfb, 0xff]);
    expect(Array.from(decodeBase64Url('AQ'))).toEqual([1]);
    expect(Array.from(decodeBase64Url(''))).toEqual([]);
  });
});

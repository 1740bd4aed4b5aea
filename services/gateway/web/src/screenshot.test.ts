import { describe, expect, it } from 'vitest';
import { asScreenshot } from './screenshot';

const ID = '0b8f5c3e-2f41-4d7a-9c55-3e1f0a6b7d21';
const SHOT = { id: ID, path: `/v1/screenshots/${ID}`, width: 1280, height: 800 };

describe('asScreenshot', () => {
  it('takes a well-formed screenshot, and only its four fields', () => {
    expect(asScreenshot(SHOT)).toEqual(SHOT);
    expect(asScreenshot({ ...SHOT, note: 'x' })).toEqual(SHOT);
  });

  // Its path is fetched with the user's key: nothing but the API's own address of that very
  // screenshot may pass, or a tool result could have the key sent elsewhere.
  it.each([
    ['an absolute URL', { ...SHOT, path: `https://evil.example/v1/screenshots/${ID}` }],
    ['a protocol-relative URL', { ...SHOT, path: `//evil.example/v1/screenshots/${ID}` }],
    ['another endpoint', { ...SHOT, path: '/v1/keys' }],
    ['a path with a query', { ...SHOT, path: `/v1/screenshots/${ID}?x=1` }],
    ["another screenshot's path", { ...SHOT, path: `/v1/screenshots/${ID.replace('0b', '1b')}` }],
    ['a width of 0', { ...SHOT, width: 0 }],
    ['a fractional height', { ...SHOT, height: 1.5 }],
    ['a size as text', { ...SHOT, width: '1280' }],
    ['nothing', undefined],
    ['a string', SHOT.path],
  ])('refuses %s', (_label, value) => {
    expect(asScreenshot(value)).toBeUndefined();
  });
});

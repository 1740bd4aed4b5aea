import { describe, expect, it } from 'vitest';
import { screenshotOf, screenshotPath } from './tools-screenshots';

const ID = '0b8f5c3e-2f41-4d7a-9c55-3e1f0a6b7d21';
const SHOT = { id: ID, path: screenshotPath(ID), width: 1280, height: 800 };

describe('screenshotOf', () => {
  it("takes a tool result's screenshot, and nothing else of the result", () => {
    expect(screenshotOf({ title: 'Example', screenshot: SHOT })).toEqual(SHOT);
    expect(screenshotOf({ screenshot: { ...SHOT, extra: 'x' } })).toEqual(SHOT);
  });

  // The web UI fetches `path` with the user's key: anything but the API's own screenshot
  // address, a page could use to have the key sent where it chooses.
  it.each([
    ['an absolute URL', { ...SHOT, path: `https://evil.example/v1/screenshots/${ID}` }],
    ['a protocol-relative URL', { ...SHOT, path: `//evil.example/v1/screenshots/${ID}` }],
    ['another endpoint', { ...SHOT, path: '/v1/keys' }],
    ['a path that climbs out', { ...SHOT, path: `/v1/screenshots/../keys/${ID.slice(8)}` }],
    [
      'the address of another screenshot',
      { ...SHOT, path: screenshotPath(ID.replace('0b8f', '1b8f')) },
    ],
    ['a size that is no size', { ...SHOT, width: 0 }],
    ['an id that is no uuid', { ...SHOT, id: 'x' }],
  ])('refuses %s', (_label, screenshot) => {
    expect(screenshotOf({ screenshot })).toBeUndefined();
  });

  it.each([[null], ['text'], [[SHOT]], [{}]])('finds none in %j', (result) => {
    expect(screenshotOf(result)).toBeUndefined();
  });
});

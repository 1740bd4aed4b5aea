import { describe, expect, it } from 'vitest';
import {
  isWorkspacePath,
  newWorkspaceBlobName,
  toolFilesOf,
  workspaceFileUrl,
} from './tools-workspaces';

const ID = '0b8f5c3e-2f41-4d7a-9c55-3e1f0a6b7d21';

describe('isWorkspacePath', () => {
  it.each([
    ['a name', 'chart.png'],
    ['a sub-folder', 'out/plots/chart.png'],
    ['a dot file', '.config'],
    ['dots inside a name', 'a..b/...'],
    ['spaces and non-ASCII letters', 'Rapport final/résumé 2026.pdf'],
    ['an emoji (a surrogate pair)', 'ok-😀.txt'],
    ['a 255-byte name', 'a'.repeat(255)],
    ['16 segments', Array.from({ length: 16 }, () => 'd').join('/')],
    ['512 characters', `${'a'.repeat(255)}/${'b'.repeat(254)}/x`],
  ])('takes %s', (_label, path) => {
    expect(isWorkspacePath(path)).toBe(true);
  });

  it.each([
    ['an empty path', ''],
    ['an absolute path', '/etc/passwd'],
    ['a parent segment', '../secrets'],
    ['a parent segment inside', 'a/../../b'],
    ['a parent segment at the end', 'a/..'],
    ['a dot segment', './a'],
    ['an empty segment', 'a//b'],
    ['a trailing slash', 'a/'],
    ['a backslash', 'a\\..\\b'],
    ['a NUL', 'a\u0000b'],
    ['a newline', 'a\nb'],
    ['DEL', 'a\u007fb'],
    ['a C1 control', 'a\u0085b'],
    ['half a surrogate pair', 'a\uD800b'],
    ['a 256-byte name', 'a'.repeat(256)],
    ['a name of 128 two-byte letters (256 bytes)', 'é'.repeat(128)],
    ['17 segments', Array.from({ length: 17 }, () => 'd').join('/')],
    ['513 characters', `${'a'.repeat(255)}/${'b'.repeat(254)}/xy`],
  ])('refuses %s', (_label, path) => {
    expect(isWorkspacePath(path)).toBe(false);
  });
});

describe('workspaceFileUrl', () => {
  it("encodes each segment on its own, keeping '/' as the separator", () => {
    expect(workspaceFileUrl('conversation', ID, 'out/my chart#1?.png')).toBe(
      `/v1/workspaces/conversation/${ID}/files/out/my%20chart%231%3F.png`,
    );
    expect(workspaceFileUrl('mission', ID, 'résumé.txt')).toBe(
      `/v1/workspaces/mission/${ID}/files/r%C3%A9sum%C3%A9.txt`,
    );
  });

  it('gives a URL the URL parser keeps as it is', () => {
    const url = workspaceFileUrl('conversation', ID, 'a b/%2F/c.png');
    expect(new URL(url, 'http://localhost').pathname).toBe(url);
    expect(url.endsWith('/files/a%20b/%252F/c.png')).toBe(true);
  });
});

describe('toolFilesOf', () => {
  const chart = {
    path: 'out/chart.png',
    size: 1234,
    mediaType: 'image/png',
    url: workspaceFileUrl('conversation', ID, 'out/chart.png'),
  };
  const unkept = { path: 'tmp.csv', size: 10, mediaType: 'text/csv' };

  it("takes a tool result's files, and nothing else of them", () => {
    expect(toolFilesOf({ stdout: '', files: [chart, unkept] })).toEqual([chart, unkept]);
    expect(toolFilesOf({ files: [{ ...chart, extra: 'x' }] })).toEqual([chart]);
  });

  // The web UI fetches `url` with the user's key: anything but the API's own address of that very
  // file, a run could use to have the key sent where it chooses.
  it.each([
    ['an absolute URL', `https://evil.example${chart.url}`],
    ['a protocol-relative URL', `//evil.example${chart.url}`],
    ['another endpoint', '/v1/keys'],
    ['a path that climbs out', `/v1/workspaces/conversation/${ID}/files/../../../keys`],
    ['an encoded slash', `/v1/workspaces/conversation/${ID}/files/out%2Fchart.png`],
    ['another file', workspaceFileUrl('conversation', ID, 'other.png')],
    ['another kind', `/v1/workspaces/user/${ID}/files/out/chart.png`],
    ['an id that is no uuid', '/v1/workspaces/conversation/x/files/out/chart.png'],
    ['a query', `${chart.url}?download=1`],
  ])('leaves out a file whose url is %s', (_label, url) => {
    expect(toolFilesOf({ files: [{ ...chart, url }, unkept] })).toEqual([unkept]);
  });

  it('leaves out a file whose path is no workspace path', () => {
    const climbing = {
      ...chart,
      path: '../x.png',
      url: `/v1/workspaces/conversation/${ID}/files/../x.png`,
    };
    expect(toolFilesOf({ files: [climbing] })).toBeUndefined();
  });

  it.each([
    [null],
    ['text'],
    [[chart]],
    [{}],
    [{ files: chart }],
    [{ files: [] }],
    [{ files: [{ path: 'a', size: -1, mediaType: 'text/plain' }] }],
  ])('finds none in %j', (result) => {
    expect(toolFilesOf(result)).toBeUndefined();
  });
});

describe('newWorkspaceBlobName', () => {
  it('names a fresh object each time', () => {
    const name = newWorkspaceBlobName();
    expect(name).toMatch(/^workspace-[0-9a-f-]{36}$/);
    expect(newWorkspaceBlobName()).not.toBe(name);
  });
});

import { isWorkspacePath as contractPath, workspaceFileUrl } from '@jarvis/contracts';
import { describe, expect, it } from 'vitest';
import {
  asToolFiles,
  fileNameOf,
  isInlineImage,
  isWorkspaceFileUrl,
  isWorkspacePath,
  workspaceFilePath,
} from './workspace-files';

const ID = '0b8f5c3e-2f41-4d7a-9c55-3e1f0a6b7d21';
const CHART = {
  path: 'charts/tide.png',
  size: 2048,
  mediaType: 'image/png',
  url: `/v1/workspaces/conversation/${ID}/files/charts/tide.png`,
};

// Paths of every kind the two rules must agree on, good and bad.
const PATHS = [
  'a.txt',
  'charts/tide.png',
  'name with spaces & signs?#%.csv',
  'naïve/日本語.txt',
  'emoji 🌊.png',
  `${'x'.repeat(255)}`,
  `${'é'.repeat(128)}`,
  Array.from({ length: 16 }, () => 'd').join('/'),
  Array.from({ length: 17 }, () => 'd').join('/'),
  '',
  '/abs',
  'a//b',
  'a/',
  '.',
  '..',
  'a/../b',
  'a\\b',
  'tab\there',
  'del\u007f',
  'c1\u0085',
  'lone\uD800',
  'x'.repeat(513),
];

describe('workspace file addresses', () => {
  // The page keeps its own copy of these rules (the contracts' index would bring zod into the
  // bundle): it must spell every address exactly as the server does, and judge paths alike.
  it.each(PATHS)('agrees with the contracts on %j', (path) => {
    expect(isWorkspacePath(path)).toBe(contractPath(path));
    if (contractPath(path)) {
      expect(workspaceFilePath('mission', ID, path)).toBe(workspaceFileUrl('mission', ID, path));
    }
  });

  it('encodes each segment and keeps the slashes between them', () => {
    expect(workspaceFilePath('conversation', ID, 'a b/c?.txt')).toBe(
      `/v1/workspaces/conversation/${ID}/files/a%20b/c%3F.txt`,
    );
  });
});

describe('isWorkspaceFileUrl', () => {
  it("takes the API's own address of that very file", () => {
    expect(isWorkspaceFileUrl(CHART.url, CHART.path)).toBe(true);
    expect(isWorkspaceFileUrl(`/v1/workspaces/mission/${ID}/files/a%20b.csv`, 'a b.csv')).toBe(
      true,
    );
  });

  // The url is fetched with the user's key: nothing but that address may pass.
  it.each([
    ['an absolute URL', `https://evil.example${CHART.url}`],
    ['a protocol-relative URL', `//evil.example${CHART.url}`],
    ['another endpoint', '/v1/keys'],
    ['a query', `${CHART.url}?x=1`],
    ['a fragment', `${CHART.url}#x`],
    ['another kind', CHART.url.replace('conversation', 'user')],
    ['an id that is no uuid', CHART.url.replace(ID, 'me')],
    ['another file', CHART.url.replace('tide', 'wave')],
    ['a dot-dot segment', `/v1/workspaces/conversation/${ID}/files/charts/../../../../keys`],
    ['an encoded dot-dot', `/v1/workspaces/conversation/${ID}/files/charts/%2e%2e/tide.png`],
    ['an encoded slash', `/v1/workspaces/conversation/${ID}/files/charts%2Ftide.png`],
    ['another spelling of a letter', `/v1/workspaces/conversation/${ID}/files/charts/tid%65.png`],
  ])('refuses %s', (_label, url) => {
    expect(isWorkspaceFileUrl(url, CHART.path)).toBe(false);
  });

  it('refuses a path that is no workspace path, whatever the url', () => {
    expect(isWorkspaceFileUrl(`/v1/workspaces/conversation/${ID}/files/..`, '..')).toBe(false);
  });
});

describe('asToolFiles', () => {
  it('takes well-formed files, with or without a url, and only their fields', () => {
    const unkept = { path: 'big.bin', size: 30_000_000, mediaType: 'application/octet-stream' };
    expect(asToolFiles([{ ...CHART, note: 'x' }, unkept])).toEqual([CHART, unkept]);
  });

  it('leaves out a file whose url is not its own address, and malformed entries', () => {
    expect(
      asToolFiles([
        CHART,
        { ...CHART, url: 'https://evil.example/x.png' },
        { ...CHART, size: -1 },
        { ...CHART, size: '2048' },
        { path: 1, size: 1, mediaType: 'text/plain' },
        null,
        'charts/tide.png',
      ]),
    ).toEqual([CHART]);
  });

  it('gives nothing for no files', () => {
    expect(asToolFiles(undefined)).toBeUndefined();
    expect(asToolFiles([])).toBeUndefined();
    expect(asToolFiles({ files: [CHART] })).toBeUndefined();
    expect(asToolFiles([{ ...CHART, url: '/v1/keys' }])).toBeUndefined();
  });
});

describe('isInlineImage', () => {
  it.each([
    'image/png',
    'image/jpeg',
    'image/gif',
    'image/webp',
    'IMAGE/PNG',
    'image/png; x=1',
  ])('shows %s inline', (type) => {
    expect(isInlineImage(type)).toBe(true);
  });

  // SVG and HTML can carry script: they are only ever downloads.
  it.each([
    'image/svg+xml',
    'text/html',
    'application/xhtml+xml',
    'application/pdf',
    'image/bmp',
    '',
  ])('never shows %s inline', (type) => {
    expect(isInlineImage(type)).toBe(false);
  });
});

describe('fileNameOf', () => {
  it('is the last segment', () => {
    expect(fileNameOf('charts/tide.png')).toBe('tide.png');
    expect(fileNameOf('notes.txt')).toBe('notes.txt');
  });
});

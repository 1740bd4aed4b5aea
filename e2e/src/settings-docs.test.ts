import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The settings users are told about must be ones something reads: a setting in an example file
// or a table that nothing reads is set by users to no effect, as ANTHROPIC_CHAT_MODEL was.
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

function envFiles(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('env.ts') && !name.includes('node_modules'))
    .map((name) => join(folder, name));
}

// What the services read (a key of an env.ts schema) and what compose itself reads (${VAR}).
function readSettings(): Set<string> {
  const names = new Set<string>();
  const sources = [
    ...readdirSync(join(ROOT, 'services'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .flatMap((service) => envFiles(`services/${service.name}/src`)),
    'packages/service-kit/src/env.ts',
  ];
  for (const source of sources) {
    for (const match of read(source).matchAll(/^\s+([A-Z][A-Z0-9_]+):/gm))
      names.add(match[1] ?? '');
  }
  for (const compose of ['compose.yaml', 'compose.prod.yaml', 'compose.observability.yaml']) {
    for (const match of read(compose).matchAll(/\$\{([A-Z][A-Z0-9_]+)/g)) names.add(match[1] ?? '');
  }
  // Compose's own: which files make up the stack (the observability overlay is turned on with it).
  names.add('COMPOSE_FILE');
  return names;
}

// KEY=value lines, set or commented out.
function exampleSettings(path: string): string[] {
  return [...read(path).matchAll(/^#? ?([A-Z][A-Z0-9_]+)=/gm)].map((match) => match[1] ?? '');
}

// The variables named in the first column of a Markdown table.
function tableSettings(path: string): string[] {
  return read(path)
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .flatMap((line) => [...(line.split('|')[1] ?? '').matchAll(/`([A-Z][A-Z0-9_]+)`/g)])
    .map((match) => match[1] ?? '');
}

describe('documented settings', () => {
  const known = readSettings();

  it.each([
    ['.env.example', exampleSettings('.env.example')],
    ['infra/prod.env.example', exampleSettings('infra/prod.env.example')],
    ['README.md', tableSettings('README.md')],
    ['docs/configuration.md', tableSettings('docs/configuration.md')],
  ])('%s names only settings that something reads', (_file, names) => {
    expect(names.length).toBeGreaterThan(5);
    expect(names.filter((name) => !known.has(name))).toEqual([]);
  });
});

describe('the README', () => {
  // It is for users: the measurement diary, the full route and settings tables and the search
  // algorithm live in docs/ and the services' READMEs, where it links.
  it('stays short', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(250);
  });
});

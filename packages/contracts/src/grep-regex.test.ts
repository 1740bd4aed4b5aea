import { describe, expect, it } from 'vitest';
import { describeGrepRegexProblem } from './grep-regex';
import { FilesGrepQuery, MemoryFilesGrepRequest } from './memory-files';

describe('describeGrepRegexProblem', () => {
  it.each([
    '^todo:',
    'foo|bar',
    '\\d{4}-\\d{2}',
    '^ABC[0-9]$',
    '[[:alpha:]]+ing\\y',
    '(https?://)?example\\.com',
    '[0-9a-f]{64}',
    '(ab|a)*c',
    '(^todo)?\\y',
    '\\\\1',
    '.*',
  ])('accepts %s', (pattern) => {
    expect(describeGrepRegexProblem(pattern)).toBeUndefined();
  });

  it.each([
    ['(a{1,255}){1,255}', /^a repetition may repeat at most 100 times, not \{1,255\}$/],
    ['x{101}', /^a repetition may repeat at most 100 times, not \{101\}$/],
    ['x{200,}', /at most 100 times, not \{200,\}$/],
    ['(.*){1,20}x', /^a repeated group must not contain another repetition/],
    ['(a+)+$', /^a repeated group must not contain another repetition/],
    ['((a|b)*)*', /^a repeated group must not contain another repetition/],
    ['(?=a+)*', /^a repeated group must not contain another repetition/],
    ['(a{10}){10}', /^a repeated group must not contain another repetition/],
    [
      '(a{20})?(b{20})?.{61}',
      /^too complex: its repetitions expand to 101 positions, at most 100$/,
    ],
    ['.{50}x|.{50}y|z+', /^too complex: its repetitions expand to 101 positions/],
    ['(ab|c){34}', /^too complex: its repetitions expand to 102 positions/],
    ['(\\y){20,}', /^a repetition must not repeat an anchor, a word boundary or a lookaround/],
    ['\\m+', /^a repetition must not repeat an anchor/],
    ['(^|a){5}', /^a repetition must not repeat an anchor/],
    ['(?=a){3}', /^a repetition must not repeat an anchor/],
    ['(a)\\1', /^backreferences are not supported$/],
    ['a\\1', /^backreferences are not supported$/],
    ['(?<n>a)\\k<n>', /^backreferences are not supported$/],
    ['(', /^invalid regular expression: unterminated group$/],
    ['(?i)abc', /^invalid regular expression: invalid group$/],
    ['***=a', /^invalid regular expression: nothing to repeat$/],
  ])('refuses %s', (pattern, message) => {
    expect(describeGrepRegexProblem(pattern)).toMatch(message);
  });

  it('counts a repetition as its bound times what it repeats, and adds them up', () => {
    expect(describeGrepRegexProblem('(ab|c){33}x')).toBeUndefined();
    expect(describeGrepRegexProblem('(a{50})?.{50}')).toBeUndefined();
    expect(describeGrepRegexProblem('(a{50})?.{51}')).toMatch(/expand to 101 positions/);
  });
});

describe('the grep contracts', () => {
  it('refuse an unsafe regex on the bus and over HTTP, naming the pattern', () => {
    const userId = '00000000-0000-4000-8000-000000000000';
    const bus = MemoryFilesGrepRequest.safeParse({ userId, pattern: 'x{300}', isRegex: true });
    const http = FilesGrepQuery.safeParse({ pattern: 'x{300}', isRegex: 'true' });

    expect(bus.error?.issues).toMatchObject([{ path: ['pattern'] }]);
    expect(http.error?.issues).toMatchObject([{ path: ['pattern'] }]);
  });

  it('take the same pattern as a substring when it is not a regex', () => {
    const parsed = FilesGrepQuery.safeParse({ pattern: 'x{300}' });

    expect(parsed.success).toBe(true);
  });
});

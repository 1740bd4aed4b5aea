import { FACT_CONTENT_MAX_CHARS } from '@jarvis/contracts';
import { describe, expect, it } from 'vitest';
import { parseRememberCommand } from './remember-command';

describe('parseRememberCommand', () => {
  it.each([
    ['remember that my passport expires in May 2027', 'my passport expires in May 2027'],
    ['Remember that my passport expires in May 2027.', 'my passport expires in May 2027.'],
    ['  please remember: the wifi password is hunter2 ', 'the wifi password is hunter2'],
    ['Please Remember, Ana is allergic to nuts', 'Ana is allergic to nuts'],
    ['REMEMBER THAT I park on level 3', 'I park on level 3'],
    ['remember I take the 8:15 train', 'I take the 8:15 train'],
    ['remember that\nline one\nline two', 'line one\nline two'],
  ])('%j stores %j', (message, fact) => {
    expect(parseRememberCommand(message)).toBe(fact);
  });

  it.each([
    'do you remember my passport expiry?',
    'Do you remember that I moved to Porto?',
    'I remember that trip to Lisbon fondly',
    'remembering that is hard',
    'remember when we met?',
    'remember that ok?',
    'remember that',
    'remember: ab',
    'please remember',
    'what should I remember that for',
  ])('%j asks for nothing to be stored', (message) => {
    expect(parseRememberCommand(message)).toBeUndefined();
  });

  it('leaves a fact too long to store to extraction', () => {
    const long = `remember that ${'x'.repeat(FACT_CONTENT_MAX_CHARS + 1)}`;
    expect(parseRememberCommand(long)).toBeUndefined();
    expect(
      parseRememberCommand(`remember that ${'x'.repeat(FACT_CONTENT_MAX_CHARS)}`),
    ).toHaveLength(FACT_CONTENT_MAX_CHARS);
  });
});

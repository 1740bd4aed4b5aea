import { describe, expect, it } from 'vitest';
import {
  formatCost,
  formatDuration,
  splitFieldError,
  summariseArguments,
  truncate,
} from './format';

describe('summariseArguments', () => {
  it('shows each argument briefly on one line', () => {
    expect(
      summariseArguments({ path: 'notes/a.md', limit: 5, tags: ['a', 'b'], filter: { x: 1 } }),
    ).toBe('path: "notes/a.md", limit: 5, tags: [2 items], filter: {…}');
  });

  it('cuts long strings and long lines', () => {
    const summary = summariseArguments({ query: 'x'.repeat(100), other: 'y'.repeat(100) }, 60);
    expect(summary).toHaveLength(60);
    expect(summary.endsWith('…')).toBe(true);
    expect(summariseArguments({ query: 'x'.repeat(100) })).toBe(`query: "${'x'.repeat(39)}…"`);
  });
});

describe('number formats', () => {
  it('reads durations in the unit that fits', () => {
    expect(formatDuration(42)).toBe('42 ms');
    expect(formatDuration(1_250)).toBe('1.3 s');
    expect(formatDuration(125_000)).toBe('2 min 5 s');
  });

  it('shows small costs with enough digits', () => {
    expect(formatCost(0)).toBe('$0');
    expect(formatCost(0.00123)).toBe('$0.0012');
    expect(formatCost(1.5)).toBe('$1.50');
  });

  it('truncates with an ellipsis within the limit', () => {
    expect(truncate('abcdef', 4)).toBe('abc…');
    expect(truncate('abc', 4)).toBe('abc');
  });
});

describe('splitFieldError', () => {
  const fields = ['url', 'smtp.port'];

  it("puts a message naming one of the form's fields beside it", () => {
    expect(splitFieldError('url: Invalid URL', fields)).toEqual({
      field: 'url',
      text: 'Invalid URL',
    });
    expect(splitFieldError('channel.url: a private address', fields)).toEqual({
      field: 'url',
      text: 'a private address',
    });
    expect(splitFieldError('smtp.port: Too big', fields)).toEqual({
      field: 'smtp.port',
      text: 'Too big',
    });
  });

  it('keeps any other message whole', () => {
    expect(splitFieldError('topic: letters', fields)).toEqual({ text: 'topic: letters' });
    expect(splitFieldError('the server answered 500', fields)).toEqual({
      text: 'the server answered 500',
    });
  });
});

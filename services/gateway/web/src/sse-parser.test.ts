import { describe, expect, it } from 'vitest';
import { createSseParser } from './sse-parser';

describe('createSseParser', () => {
  it('parses named events with JSON data', () => {
    const parser = createSseParser();
    const events = parser.push(
      'event: delta\ndata: {"text":"Hel"}\n\nevent: done\ndata: {"runId":"r1"}\n\n',
    );
    expect(events).toEqual([
      { event: 'delta', data: '{"text":"Hel"}' },
      { event: 'done', data: '{"runId":"r1"}' },
    ]);
  });

  it('completes events split across chunks anywhere, including inside \\r\\n', () => {
    const parser = createSseParser();
    const text = 'event: delta\r\ndata: {"text":"a"}\r\n\r\nevent: delta\rdata: {"text":"b"}\r\r';
    const events = [];
    for (const char of text) events.push(...parser.push(char));
    expect(events).toEqual([
      { event: 'delta', data: '{"text":"a"}' },
      { event: 'delta', data: '{"text":"b"}' },
    ]);
  });

  it('joins data lines, skips comments and data-less events, and keeps the last id', () => {
    const parser = createSseParser();
    const events = parser.push(
      ': keep-alive\n\nid: 7\ndata: one\ndata:two\n\nevent: ping\n\ndata\n\n',
    );
    expect(events).toEqual([
      { event: 'message', data: 'one\ntwo', id: '7' },
      { event: 'message', data: '', id: '7' },
    ]);
  });

  it('holds an unfinished event until its blank line arrives', () => {
    const parser = createSseParser();
    expect(parser.push('event: done\ndata: {}\n')).toEqual([]);
    expect(parser.push('\n')).toEqual([{ event: 'done', data: '{}' }]);
  });
});

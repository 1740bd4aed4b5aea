import { describe, expect, it } from 'vitest';
import { noticeFromPush, sameOriginPath } from './sw-payload';

const ORIGIN = 'https://jarvis.example.org';

describe('sameOriginPath', () => {
  it('keeps a same-origin path with its query and fragment', () => {
    expect(sameOriginPath('/approvals', ORIGIN)).toBe('/approvals');
    expect(sameOriginPath('/chat?conversation=c1#m9', ORIGIN)).toBe('/chat?conversation=c1#m9');
    expect(sameOriginPath(`${ORIGIN}/runs/r1`, ORIGIN)).toBe('/runs/r1');
  });

  it('sends anything off this origin to the root', () => {
    expect(sameOriginPath('https://evil.example/approvals', ORIGIN)).toBe('/');
    expect(sameOriginPath('//evil.example/x', ORIGIN)).toBe('/');
    expect(sameOriginPath('javascript:alert(1)', ORIGIN)).toBe('/');
    expect(sameOriginPath('data:text/html,<script>1</script>', ORIGIN)).toBe('/');
    expect(sameOriginPath('http://jarvis.example.org/approvals', ORIGIN)).toBe('/');
    expect(sameOriginPath(42, ORIGIN)).toBe('/');
    expect(sameOriginPath(undefined, ORIGIN)).toBe('/');
  });
});

describe('noticeFromPush', () => {
  it('reads the tools service payload', () => {
    const payload = JSON.stringify({
      title: 'Reminder',
      body: 'Call the dentist',
      url: '/chat',
      tag: 'schedule-s1',
    });
    expect(noticeFromPush(payload, ORIGIN)).toEqual({
      title: 'Reminder',
      options: { body: 'Call the dentist', tag: 'schedule-s1', data: { url: '/chat' } },
    });
  });

  it('still shows something for a bare text, an empty message or odd fields', () => {
    expect(noticeFromPush('hello', ORIGIN)).toEqual({
      title: 'Jarvis',
      options: { body: 'hello', data: { url: '/' } },
    });
    expect(noticeFromPush(undefined, ORIGIN)).toEqual({
      title: 'Jarvis',
      options: { body: '', data: { url: '/' } },
    });
    expect(noticeFromPush('[1,2]', ORIGIN).title).toBe('Jarvis');
    expect(noticeFromPush('"just a string"', ORIGIN).options.body).toBe('"just a string"');
    const odd = noticeFromPush(
      JSON.stringify({ title: 7, body: null, url: 'https://x.test/' }),
      ORIGIN,
    );
    expect(odd).toEqual({ title: 'Jarvis', options: { body: '', data: { url: '/' } } });
  });

  it('cuts an overlong title and body', () => {
    const notice = noticeFromPush(
      JSON.stringify({ title: 't'.repeat(500), body: 'b'.repeat(5000) }),
      ORIGIN,
    );
    expect(notice.title).toHaveLength(120);
    expect(notice.options.body).toHaveLength(1000);
  });
});

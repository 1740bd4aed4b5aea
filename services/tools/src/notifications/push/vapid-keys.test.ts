import { describe, expect, it } from 'vitest';
import { vapidSubject } from './vapid-keys';

describe('vapidSubject', () => {
  it('takes VAPID_SUBJECT, else an https PUBLIC_URL, else the placeholder', () => {
    expect(
      vapidSubject({ VAPID_SUBJECT: 'mailto:me@example.com', PUBLIC_URL: 'https://a.example' }),
    ).toBe('mailto:me@example.com');
    expect(vapidSubject({ PUBLIC_URL: 'https://jarvis.example.com/app/' })).toBe(
      'https://jarvis.example.com',
    );
    // Push services take only mailto: and https: subjects.
    expect(vapidSubject({ PUBLIC_URL: 'http://jarvis.lan' })).toBe('mailto:admin@jarvis.invalid');
    expect(vapidSubject({})).toBe('mailto:admin@jarvis.invalid');
  });
});

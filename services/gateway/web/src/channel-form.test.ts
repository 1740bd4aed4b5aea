import type { Channel } from '@jarvis/contracts';
import { describe, expect, it } from 'vitest';
import { bodyOf, initialValues, storedSecret } from './channel-form';

const MASK = '********';
const UPDATED = '2026-11-28T10:00:00.000Z';

describe('bodyOf', () => {
  it('leaves out an empty secret, so that the stored one is kept', () => {
    const body = bodyOf(
      'webhook',
      { url: ' https://h.example/x ', secret: '', format: 'jarvis' },
      false,
      ['reminder'],
    );
    expect(body).toEqual({
      url: 'https://h.example/x',
      secret: undefined,
      format: 'jarvis',
      events: ['reminder'],
    });
    expect(JSON.parse(JSON.stringify(body))).not.toHaveProperty('secret');
  });

  it('sends numbers as numbers, and what is not one as NaN for the API to name', () => {
    expect(
      bodyOf('ntfy', { url: 'https://ntfy.sh', topic: 't', priority: '4' }, false, []),
    ).toMatchObject({
      priority: 4,
    });
    const email = bodyOf('email', { to: 'a@b.c', 'smtp.host': 'mx', 'smtp.port': 'x' }, true, []);
    expect(email.smtp?.port).toBeNaN();
  });

  it("sends the user's SMTP only when they chose their own server", () => {
    const values = {
      to: 'a@b.c',
      'smtp.host': 'mx.example',
      'smtp.port': '587',
      'smtp.password': 'pw',
    };
    expect(bodyOf('email', values, false, []).smtp).toBeUndefined();
    expect(bodyOf('email', values, true, []).smtp).toMatchObject({
      host: 'mx.example',
      port: 587,
      password: 'pw',
      user: undefined,
    });
  });
});

describe('initialValues and storedSecret', () => {
  const webhook: Channel = {
    type: 'webhook',
    url: 'https://h.example/x',
    format: 'slack',
    secret: MASK,
    events: ['reminder'],
    updatedAt: UPDATED,
  };

  it('fill the form from the channel, never with a secret', () => {
    expect(initialValues(webhook)).toEqual({ url: 'https://h.example/x', format: 'slack' });
    expect(storedSecret(webhook, 'secret')).toBe(MASK);
    expect(storedSecret(webhook, 'url')).toBeUndefined();
  });

  it("keep an email channel's own server, and its password only as the mask", () => {
    const email: Channel = {
      type: 'email',
      to: 'a@b.c',
      smtp: { host: 'mx', port: 465, security: 'tls', password: MASK },
      isConfirmed: true,
      events: [],
      updatedAt: UPDATED,
    };
    expect(initialValues(email)).toEqual({
      to: 'a@b.c',
      'smtp.host': 'mx',
      'smtp.port': '465',
      'smtp.security': 'tls',
      'smtp.user': '',
      'smtp.from': '',
    });
    expect(storedSecret(email, 'smtp.password')).toBe(MASK);
  });

  it('start a new form on the defaults', () => {
    expect(initialValues(undefined)).toEqual({
      priority: '3',
      format: 'jarvis',
      'smtp.security': 'starttls',
    });
  });
});

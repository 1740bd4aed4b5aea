import type { AddressInfo } from 'node:net';
import { createOutboundGuard, OutboundAllowedHosts } from '@jarvis/net-guard';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Notification, SendError, type StoredChannel } from '../channel';
import { type SmtpServerFixture, startSmtpServer } from '../smtp-server-fixture';
import { createEmailSender } from './email';

const guard = createOutboundGuard(OutboundAllowedHosts.parse('127.0.0.1'));
const LOGIN = { user: 'me@example.net', password: 'smtp-pass-0123456789' };

let smtp: SmtpServerFixture;
beforeAll(async () => {
  smtp = await startSmtpServer(LOGIN);
});
afterAll(async () => {
  await smtp?.close();
});

function ownServer(password = LOGIN.password): StoredChannel {
  return {
    userId: '00000000-0000-4000-8000-000000000001',
    type: 'email',
    config: {
      type: 'email',
      to: 'inbox@example.org',
      smtp: { host: smtp.host, port: smtp.port, security: 'none', user: LOGIN.user },
    },
    secrets: { smtpPassword: password },
    events: ['reminder'],
    isConfirmed: true,
    updatedAt: new Date(),
  };
}

const notification: Notification = {
  eventId: 'evt-7',
  kind: 'scheduled_result',
  occurredAt: '2026-11-28T18:00:00.000Z',
  title: 'Morning briefing — Thursday',
  text: 'Three meetings today.\nRain after 4 pm.',
  url: 'https://jarvis.example.com/chat/c9',
};

async function failure(promise: Promise<void>): Promise<SendError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!(error instanceof SendError)) throw new Error(`expected a SendError, got ${String(error)}`);
  return error;
}

describe('the email sender', () => {
  it("mails the notification through the user's own server, logged in", async () => {
    smtp.mails.length = 0;
    const sender = createEmailSender({ guard, installSmtp: undefined, timeoutMs: 5_000 });

    await sender.send(ownServer(), notification, AbortSignal.timeout(10_000));

    expect(smtp.mails).toHaveLength(1);
    const [{ envelope, mail }] = smtp.mails as [(typeof smtp.mails)[number]];
    expect(envelope).toEqual({ from: LOGIN.user, to: ['inbox@example.org'] });
    expect(mail.subject).toBe('Morning briefing — Thursday');
    expect(mail.from?.text).toBe(LOGIN.user);
    expect(mail.to && 'text' in mail.to ? mail.to.text : '').toBe('inbox@example.org');
    expect(mail.headers.get('x-jarvis-event-id')).toBe('evt-7');
    expect(mail.text).toContain('Three meetings today.\nRain after 4 pm.');
    expect(mail.text).toContain('Open in Jarvis: https://jarvis.example.com/chat/c9');
  });

  it("sends through the install's server with its sender when the channel has none", async () => {
    smtp.mails.length = 0;
    const sender = createEmailSender({
      // The install's server is the operator's: no allow-list is needed to reach it.
      guard: createOutboundGuard([]),
      installSmtp: {
        host: smtp.host,
        port: smtp.port,
        security: 'none',
        user: LOGIN.user,
        password: LOGIN.password,
        from: 'jarvis@example.net',
      },
      timeoutMs: 5_000,
    });
    const channel: StoredChannel = {
      ...ownServer(),
      config: { type: 'email', to: 'inbox@example.org' },
      secrets: {},
    };

    await sender.send(channel, notification, AbortSignal.timeout(10_000));

    expect(smtp.mails.map(({ envelope }) => envelope)).toEqual([
      { from: 'jarvis@example.net', to: ['inbox@example.org'] },
    ]);
  });

  it('reports a refused login as final, without the password', async () => {
    const error = await failure(
      createEmailSender({ guard, installSmtp: undefined, timeoutMs: 5_000 }).send(
        ownServer('wrong-password-42'),
        notification,
        AbortSignal.timeout(10_000),
      ),
    );
    expect(error.isRetryable).toBe(false);
    expect(error.message).toMatch(/^127\.0\.0\.1 refused the login/);
    expect(error.message).not.toContain('wrong-password-42');
    expect(error.message).not.toContain(Buffer.from('wrong-password-42').toString('base64'));
  });

  it('retries a recipient refused for now (4xx), and gives up on one refused for good (5xx)', async () => {
    const sender = createEmailSender({ guard, installSmtp: undefined, timeoutMs: 5_000 });
    try {
      smtp.refuseRecipientsWith = 451;
      expect(
        await failure(sender.send(ownServer(), notification, AbortSignal.timeout(10_000))),
      ).toMatchObject({
        isRetryable: true,
      });
      smtp.refuseRecipientsWith = 550;
      const final = await failure(
        sender.send(ownServer(), notification, AbortSignal.timeout(10_000)),
      );
      expect(final.isRetryable).toBe(false);
      expect(final.message).toMatch(/^127\.0\.0\.1 answered 550/);
    } finally {
      smtp.refuseRecipientsWith = undefined;
    }
  });

  it("never connects to a user's server on a private address the operator has not allowed", async () => {
    const connections = smtp.connections;
    const error = await failure(
      createEmailSender({
        guard: createOutboundGuard([]),
        installSmtp: undefined,
        timeoutMs: 5_000,
      }).send(ownServer(), notification, AbortSignal.timeout(10_000)),
    );
    expect(error.isRetryable).toBe(false);
    expect(error.message).toMatch(/private or local address/);
    expect(smtp.connections).toBe(connections);
  });

  it('gives up on a server whose certificate TLS refuses, or that speaks no TLS on a TLS port', async () => {
    // smtp-server's own certificate, which no client trusts: as a server set up wrong would be.
    const tlsServer = new SMTPServer({ logger: false, authOptional: true });
    await new Promise<void>((resolve) => tlsServer.listen(0, '127.0.0.1', () => resolve()));
    const { port } = tlsServer.server.address() as AddressInfo;
    const sender = createEmailSender({ guard, installSmtp: undefined, timeoutMs: 5_000 });
    const over = (security: 'starttls' | 'tls'): StoredChannel => ({
      ...ownServer(),
      config: {
        type: 'email',
        to: 'inbox@example.org',
        smtp: { host: '127.0.0.1', port, security },
      },
      secrets: {},
    });
    try {
      for (const security of ['starttls', 'tls'] as const) {
        const error = await failure(
          sender.send(over(security), notification, AbortSignal.timeout(10_000)),
        );
        expect(error.isRetryable, security).toBe(false);
        expect(error.message, security).toMatch(
          /^127\.0\.0\.1: TLS failed \((CERT_|ERR_SSL_|DEPTH_ZERO|SELF_SIGNED)/,
        );
      }
    } finally {
      await new Promise<void>((resolve) => tlsServer.close(() => resolve()));
    }
  });

  it('says so, finally, when there is no server to send with', async () => {
    const error = await failure(
      createEmailSender({ guard, installSmtp: undefined, timeoutMs: 5_000 }).send(
        { ...ownServer(), config: { type: 'email', to: 'inbox@example.org' } },
        notification,
        AbortSignal.timeout(10_000),
      ),
    );
    expect(error).toMatchObject({
      isRetryable: false,
      message: expect.stringMatching(/no SMTP server/),
    });
  });
});

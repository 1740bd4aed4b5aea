import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

type Mail = { from: string; to: string[]; raw: string };

export type SmtpStandIn = { port: number; mails: Mail[]; close(): Promise<void> };

// An SMTP server in the test process (smtp-server), plain text on loopback, that takes a login
// from the users given and keeps every mail: a user's own server, or the install's (SMTP_*).
export async function startSmtpStandIn(passwords: Record<string, string>): Promise<SmtpStandIn> {
  const mails: Mail[] = [];
  const server = new SMTPServer({
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    authMethods: ['PLAIN', 'LOGIN'],
    onAuth(auth, _session, callback) {
      if (auth.username && passwords[auth.username] === auth.password) {
        callback(null, { user: auth.username });
        return;
      }
      // Says back the password it refused, as careless servers do: Jarvis must not pass it on.
      callback(new Error(`Invalid login: ${auth.username ?? ''} / ${auth.password ?? ''}`));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((recipient) => recipient.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  server.listen(0, '127.0.0.1');
  await once(server.server, 'listening');
  const { port } = server.server.address() as AddressInfo;
  return { port, mails, close: () => new Promise<void>((resolve) => server.close(resolve)) };
}

// The six-digit code of a confirmation mail, read from its body (base64 parts decoded, as
// nodemailer may pick that encoding).
export function confirmationCode(raw: string): string | undefined {
  const body = raw.slice(raw.indexOf('\r\n\r\n'));
  const decoded = [...body.matchAll(/^([A-Za-z0-9+/=]{16,}\r?\n?)+/gm)].map((match) =>
    Buffer.from(match[0].replace(/\s/g, ''), 'base64').toString('utf8'),
  );
  const text = [body.replace(/=\r?\n/g, ''), ...decoded].join('\n');
  return /\b(\d{6})\b/.exec(text)?.[1];
}

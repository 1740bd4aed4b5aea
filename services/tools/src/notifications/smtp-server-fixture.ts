import type { AddressInfo } from 'node:net';
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export type SmtpServerFixture = {
  host: '127.0.0.1';
  port: number;
  // Every mail accepted, parsed, with the envelope it came in.
  mails: { envelope: { from: string; to: string[] }; mail: ParsedMail }[];
  // Connections made to it, logins or not.
  connections: number;
  // Refuses the next recipients with this reply code (e.g. 550, 451) until set back to undefined.
  refuseRecipientsWith: number | undefined;
  close(): Promise<void>;
};

// A real SMTP server on loopback (the `smtp-server` package), plain text, with one login when
// given (and then no mail without it).
export async function startSmtpServer(login?: {
  user: string;
  password: string;
}): Promise<SmtpServerFixture> {
  const fixture: SmtpServerFixture = {
    host: '127.0.0.1',
    port: 0,
    mails: [],
    connections: 0,
    refuseRecipientsWith: undefined,
    close: async () => {},
  };
  const server = new SMTPServer({
    logger: false,
    disabledCommands: ['STARTTLS'],
    // The login is tested here in plain text on loopback; the channels' own `security` decides.
    allowInsecureAuth: true,
    authOptional: !login,
    onConnect(_session, callback) {
      fixture.connections += 1;
      callback();
    },
    onAuth(auth, _session, callback) {
      if (login && auth.username === login.user && auth.password === login.password) {
        return callback(null, { user: auth.username });
      }
      callback(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onRcptTo(_address, _session, callback) {
      const code = fixture.refuseRecipientsWith;
      if (code)
        return callback(Object.assign(new Error('Mailbox unavailable'), { responseCode: code }));
      callback();
    },
    onData(stream, session, callback) {
      simpleParser(stream).then(
        (mail) => {
          const from = session.envelope.mailFrom;
          fixture.mails.push({
            envelope: {
              from: from ? from.address : '',
              to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
            },
            mail,
          });
          callback();
        },
        (error: Error) => callback(error),
      );
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  fixture.port = (server.server.address() as AddressInfo).port;
  fixture.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return fixture;
}

import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { waitFor } from './processes.ts';

/** A message as the SMTP peer received it. */
export interface ReceivedMail {
  to: string[];
  from: string;
  raw: string;
  /** The name the client gave in EHLO. */
  ehlo: string;
}

/** The decoded message: quoted-printable soft breaks and escapes undone (enough to read links and headers). */
export const decodeMail = (raw: string): string =>
  raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));

/** A local SMTP server (RFC 5321, no TLS or AUTH) that keeps what it receives, standing in for the mail relay. */
export class SmtpPeer {
  readonly mails: ReceivedMail[] = [];
  /** Recipients whose next delivery attempts (as many as the count) the server refuses with a temporary error. */
  readonly flaky = new Map<string, number>();
  private readonly server: SMTPServer;
  port = 0;

  constructor() {
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onData: (stream, session, callback) => {
        let raw = '';
        stream.setEncoding('utf8');
        stream.on('data', (chunk: string) => (raw += chunk));
        stream.on('end', () => {
          const to = session.envelope.rcptTo.map((r) => r.address);
          const left = this.flaky.get(to[0] ?? '') ?? 0;
          if (left > 0) {
            this.flaky.set(to[0]!, left - 1);
            callback(Object.assign(new Error('try again later'), { responseCode: 451 }));
            return;
          }
          this.mails.push({
            to,
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            raw,
            ehlo: String(session.hostNameAppearsAs),
          });
          callback();
        });
      },
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.server.address() as AddressInfo).port;
    return this;
  }

  stop(): Promise<void> {
    return new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The first link of a mail to `to` that matches `pattern` (the mail is taken off the list). */
  async link(to: string, pattern: RegExp, timeoutMs = 30_000): Promise<string> {
    let found: string | undefined;
    await waitFor(
      () => {
        for (const mail of this.mails) {
          if (!mail.to.includes(to)) continue;
          const m = pattern.exec(decodeMail(mail.raw));
          if (m) {
            this.mails.splice(this.mails.indexOf(mail), 1);
            found = m[0];
            return true;
          }
        }
        return false;
      },
      timeoutMs,
      `a mail to ${to} with a link like ${pattern}`,
      100,
    );
    return found!;
  }
}

// A loopback SMTP server for tests of the flows that send mail: every message kmas sends is parsed
// and kept until a test takes it by its recipient.
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { simpleParser, type ParsedMail } from 'mailparser';
import { sleep } from './harness.js';

export interface MailSink {
  /** `smtp://127.0.0.1:<port>`, for the server's `smtpUrl`. */
  url: string;
  /** The oldest message to `to` not yet taken; waits up to `timeoutMs` for one to arrive. */
  nextMail(to: string, timeoutMs?: number): Promise<ParsedMail>;
  close(): Promise<void>;
}

export async function startMailSink(): Promise<MailSink> {
  const mails: ParsedMail[] = [];
  const smtp = new SMTPServer({
    authOptional: true, disabledCommands: ['STARTTLS', 'AUTH'], logger: false,
    onData(stream, _session, cb) { simpleParser(stream).then((m) => { mails.push(m); cb(); }, cb); },
  });
  await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', () => r()));
  const port = (smtp.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    async nextMail(to, timeoutMs = 5000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const i = mails.findIndex((m) => (m.to as { text: string } | undefined)?.text === to);
        if (i >= 0) return mails.splice(i, 1)[0]!;
        if (Date.now() > until) throw new Error(`no mail to ${to}`);
        await sleep(20);
      }
    },
    close: () => new Promise<void>((r) => smtp.close(() => r())),
  };
}

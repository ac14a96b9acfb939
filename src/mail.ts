/**
 * E-mail for the authentication flows (email_auth, init_otp_auth, init_user_email_recovery).
 * A handler queues the message in the same outbox as webhook events (src/webhooks.ts), inside
 * its activity's transaction, with a `mailto:` address; the dispatcher sends it over SMTP
 * (nodemailer, SMTP_URL) once the commit is on disk, and retries what the server refuses only for
 * now. The message is sealed under the master key while it waits: it can hold a one-time code.
 * For local development MAIL_DIR writes each message as an .eml file (mode 0600) instead.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import nodemailer, { type Transporter } from 'nodemailer';
import type { AtRestContext } from './crypto/atrest.js';
import type { Vault } from './crypto/vault.js';
import { utf8 } from './encoding/bytes.js';
import type { Tx, WebhookDeliveryRow } from './storage/types.js';
import type { Outcome } from './outbox.js';

/** What queueing a message needs of an activity's context. */
export interface MailContext { tx: Tx; services: { vault: Vault; kick: { deliveries(): void } } }

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** Display name of the sender (sendFromEmailSenderName); the address is always MAIL_FROM. */
  fromName?: string;
  replyTo?: string;
}

const mailContext = (row: { id: string; organizationId: string }): AtRestContext =>
  ({ kind: 'mail', organizationId: row.organizationId, recordId: row.id });

/** Queues `message` for delivery after the current transaction commits. */
export async function enqueueMail(ctx: MailContext, organizationId: string, message: MailMessage, nowMs: number): Promise<void> {
  const { tx, services } = ctx;
  const id = randomUUID();
  const sealed = services.vault.seal(utf8(JSON.stringify(message)), mailContext({ id, organizationId }));
  await tx.webhooks.enqueue({
    id, organizationId, activityId: '', eventType: '', url: `mailto:${message.to}`, body: Buffer.from(sealed).toString('base64'),
    attempts: 0, nextAttemptMs: nowMs, createdMs: nowMs,
  });
  tx.afterCommit(services.kick.deliveries);
}

/** Where mail goes: an SMTP server, or (local development) a directory of .eml files. */
export type MailTarget = { smtpUrl: string; timeoutMs: number } | { dir: string };

export class Mailer {
  readonly #transport: Transporter;
  readonly #dir: string | undefined;
  /** MAIL_FROM's address, for a From that carries the request's display name instead. */
  readonly #fromAddress: string;
  /** SMTP: the longest one message's exchange may take, all of it (WEBHOOK_TIMEOUT_MS). */
  readonly #timeoutMs: number | undefined;

  /**
   * SMTP: `timeoutMs` bounds connecting, the greeting and each reply, and the whole exchange of a
   * message (WEBHOOK_TIMEOUT_MS, as for webhooks): a server that answers slowly or a byte at a
   * time cannot hold an attempt past its row's lease (2 × timeoutMs + 1 s), after which another
   * process would send the same message again.
   */
  constructor(private readonly vault: Vault, target: MailTarget, private readonly from: string) {
    this.#fromAddress = /<([^>]+)>/.exec(from)?.[1] ?? from;
    this.#timeoutMs = 'timeoutMs' in target ? target.timeoutMs : undefined;
    if ('dir' in target) {
      // A message holds a credential bundle or a one-time code: readable by the server's user only.
      fs.mkdirSync(target.dir, { recursive: true, mode: 0o700 });
      this.#dir = target.dir;
      this.#transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
    } else {
      this.#transport = nodemailer.createTransport({ url: target.smtpUrl, connectionTimeout: target.timeoutMs, greetingTimeout: target.timeoutMs, socketTimeout: target.timeoutMs });
    }
  }

  /**
   * Sends a queued message: delivered, retry (connection trouble, 4xx replies, the timeout, cut off
   * by `abort`: shutdown) or refused (5xx).
   */
  async send(row: WebhookDeliveryRow, abort?: AbortSignal): Promise<Outcome> {
    let m: MailMessage;
    try {
      m = JSON.parse(this.vault.openText(new Uint8Array(Buffer.from(row.body, 'base64')), mailContext(row))) as MailMessage;
    } catch {
      return { kind: 'refused', reason: 'the queued message cannot be opened with this master key' };
    }
    const timeout = this.#timeoutMs !== undefined ? AbortSignal.timeout(this.#timeoutMs) : undefined;
    const signals = [...(timeout ? [timeout] : []), ...(abort ? [abort] : [])];
    try {
      const info = await this.#transport.sendMail({
        from: m.fromName ? { name: m.fromName, address: this.#fromAddress } : this.from,
        to: m.to, subject: m.subject, text: m.text, html: m.html,
        ...(m.replyTo ? { replyTo: m.replyTo } : {}),
        // nodemailer closes the connection when it aborts
        ...(signals.length > 0 ? { signal: AbortSignal.any(signals) } : {}),
      }) as { response?: string; message?: Buffer };
      if (this.#dir !== undefined) {
        const file = path.join(this.#dir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${row.id}.eml`);
        fs.writeFileSync(file, info.message!, { mode: 0o600 });
        return { kind: 'delivered', reason: `written to ${path.basename(file)}` };
      }
      return { kind: 'delivered', reason: info.response ?? 'sent' };
    } catch (e) {
      const err = e as Error & { responseCode?: number; code?: string };
      if (err.name === 'AbortError') return { kind: 'retry', reason: timeout?.aborted ? 'timeout' : 'cut off' };
      const reason = err.responseCode !== undefined ? `SMTP ${err.responseCode}` : (err.code ?? err.message);
      return { kind: err.responseCode !== undefined && err.responseCode >= 500 ? 'refused' : 'retry', reason };
    }
  }

  close(): void { this.#transport.close(); }
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Text and HTML of a message: paragraphs; an optional link; an optional logo (https only). */
export function composeMail(p: { to: string; subject: string; paragraphs: string[]; link?: string; logoUrl?: string; fromName?: string; replyTo?: string }): MailMessage {
  const text = [...p.paragraphs, ...(p.link ? [p.link] : [])].join('\n\n') + '\n';
  const logo = p.logoUrl && p.logoUrl.startsWith('https://')
    ? `<p><img src="${escapeHtml(p.logoUrl)}" alt="" style="max-width:340px;max-height:124px"></p>` : '';
  const html = `<!doctype html><html><body>${logo}${p.paragraphs.map((x) => `<p style="word-break:break-all">${escapeHtml(x)}</p>`).join('')}`
    + (p.link ? `<p><a href="${escapeHtml(p.link)}">${escapeHtml(p.link)}</a></p>` : '') + '</body></html>';
  return {
    to: p.to, subject: p.subject, text, html,
    ...(p.fromName ? { fromName: p.fromName } : {}),
    ...(p.replyTo ? { replyTo: p.replyTo } : {}),
  };
}

/**
 * Webhooks: every activity of an organization is POSTed to the address its FEATURE_NAME_WEBHOOK
 * names (key-management-api.md, Events) and to each of its active webhook endpoints subscribed to
 * ACTIVITY_UPDATES (create_webhook_endpoint); so is every activity of its sub-organizations. Each
 * status change of a sent transaction (broadcaster.ts) goes the same way to the endpoints
 * subscribed to SEND_TRANSACTION_STATUS_UPDATES.
 *
 * - Outbox: the engine writes one webhook_deliveries row per receiving address inside the
 *   activity's own transaction (enqueueActivityEvents), so an event exists exactly when its
 *   activity does. The dispatcher delivers rows only once their commit is on disk, and removes a
 *   row when it is delivered or given up. A crash can repeat a delivery (at least once), never
 *   lose one; the event id stays the same on every attempt.
 * - Request (wire-compat §6): `Content-Type: application/json`, the body is the activity object
 *   (as `get_activity` returns it under `activity`), headers `X-Turnkey-Organization-Id` (the
 *   activity's organization), `X-Turnkey-Event-Type: ACTIVITY_UPDATES`, `X-Turnkey-Timestamp` (ms),
 *   `X-Turnkey-Webhook-Version: 1`, `X-Turnkey-Event-Id`, and the v1 signature headers: Ed25519
 *   over `v1.ed25519.<keyId>.<timestamp>.<eventId>.` followed by the raw body bytes, which
 *   @turnkey/crypto verifyTurnkeyWebhookSignature checks with the key from
 *   GET /public/v1/discovery/webhooks/jwks (webhookJwks).
 * - Destinations: under WEBHOOK_DESTINATIONS=public (src/domain/destinations.ts) a delivery goes
 *   only to a public address: an IP in the URL is checked, a host name is resolved and the
 *   connection made to the address that was checked. A refused address, credentials in the URL or
 *   one of the Fetch standard's bad ports is given up at once.
 * - Outcome: 2xx delivered; 3xx (redirects are not followed), 4xx and 429 given up at once;
 *   network errors, timeouts and 5xx retried after retryBaseMs · 2^(attempt−1) (at most 10
 *   minutes), with a fresh timestamp and signature, until maxAttempts attempts were made.
 * - The signing key is created on first start and sealed at rest like the bundle signer (Vault);
 *   it is opened for each signature only.
 * - Several server processes (WORKERS > 1) share the outbox: a process claims a row (moves its
 *   next attempt past the request's timeout) before sending it, so only one sends it.
 * - An address that changed: the transaction that deletes, pauses or moves an endpoint (or changes
 *   FEATURE_NAME_WEBHOOK) moves the events waiting for the old address to the new one, or drops
 *   them (readdressDeliveries); and a row is claimed only while its address is still one its event
 *   goes to (an event queued by a transaction that read the addresses before the change).
 * - The same outbox carries the e-mails of the authentication flows (src/mail.ts): rows whose
 *   address is `mailto:` go to the SMTP server with the same claims, retries and backoff.
 */
import { randomUUID } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { DestinationRefused, guardedLookup, isPublicAddress, type WebhookDestinations } from './domain/destinations.js';
import type { Logger } from './log.js';
import { Outbox, type Outcome } from './outbox.js';
import { webhookDeliveries } from './metrics.js';
import { txReference } from './chains/caip2.js';
import type { Db, DeliveryKind, OrganizationRow, SendTransactionRow, Tx, WebhookDeliveryRow, WebhookEndpointRow } from './storage/types.js';
import { bytesToHex, concatBytes, utf8 } from './encoding/bytes.js';
import { sha256 } from './crypto/curves.js';
import type { Mailer } from './mail.js';

export const WEBHOOK_FEATURE = 'FEATURE_NAME_WEBHOOK';
/** The member of an activity event's body that carries its log entry's index and the latest checkpoint. */
export const LOG_MEMBER = 'kmasLog';
export const ACTIVITY_EVENT = 'ACTIVITY_UPDATES';
export const TRANSACTION_EVENT = 'SEND_TRANSACTION_STATUS_UPDATES';
const MAX_IN_FLIGHT = 8;
/** E-mails under way at once: a lane of their own, so that no webhook receiver holds them up. */
const MAX_MAILS_IN_FLIGHT = 4;
const MAX_BACKOFF_MS = 10 * 60_000;

export interface WebhookOptions {
  /** Delay before the first retry (ms); doubles with every further attempt. */
  retryBaseMs: number;
  /** Attempts per event, the first one included. */
  maxAttempts: number;
  /** Time a receiver has to answer (ms). */
  timeoutMs: number;
  /** The longest the outbox goes without looking for due rows (OUTBOX_POLL_MS). */
  pollMs: number;
  /** Sends the `mailto:` rows (SMTP_URL); without it they are given up. */
  mailer?: Mailer;
  /** The latest signed checkpoint (note text) of an organization's log, added to activity events' `kmasLog` when they are sent. */
  checkpoint?: (organizationId: string) => Promise<string>;
  /** Where deliveries may go (WEBHOOK_DESTINATIONS, src/domain/destinations.ts); `any` unless given. */
  destinations?: WebhookDestinations;
}

/** The key id (`kid`, X-Turnkey-Signature-Key-Id) of a webhook public key: 16 hex digits of its SHA-256. */
export function webhookKeyId(publicKeyHex: string): string {
  return bytesToHex(sha256(Buffer.from(publicKeyHex, 'hex'))).slice(0, 16);
}

/** The JWKS document of GET /public/v1/discovery/webhooks/jwks (wire-compat §6). */
export function webhookJwks(publicKeyHex: string): Record<string, unknown> {
  return {
    keys: [{
      kid: webhookKeyId(publicKeyHex), kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig',
      x: Buffer.from(publicKeyHex, 'hex').toString('base64url'),
      turnkey_signature_algorithm: 'ed25519', turnkey_signature_version: 'v1',
    }],
  };
}

/** The addresses of an organization's active endpoints with an active subscription to eventType. */
async function endpointAddresses(tx: Tx, organizationId: string, eventType: string, into: Set<string>): Promise<void> {
  subscribed(await tx.webhooks.endpoints(organizationId), eventType, into);
}

function subscribed(endpoints: WebhookEndpointRow[], eventType: string, into: Set<string>): void {
  for (const e of endpoints) {
    if (e.isActive && e.subscriptions.some((s) => s.isActive && s.eventType === eventType)) into.add(e.url);
  }
}

/** The addresses of the organization's endpoints and of its parent's subscribed to eventType. */
async function subscribedAddresses(tx: Tx, organization: Pick<OrganizationRow, 'id' | 'parentId'>, eventType: string): Promise<Set<string>> {
  const urls = new Set<string>();
  await endpointAddresses(tx, organization.id, eventType, urls);
  if (organization.parentId !== null) await endpointAddresses(tx, organization.parentId, eventType, urls);
  return urls;
}

/** The addresses an organization sends activity events to: its FEATURE_NAME_WEBHOOK and its endpoints subscribed to ACTIVITY_UPDATES. */
async function activityAddresses(tx: Tx, organizationId: string, into: Set<string>): Promise<void> {
  const { feature, endpoints } = await tx.webhooks.activityTargets(organizationId, WEBHOOK_FEATURE);
  if (feature) into.add(feature);
  subscribed(endpoints, ACTIVITY_EVENT, into);
}

/** An outbox row per address (each once), then (`kick`) a look for due rows once the commit is durable. */
async function enqueueEvents(tx: Tx, kick: () => void, urls: Set<string>, row: Omit<WebhookDeliveryRow, 'id' | 'url' | 'attempts' | 'nextAttemptMs'>): Promise<void> {
  for (const url of urls) await tx.webhooks.enqueue({ ...row, id: randomUUID(), url, attempts: 0, nextAttemptMs: row.createdMs });
  if (urls.size > 0) tx.afterCommit(kick);
}

/**
 * The addresses an activity of the organization is announced to: those of the organization and of
 * its parent (each address once). Read while the organization's log head is taken (engine.ts:
 * both in one round trip on PostgreSQL), so the head's lock is held for as few statements as possible.
 */
export function activityEventAddresses(tx: Tx, organization: Pick<OrganizationRow, 'id' | 'parentId'>): Promise<Set<string>> {
  // both organizations' rows asked for at once (one round trip on PostgreSQL); the organization's
  // addresses first, then its parent's, as they are sent
  const own = new Set<string>();
  const parent = new Set<string>();
  return Promise.all([
    activityAddresses(tx, organization.id, own),
    organization.parentId !== null ? activityAddresses(tx, organization.parentId, parent) : undefined,
  ]).then(() => {
    for (const url of parent) own.add(url);
    return own;
  });
}

/**
 * Inside the transaction that stores an activity: an outbox row for every address
 * (activityEventAddresses) with the activity and the index of this change's log entry.
 */
export async function enqueueActivityEvents(
  tx: Tx, kick: () => void, urls: Set<string>, organization: OrganizationRow, activityId: string, recordJson: string, nowMs: number, logIndex?: number,
): Promise<void> {
  if (urls.size === 0) return;
  // The activity object plus kmas's own member `kmasLog`: the index of this change's entry in the
  // organization's verifiable log (the dispatcher adds the latest checkpoint when it sends).
  const body = logIndex === undefined ? recordJson : `${recordJson.slice(0, -1)},"${LOG_MEMBER}":{"index":${logIndex}}}`;
  await enqueueEvents(tx, kick, urls, { organizationId: organization.id, activityId, eventType: ACTIVITY_EVENT, body, createdMs: nowMs });
}

/**
 * Inside the transaction that records a sent transaction's new status: a SEND_TRANSACTION_STATUS_UPDATES
 * event for the endpoints of its organization and of its parent subscribed to them. The body is
 * the envelope wire-compat §6 gives these events, `{type: 'transaction:status', organizationId,
 * parentOrganizationId, msg}`; msg's fields are kmas's (Turnkey's are not documented).
 */
export async function enqueueTransactionEvent(tx: Tx, kick: () => void, sent: SendTransactionRow, nowMs: number): Promise<void> {
  const organization = await tx.organizations.get(sent.organizationId);
  if (!organization) return;
  const urls = await subscribedAddresses(tx, organization, TRANSACTION_EVENT);
  if (urls.size === 0) return;
  const body = JSON.stringify({
    type: 'transaction:status',
    organizationId: organization.id,
    parentOrganizationId: organization.parentId ?? '',
    msg: {
      idempotencyKey: `${sent.id}:${sent.status}`,
      sendTransactionStatusId: sent.id,
      activityId: sent.activityId,
      caip2: sent.caip2,
      from: sent.fromAddress,
      txStatus: sent.status,
      ...txReference(sent.caip2, sent.txHash),
      ...(sent.blockNumber !== null ? { blockNumber: sent.blockNumber } : {}),
      ...(sent.error !== null ? { txError: sent.error, error: { message: sent.error } } : {}),
      timestampMs: String(nowMs),
    },
  });
  await enqueueEvents(tx, kick, urls, { organizationId: organization.id, activityId: sent.activityId, eventType: TRANSACTION_EVENT, body, createdMs: nowMs });
}

/** The addresses an event of the organization goes to now (as it would be queued now). */
function eventAddresses(tx: Tx, organization: Pick<OrganizationRow, 'id' | 'parentId'>, eventType: string): Promise<Set<string>> {
  return (eventType || ACTIVITY_EVENT) === ACTIVITY_EVENT ? activityEventAddresses(tx, organization) : subscribedAddresses(tx, organization, eventType);
}

/** Whether a waiting webhook event still goes to its row's address (its organization gone: no). */
async function stillAddressed(tx: Tx, row: WebhookDeliveryRow): Promise<boolean> {
  const organization = await tx.organizations.get(row.organizationId);
  return organization !== undefined && (await eventAddresses(tx, organization, row.eventType)).has(row.url);
}

/**
 * In the transaction that changes where the organization's events go (an endpoint deleted, paused
 * or moved; FEATURE_NAME_WEBHOOK changed or removed), after the change: each event of the
 * organization or of its sub-organizations waiting for `oldUrl` that no longer goes there moves to
 * `newUrl` if it goes there now (same event id, attempts and schedule), else it is dropped — also
 * when the same event already waits for `newUrl` (another address there): it is not sent twice.
 */
export async function readdressDeliveries(tx: Tx, organizationId: string, oldUrl: string, newUrl?: string): Promise<void> {
  const rows = await tx.webhooks.addressedTo(oldUrl);
  if (rows.length === 0) return;
  const waiting = newUrl !== undefined && newUrl !== oldUrl ? await tx.webhooks.addressedTo(newUrl) : [];
  // the addresses of each (organization, event type) now; undefined: not an event this change touches
  const now = new Map<string, Set<string> | undefined>();
  for (const row of rows) {
    const key = `${row.organizationId}\u0000${row.eventType}`;
    if (!now.has(key)) {
      const organization = await tx.organizations.get(row.organizationId);
      // the same address may be another organization's too: its events are not this change's
      const ours = organization !== undefined && (organization.id === organizationId || organization.parentId === organizationId);
      now.set(key, ours ? await eventAddresses(tx, organization, row.eventType) : undefined);
    }
    const addresses = now.get(key);
    if (addresses === undefined || addresses.has(oldUrl)) continue;
    const twin = waiting.some((w) => w.organizationId === row.organizationId && w.eventType === row.eventType && w.body === row.body);
    if (newUrl !== undefined && addresses.has(newUrl) && !twin) await tx.webhooks.readdress(row.id, newUrl);
    else await tx.webhooks.remove(row.id);
  }
}

export class WebhookDispatcher {
  readonly keyId: string;
  readonly #abort = new AbortController();
  /** Webhook events and e-mails, each in a lane of its own (a receiver that never answers must not delay the login codes). */
  readonly #outboxes: Outbox<WebhookDeliveryRow>[];
  #closed = false;

  constructor(
    private readonly db: Db,
    private readonly sign: (message: Uint8Array) => Uint8Array,
    publicKeyHex: string,
    private readonly log: Logger,
    private readonly opts: WebhookOptions,
  ) {
    this.keyId = webhookKeyId(publicKeyHex);
    const lane = (kind: DeliveryKind, maxInFlight: number) => new Outbox<WebhookDeliveryRow>(db, {
      due: (now, limit) => db.read((tx) => tx.webhooks.due(now, limit, kind)),
      claim: (row, until) => this.#claim(row, until),
      nextDueMs: () => db.read((tx) => tx.webhooks.nextDueMs(kind)),
      release: async (row, until) => { await db.write((tx) => tx.webhooks.claim(row.id, until, Date.now())); },
    }, (row) => this.#deliver(row), log, { what: kind === 'email' ? 'e-mail dispatch' : 'webhook dispatch', maxInFlight, leaseMs: 2 * opts.timeoutMs + 1_000, pollMs: opts.pollMs });
    this.#outboxes = [lane('webhook', MAX_IN_FLIGHT), lane('email', MAX_MAILS_IN_FLIGHT)];
    // Events left from before a restart.
    this.kick();
  }

  /** Looks for due deliveries soon (after the current turn, whose commit may still be open). */
  kick(): void { for (const o of this.#outboxes) o.kick(); }

  /**
   * Takes a due row unless another process did, or it was readdressed since it was read; a webhook
   * event whose address it no longer goes to is dropped instead (in the claim's transaction).
   */
  async #claim(row: WebhookDeliveryRow, until: number): Promise<boolean> {
    let dropped = false;
    const taken = await this.db.write(async (tx) => {
      dropped = false;
      if (!await tx.webhooks.claim(row.id, row.nextAttemptMs, until, row.url)) return false;
      if (isMail(row) || await stillAddressed(tx, row)) return true;
      await tx.webhooks.remove(row.id);
      dropped = true;
      return false;
    });
    if (dropped) {
      this.log.info('webhook event dropped: its address no longer receives it', {
        eventId: row.id, activityId: row.activityId, organizationId: row.organizationId, receiver: originOf(row.url), attempts: row.attempts,
      });
    }
    return taken;
  }

  async #deliver(row: WebhookDeliveryRow): Promise<void> {
    const attempt = row.attempts + 1;
    const outcome = await this.#send(row);
    if (this.#closed && outcome.kind === 'retry') {
      // Cut off by close(): not an attempt; due again at once for the next start.
      await this.db.write((tx) => tx.webhooks.retryAt(row.id, row.attempts, Date.now()));
      return;
    }
    const what = isMail(row) ? 'e-mail' : 'webhook';
    const kind = isMail(row) ? 'email' : 'webhook';
    const fields = {
      eventId: row.id, activityId: row.activityId, organizationId: row.organizationId,
      receiver: originOf(row.url), attempt, outcome: outcome.reason,
    };
    if (outcome.kind === 'delivered') {
      webhookDeliveries.inc({ kind, outcome: 'delivered' });
      await this.db.write((tx) => tx.webhooks.remove(row.id));
      this.log.debug(`${what} delivered`, fields);
    } else if (outcome.kind === 'refused' || attempt >= this.opts.maxAttempts) {
      webhookDeliveries.inc({ kind, outcome: 'given_up' });
      await this.db.write((tx) => tx.webhooks.remove(row.id));
      this.log.warn(`${what} delivery given up`, fields);
    } else {
      webhookDeliveries.inc({ kind, outcome: 'retry' });
      const delay = Math.min(this.opts.retryBaseMs * 2 ** (attempt - 1), MAX_BACKOFF_MS);
      await this.db.write((tx) => tx.webhooks.retryAt(row.id, attempt, Date.now() + delay));
      this.log.info(`${what} delivery failed; will retry`, { ...fields, retryInMs: delay });
    }
  }

  async #send(row: WebhookDeliveryRow): Promise<Outcome> {
    if (isMail(row)) return this.opts.mailer ? this.opts.mailer.send(row, this.#abort.signal) : { kind: 'refused', reason: 'no SMTP server configured' };
    const timestamp = String(Date.now());
    const body = Buffer.from(await this.#withCheckpoint(row), 'utf8');
    const signed = concatBytes(utf8(`v1.ed25519.${this.keyId}.${timestamp}.${row.id}.`), body);
    const signature = bytesToHex(this.sign(signed));
    try {
      const status = await post(row.url, body, {
        'Content-Type': 'application/json',
        'User-Agent': 'kmas-webhooks/1',
        'X-Turnkey-Organization-Id': row.organizationId,
        'X-Turnkey-Event-Type': row.eventType || ACTIVITY_EVENT,
        'X-Turnkey-Timestamp': timestamp,
        'X-Turnkey-Webhook-Version': '1',
        'X-Turnkey-Event-Id': row.id,
        'X-Turnkey-Signature-Key-Id': this.keyId,
        'X-Turnkey-Signature-Algorithm': 'ed25519',
        'X-Turnkey-Signature-Version': 'v1',
        'X-Turnkey-Signature': signature,
      }, AbortSignal.any([AbortSignal.timeout(this.opts.timeoutMs), this.#abort.signal]), this.opts.destinations ?? 'any');
      const reason = `HTTP ${status}`;
      if (status >= 200 && status < 300) return { kind: 'delivered', reason };
      return { kind: status >= 500 ? 'retry' : 'refused', reason };
    } catch (e) {
      const err = e as Error & { code?: string };
      if (err.name === 'TimeoutError') return { kind: 'retry', reason: 'timeout' };
      // an address the rule or the URL itself rules out: no retry can help
      if (err instanceof DestinationRefused || err instanceof UnusableUrl) return { kind: 'refused', reason: err.message };
      return { kind: 'retry', reason: err.code ?? err.message };
    }
  }

  /**
   * An activity event's body with the latest checkpoint of its organization's log in `kmasLog`
   * (a receiver that keeps them is a witness: a later rollback cannot go unseen). The checkpoint
   * is the latest when the event is sent (at most a few seconds old): it may predate the entry,
   * whose inclusion can then be proven against a later one. Without one (an error), the body goes as stored.
   */
  async #withCheckpoint(row: WebhookDeliveryRow): Promise<string> {
    if (!this.opts.checkpoint || row.eventType !== ACTIVITY_EVENT || !row.body.includes(`"${LOG_MEMBER}":{"index":`)) return row.body;
    try {
      const checkpoint = await this.opts.checkpoint(row.organizationId);
      return `${row.body.slice(0, -2)},"checkpoint":${JSON.stringify(checkpoint)}}}`;
    } catch (e) {
      this.log.warn('no log checkpoint for a webhook event', { eventId: row.id, error: e instanceof Error ? e.message : String(e) });
      return row.body;
    }
  }

  /**
   * Stops: no new attempts; attempts under way are cut off and their events are due again at
   * once, for the next start. Resolves when the outbox is written (before the store closes).
   */
  async close(graceMs?: number): Promise<void> {
    this.#closed = true;
    const closing = Promise.all(this.#outboxes.map((o) => o.close(graceMs)));
    this.#abort.abort();
    await closing;
    this.opts.mailer?.close();
  }
}

const isMail = (row: WebhookDeliveryRow) => row.url.startsWith('mailto:');

/** scheme://host:port of an address, or an e-mail address's domain, for logs (a path or query may carry a token). */
function originOf(url: string): string {
  if (url.startsWith('mailto:')) return `mail to ${url.slice(url.lastIndexOf('@') + 1)}`;
  try { return new URL(url).origin; } catch { return '(invalid address)'; }
}

/** A webhook address that cannot be POSTed to as it is (not http(s), credentials in it, a bad port). */
class UnusableUrl extends Error {}

/**
 * The Fetch standard's "bad ports" (those of SMTP, IMAP, SSH, IRC …): an HTTP request sent there
 * could be taken for that protocol's commands, so browsers never connect to them, nor does kmas.
 */
const BAD_PORTS = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111, 113,
  115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563,
  587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669,
  6679, 6697, 10080,
]);

/**
 * Kept-alive connections, one pool per rule: a connection opened where any address is allowed (a
 * server with WEBHOOK_DESTINATIONS=any in the same process) is never reused by a delivery that
 * only public addresses may receive, which would skip guardedLookup.
 */
const AGENTS: Record<WebhookDestinations, { http: HttpAgent; https: HttpsAgent }> = {
  public: { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) },
  any: { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) },
};

/**
 * POSTs `body` to `url` and answers the response's status (its body read and dropped; redirects
 * are not followed). Under `public`, an address given as an IP must be public, and a host name is
 * connected to at an address guardedLookup checked.
 */
function post(url: string, body: Buffer, headers: Record<string, string>, signal: AbortSignal, rule: WebhookDestinations): Promise<number> {
  let u: URL;
  try { u = new URL(url); } catch { return Promise.reject(new UnusableUrl('the address is not a URL')); }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return Promise.reject(new UnusableUrl(`the address is not http(s): ${u.protocol}`));
  if (u.username !== '' || u.password !== '') return Promise.reject(new UnusableUrl('the address carries credentials (user:password@)'));
  const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  if (BAD_PORTS.has(port)) return Promise.reject(new UnusableUrl(`port ${port} is one the Fetch standard blocks (another protocol's)`));
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (rule === 'public' && isIP(host) !== 0 && !isPublicAddress(host)) return Promise.reject(new DestinationRefused(host, host));
  const request = u.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<number>((resolve, reject) => {
    const req = request(u, {
      method: 'POST', signal, headers: { ...headers, 'Content-Length': String(body.length) },
      agent: u.protocol === 'https:' ? AGENTS[rule].https : AGENTS[rule].http,
      ...(rule === 'public' && isIP(host) === 0 ? { lookup: guardedLookup } : {}),
    }, (res) => {
      res.on('error', fail);
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.resume();
    });
    // an abort (the timeout, or shutdown) is reported as its reason: a TimeoutError is retried
    const fail = (e: Error) => reject(signal.aborted ? signal.reason : e);
    req.on('error', fail);
    req.end(body);
  });
}

/**
 * Rate limits per API key (or passkey) and per organization: token buckets in this process's
 * memory. A bucket holds up to one second's worth of requests (`perSecond` tokens) and refills
 * continuously at `perSecond`; a request takes one token from its credential's bucket and one from
 * its organization's, or, when either is empty, none and is refused (429, RESOURCE_EXHAUSTED, with
 * Retry-After). `0` turns a limit off.
 *
 * Per node: with several nodes (or a WORKERS pool, whose processes each keep their own buckets)
 * behind a balancer, a client can get up to the limit from each of them.
 */
import { ApiError, Grpc } from '../errors.js';

interface Bucket { tokens: number; at: number }

/** Buckets kept before the full ones are forgotten (a full bucket is the same as none). */
const SWEEP_AT = 10_000;

class Buckets {
  readonly #m = new Map<string, Bucket>();
  constructor(readonly perSecond: number) {}

  /** Tokens in `id`'s bucket at `nowMs` (refilled), and the bucket. */
  #at(id: string, nowMs: number): Bucket {
    let b = this.#m.get(id);
    if (!b) {
      if (this.#m.size >= SWEEP_AT) this.#sweep(nowMs);
      b = { tokens: this.perSecond, at: nowMs };
      this.#m.set(id, b);
    } else if (nowMs > b.at) {
      b.tokens = Math.min(this.perSecond, b.tokens + ((nowMs - b.at) / 1000) * this.perSecond);
      b.at = nowMs;
    }
    return b;
  }

  /** undefined when a token is there; else the seconds until one is. */
  check(id: string, nowMs: number): number | undefined {
    const b = this.#at(id, nowMs);
    return b.tokens >= 1 ? undefined : Math.max(1, Math.ceil((1 - b.tokens) / this.perSecond));
  }

  take(id: string, nowMs: number): void { this.#at(id, nowMs).tokens -= 1; }

  #sweep(nowMs: number): void {
    for (const [id, b] of this.#m) {
      if (b.tokens + ((nowMs - b.at) / 1000) * this.perSecond >= this.perSecond) this.#m.delete(id);
    }
  }
}

export type LimitName = 'api_key' | 'organization';

/** A 429 refusal; `retryAfter` (s) goes to the Retry-After header. */
export class RateLimited extends ApiError {
  constructor(readonly limit: LimitName, readonly retryAfter: number) {
    super(Grpc.RESOURCE_EXHAUSTED,
      // Turnkey's sentence and code (its error reference); kmas names the retry time instead of Turnkey's support address
      `this ${limit === 'api_key' ? 'API key' : 'organization'} cannot execute activities because it has been rate limited. Retry after ${retryAfter} s.`,
      { turnkeyErrorCode: 'RATE_LIMIT_EXCEEDED' });
  }
}

export class RateLimiter {
  readonly #key: Buckets | undefined;
  readonly #org: Buckets | undefined;

  constructor(perKeyPerSecond: number, perOrganizationPerSecond: number) {
    this.#key = perKeyPerSecond > 0 ? new Buckets(perKeyPerSecond) : undefined;
    this.#org = perOrganizationPerSecond > 0 ? new Buckets(perOrganizationPerSecond) : undefined;
  }

  /** Takes a token for the credential and one for the organization, or throws RateLimited taking none. */
  admit(credentialId: string, organizationId: string, nowMs: number): void {
    const k = this.#key?.check(credentialId, nowMs);
    if (k !== undefined) throw new RateLimited('api_key', k);
    const o = this.#org?.check(organizationId, nowMs);
    if (o !== undefined) throw new RateLimited('organization', o);
    this.#key?.take(credentialId, nowMs);
    this.#org?.take(organizationId, nowMs);
  }
}

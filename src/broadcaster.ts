/**
 * Broadcasting of the transactions eth_send_transaction signed (send_transactions rows): sends
 * each to its network's node once its activity is on disk, then follows it until it is mined.
 *
 *   INITIALIZED  → eth_sendRawTransaction accepted → BROADCASTING
 *                → the node refuses it (nonce too low, insufficient funds, …) → FAILED
 *   BROADCASTING → a receipt with status 1 → INCLUDED; status 0 → FAILED (reverted)
 *                → no receipt within MAX_PENDING_MS of signing → FAILED
 *
 * An unreachable node is retried with backoff (INITIALIZED gives up after MAX_SEND_ATTEMPTS).
 * outbox.ts takes the rows under a lease, so the processes of a WORKERS pool never work on the
 * same row at once, and a restart resumes whatever was left.
 */
import { TransactionReceiptNotFoundError, type Hex } from 'viem';
import type { Logger } from './log.js';
import type { SendTransactionRow, Store } from './storage/types.js';
import { isUnreachable, rpcReason, type EvmChains } from './chains/evm.js';
import { Outbox } from './outbox.js';
import { enqueueTransactionEvent } from './webhooks.js';

export interface BroadcastOptions {
  /** how often a BROADCASTING transaction's receipt is looked for (ms) */
  pollMs: number;
}

const MAX_IN_FLIGHT = 16;
const MAX_SEND_ATTEMPTS = 20;
const MAX_BACKOFF_MS = 60_000;
const MAX_PENDING_MS = 24 * 3600_000;

const BROADCASTERS = new WeakMap<Store, Broadcaster>();

/** After a commit that added a row: look for work soon. */
export function kickBroadcaster(store: Store): void {
  BROADCASTERS.get(store)?.kick();
}

type Next = Pick<SendTransactionRow, 'status' | 'error' | 'blockNumber' | 'attempts' | 'nextCheckMs'>;

export class Broadcaster {
  readonly #outbox: Outbox<SendTransactionRow>;

  constructor(
    private readonly store: Store,
    private readonly chains: EvmChains,
    private readonly log: Logger,
    private readonly opts: BroadcastOptions,
  ) {
    this.#outbox = new Outbox(store, {
      due: (now, limit) => store.sendTransactions.due(now, limit),
      claim: (row, until) => store.transaction(() => store.sendTransactions.claim(row.id, row.nextCheckMs!, until)),
      nextDueMs: () => store.sendTransactions.nextDueMs(),
    }, (row) => this.#work(row), log, { what: 'broadcasting', maxInFlight: MAX_IN_FLIGHT, leaseMs: 2 * chains.timeoutMs + 1_000 });
    BROADCASTERS.set(store, this);
    this.kick(); // rows left from before a restart
  }

  kick(): void { this.#outbox.kick(); }

  async #work(row: SendTransactionRow): Promise<void> {
    const next = await this.#step(row, Date.now());
    const now = Date.now();
    this.store.transaction(() => {
      this.store.sendTransactions.update({ id: row.id, ...next, updatedMs: now });
      if (next.status !== row.status) enqueueTransactionEvent(this.store, { ...row, ...next, updatedMs: now }, now);
    });
    if (next.status !== row.status) {
      this.log.info('sent transaction', { sendTransactionStatusId: row.id, caip2: row.caip2, txHash: row.txHash, status: next.status, ...(next.error ? { error: next.error } : {}) });
    }
  }

  /** What the node says of the row now. */
  async #step(row: SendTransactionRow, now: number): Promise<Next> {
    const keep = { status: row.status, error: null, blockNumber: row.blockNumber };
    const retry = (attempts: number): Next => ({ ...keep, attempts, nextCheckMs: now + Math.min(this.opts.pollMs * 2 ** Math.min(attempts, 16), MAX_BACKOFF_MS) });
    const failed = (error: string): Next => ({ status: 'FAILED', error, blockNumber: row.blockNumber, attempts: row.attempts + 1, nextCheckMs: null });
    if (!this.chains.has(row.caip2)) {
      // the endpoint was removed from RPC_URLS since: wait for it to come back
      this.log.warn('no RPC endpoint for a sent transaction\'s network', { sendTransactionStatusId: row.id, caip2: row.caip2 });
      return { ...keep, attempts: row.attempts, nextCheckMs: now + MAX_BACKOFF_MS };
    }
    const client = this.chains.client(row.caip2);
    if (row.status === 'INITIALIZED') {
      try {
        await client.sendRawTransaction({ serializedTransaction: `0x${row.signedTransaction}` as Hex });
        return { ...keep, status: 'BROADCASTING', attempts: row.attempts + 1, nextCheckMs: now + this.opts.pollMs };
      } catch (e) {
        if (isUnreachable(e)) {
          if (row.attempts + 1 >= MAX_SEND_ATTEMPTS) return failed(`the network's RPC endpoint did not answer after ${MAX_SEND_ATTEMPTS} attempts`);
          return retry(row.attempts + 1);
        }
        // Sent before (a restart between the send and its record): the node knows it, or it is mined.
        const seen = await this.#receiptOrUndefined(row);
        if (seen) return seen;
        if (/already known|known transaction|already imported/i.test(rpcReason(e))) {
          return { ...keep, status: 'BROADCASTING', attempts: row.attempts + 1, nextCheckMs: now + this.opts.pollMs };
        }
        return failed(`the network refused the transaction: ${rpcReason(e)}`);
      }
    }
    try {
      const r = await this.#receiptOrUndefined(row);
      if (r) return r;
    } catch (e) {
      if (!isUnreachable(e)) throw e;
    }
    if (now - row.createdMs > MAX_PENDING_MS) return failed('the transaction was not included within 24 hours of signing');
    return { ...keep, attempts: row.attempts, nextCheckMs: now + this.opts.pollMs };
  }

  /** INCLUDED / FAILED from the transaction's receipt, or undefined while it has none. */
  async #receiptOrUndefined(row: SendTransactionRow): Promise<Next | undefined> {
    try {
      const receipt = await this.chains.client(row.caip2).getTransactionReceipt({ hash: row.txHash as Hex });
      const blockNumber = receipt.blockNumber.toString();
      return receipt.status === 'success'
        ? { status: 'INCLUDED', error: null, blockNumber, attempts: row.attempts + 1, nextCheckMs: null }
        : { status: 'FAILED', error: `the transaction reverted (mined in block ${blockNumber})`, blockNumber, attempts: row.attempts + 1, nextCheckMs: null };
    } catch (e) {
      if (e instanceof TransactionReceiptNotFoundError) return undefined;
      throw e;
    }
  }

  /** Stops looking for work; waits for the steps under way. */
  async close(): Promise<void> {
    await this.#outbox.close();
    if (BROADCASTERS.get(this.store) === this) BROADCASTERS.delete(this.store);
  }
}

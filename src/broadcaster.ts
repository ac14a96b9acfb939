/**
 * Broadcasting of the transactions eth_send_transaction and sol_send_transaction signed
 * (send_transactions rows): sends each to its network's node once its activity is on disk, then
 * follows it until it is mined (EVM) or confirmed (Solana).
 *
 *   INITIALIZED  → the node accepts it (eth_sendRawTransaction, sendTransaction) → BROADCASTING
 *                → the node refuses it (nonce too low, insufficient funds, …) → FAILED, unless
 *                  it has the transaction (BROADCASTING) or settled it; while it cannot tell,
 *                  the refusal is kept (INITIALIZED, `error`) and only asked about again, never
 *                  sent again
 *   BROADCASTING → EVM: a receipt with status 1 → INCLUDED; status 0 → FAILED (reverted)
 *                → Solana: a confirmed or finalized status → INCLUDED; one with an err → FAILED;
 *                  still unseen once its blockhash expired → FAILED
 *                → neither within MAX_PENDING_MS of signing → FAILED
 *
 * An unreachable node is retried with backoff (INITIALIZED gives up after MAX_SEND_ATTEMPTS).
 * outbox.ts takes the rows under a lease, so the processes of a WORKERS pool never work on the
 * same row at once, and a restart resumes whatever was left.
 */
import { TransactionNotFoundError, TransactionReceiptNotFoundError, type Hex } from 'viem';
import type { Logger } from './log.js';
import type { Db, SendTransactionRow } from './storage/types.js';
import { isRateLimited, isUnreachable, rpcReason, type Networks } from './chains/networks.js';
import { isSolana } from './chains/caip2.js';
import { hexToBytes } from './crypto/index.js';
import { parseSolanaTransaction } from './chains/solana.js';
import { base58 } from '@scure/base';
import { Outbox } from './outbox.js';
import { enqueueTransactionEvent } from './webhooks.js';

export interface BroadcastOptions {
  /** how often a BROADCASTING transaction's receipt is looked for (ms) */
  pollMs: number;
  /** the longest the outbox goes without looking for due rows (OUTBOX_POLL_MS) */
  outboxPollMs: number;
}

const MAX_IN_FLIGHT = 16;
const MAX_SEND_ATTEMPTS = 20;
const MAX_BACKOFF_MS = 60_000;
const MAX_PENDING_MS = 24 * 3600_000;
/**
 * The most calls to the node one step makes one after the other (a refused send: the send, the
 * receipt, the transaction by hash), each bounded by the RPC timeout: the lease outlasts them, so
 * no other process takes a row while its step is under way.
 */
const STEP_CALLS = 3;


type Next = Pick<SendTransactionRow, 'status' | 'error' | 'blockNumber' | 'attempts' | 'nextCheckMs'>;

/** How one family of networks sends a transaction and tells what became of it. */
interface Network {
  send(): Promise<void>;
  /** INCLUDED / FAILED once the network has settled it; undefined while it is pending */
  settled(): Promise<Next | undefined>;
  /**
   * Whether the node has the transaction already, after it refused it: a send that timed out may
   * have reached it, and nodes word the refusal of a repeat differently (geth "already known",
   * ganache "transaction underpriced"), so the node is asked for the transaction itself.
   */
  known(reason: string): Promise<boolean>;
  /** why a pending transaction can no longer land, if it cannot */
  lapsed(now: number): Promise<string | undefined>;
}

const settled = (row: SendTransactionRow, status: 'INCLUDED' | 'FAILED', error: string | null, blockNumber: string): Next =>
  ({ status, error, blockNumber, attempts: row.attempts + 1, nextCheckMs: null });

/** How long a Solana transaction may stay unconfirmed before kmas asks whether its blockhash expired. */
const SOLANA_BLOCKHASH_CHECK_MS = 60_000;

export class Broadcaster {
  readonly #outbox: Outbox<SendTransactionRow>;

  constructor(
    private readonly db: Db,
    private readonly chains: Networks,
    /** has the webhook dispatcher look for the status events this writes */
    private readonly kickDeliveries: () => void,
    private readonly log: Logger,
    private readonly opts: BroadcastOptions,
  ) {
    this.#outbox = new Outbox(db, {
      due: (now, limit) => db.read((tx) => tx.sendTransactions.due(now, limit)),
      claim: (row, until) => db.write((tx) => tx.sendTransactions.claim(row.id, row.nextCheckMs!, until)),
      nextDueMs: () => db.read((tx) => tx.sendTransactions.nextDueMs()),
      release: async (row, until) => { await db.write((tx) => tx.sendTransactions.claim(row.id, until, Date.now())); },
    }, (row) => this.#work(row), log, { what: 'broadcasting', maxInFlight: MAX_IN_FLIGHT, leaseMs: STEP_CALLS * chains.timeoutMs + 1_000, pollMs: opts.outboxPollMs });
    this.kick(); // rows left from before a restart
  }

  kick(): void { this.#outbox.kick(); }

  async #work(row: SendTransactionRow): Promise<void> {
    const next = await this.#step(row, Date.now());
    const now = Date.now();
    await this.db.write(async (tx) => {
      await tx.sendTransactions.update({ id: row.id, ...next, updatedMs: now });
      if (next.status !== row.status) await enqueueTransactionEvent(tx, this.kickDeliveries, { ...row, ...next, updatedMs: now }, now);
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
    const broadcasting: Next = { ...keep, status: 'BROADCASTING', attempts: row.attempts + 1, nextCheckMs: now + this.opts.pollMs };
    if (!this.chains.has(row.caip2)) {
      // the endpoint was removed from RPC_URLS since: wait for it to come back
      this.log.warn('no RPC endpoint for a sent transaction\'s network', { sendTransactionStatusId: row.id, caip2: row.caip2 });
      return { ...keep, error: row.error, attempts: row.attempts, nextCheckMs: now + MAX_BACKOFF_MS };
    }
    const network = isSolana(row.caip2) ? this.#solana(row) : this.#evm(row);
    if (row.status === 'INITIALIZED') {
      // an INITIALIZED row's error: the node's refusal of its send, kept while the node could not tell whether it has it
      let refusal = row.error;
      if (refusal === null) {
        try {
          await network.send();
          return broadcasting;
        } catch (e) {
          if (isUnreachable(e) || isRateLimited(e)) {
            if (row.attempts + 1 >= MAX_SEND_ATTEMPTS) return failed(`the network's RPC endpoint did not ${isUnreachable(e) ? 'answer' : 'take the transaction (rate limited)'} after ${MAX_SEND_ATTEMPTS} attempts`);
            return retry(row.attempts + 1);
          }
          refusal = `the network refused the transaction: ${rpcReason(e)}`;
        }
      }
      try {
        // Sent before (a restart between the send and its record, or a send that timed out after it
        // reached the node): the node has it, or it is settled.
        const seen = await network.settled();
        if (seen) return seen;
        if (await network.known(refusal)) return broadcasting;
        return failed(refusal);
      } catch (e) {
        // The node refused it but cannot say now whether it has it: the refusal is kept and the
        // node asked again at the next poll, as for a BROADCASTING row; sending it again would
        // only be refused again, and once per lease, without end (the attempts did not count).
        if (!isUnreachable(e)) {
          this.log.warn('the network refused a transaction and could not tell whether it has it; asking again', { sendTransactionStatusId: row.id, caip2: row.caip2, error: rpcReason(e) });
        }
        if (now - row.createdMs > MAX_PENDING_MS) return failed(refusal);
        return { ...keep, error: refusal, attempts: row.error === null ? row.attempts + 1 : row.attempts, nextCheckMs: now + this.opts.pollMs };
      }
    }
    try {
      const settled = await network.settled();
      if (settled) return settled;
      const lapsed = now - row.createdMs > MAX_PENDING_MS ? 'the transaction was not included within 24 hours of signing' : await network.lapsed(now);
      if (lapsed) return failed(lapsed);
    } catch (e) {
      // Not answered, or answered with an error (rate limited, busy, …): the transaction may still
      // land, so it is asked about again at the next poll (not only once the row's lease ends).
      if (!isUnreachable(e)) {
        this.log.warn('the network could not tell what became of a sent transaction; asking again', { sendTransactionStatusId: row.id, caip2: row.caip2, error: rpcReason(e) });
      }
    }
    return { ...keep, attempts: row.attempts, nextCheckMs: now + this.opts.pollMs };
  }

  /** An EVM network: the raw transaction, its receipt. */
  #evm(row: SendTransactionRow): Network {
    const client = this.chains.evm(row.caip2);
    return {
      send: async () => { await client.sendRawTransaction({ serializedTransaction: `0x${row.signedTransaction}` as Hex }); },
      settled: async () => {
        try {
          const receipt = await client.getTransactionReceipt({ hash: row.txHash as Hex });
          const blockNumber = receipt.blockNumber.toString();
          return receipt.status === 'success'
            ? settled(row, 'INCLUDED', null, blockNumber)
            : settled(row, 'FAILED', `the transaction reverted (mined in block ${blockNumber})`, blockNumber);
        } catch (e) {
          if (e instanceof TransactionReceiptNotFoundError) return undefined;
          throw e;
        }
      },
      known: async (reason) => {
        if (/already known|known transaction|already imported/i.test(reason)) return true;
        try {
          await client.getTransaction({ hash: row.txHash as Hex });
          return true;
        } catch (e) {
          if (e instanceof TransactionNotFoundError) return false;
          throw e;
        }
      },
      lapsed: async () => undefined,
    };
  }

  /** A Solana network: the wire transaction, its signature's status (confirmed or finalized counts as included). */
  #solana(row: SendTransactionRow): Network {
    const rpc = this.chains.solana(row.caip2);
    return {
      send: async () => { await rpc.sendTransaction(hexToBytes(row.signedTransaction)); },
      settled: async () => {
        const st = await rpc.signatureStatus(row.txHash);
        if (!st) return undefined;
        if (st.err !== null && st.err !== undefined) return settled(row, 'FAILED', `the transaction failed in slot ${st.slot}: ${JSON.stringify(st.err).slice(0, 300)}`, String(st.slot));
        if (st.confirmationStatus === 'confirmed' || st.confirmationStatus === 'finalized') return settled(row, 'INCLUDED', null, String(st.slot));
        return undefined;
      },
      known: async (reason) => /already (been )?processed/i.test(reason) || (await rpc.signatureStatus(row.txHash)) !== null,
      // A transaction whose blockhash has expired can no longer land (about a minute after it was fetched).
      lapsed: async (now) => {
        if (now - row.createdMs < SOLANA_BLOCKHASH_CHECK_MS) return undefined;
        const blockhash = base58.encode(parseSolanaTransaction(row.signedTransaction, 'signedTransaction').recentBlockhash);
        return (await rpc.isBlockhashValid(blockhash)) ? undefined : 'the transaction\'s blockhash expired before it was confirmed';
      },
    };
  }

  /** Stops looking for work; waits for the steps under way (at most graceMs, then releases them). */
  async close(graceMs?: number): Promise<void> {
    await this.#outbox.close(graceMs);
  }
}

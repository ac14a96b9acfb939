/**
 * A Solana JSON-RPC endpoint: the few calls broadcasting needs (sendTransaction,
 * getSignatureStatuses, getLatestBlockhash, isBlockhashValid, getBalance), as plain JSON-RPC 2.0
 * over fetch.
 */

/** The node answered with a JSON-RPC error (it refused the call). */
export class SolanaRpcError extends Error {
  constructor(readonly code: number, message: string, readonly data?: unknown) {
    super(message);
    this.name = 'SolanaRpcError';
  }
}

/** The node could not be reached or did not answer in time. */
export class SolanaTransportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SolanaTransportError';
  }
}

export interface SignatureStatus { slot: number; err: unknown; confirmationStatus: 'processed' | 'confirmed' | 'finalized' | null }

export class SolanaRpc {
  #id = 0;

  constructor(private readonly url: string, private readonly timeoutMs: number) {}

  async call<T>(method: string, params: unknown[]): Promise<T> {
    let res: Response;
    try {
      res = await fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: ++this.#id, method, params }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (e) {
      throw new SolanaTransportError(`${method}: ${(e as Error).name === 'TimeoutError' ? 'timed out' : ((e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message)}`);
    }
    if (!res.ok) { await res.arrayBuffer().catch(() => undefined); throw new SolanaTransportError(`${method}: HTTP ${res.status}`); }
    let body: { result?: T; error?: { code?: number; message?: string; data?: unknown } };
    try { body = await res.json() as typeof body; } catch { throw new SolanaTransportError(`${method}: the reply is not JSON`); }
    if (body.error) throw new SolanaRpcError(body.error.code ?? 0, String(body.error.message ?? 'error').slice(0, 300), body.error.data);
    return body.result as T;
  }

  /** Sends a signed wire transaction; the node's signature for it. */
  sendTransaction(wire: Uint8Array): Promise<string> {
    return this.call('sendTransaction', [Buffer.from(wire).toString('base64'), { encoding: 'base64', preflightCommitment: 'confirmed' }]);
  }

  async signatureStatus(signature: string): Promise<SignatureStatus | null> {
    const r = await this.call<{ value: (SignatureStatus | null)[] }>('getSignatureStatuses', [[signature], { searchTransactionHistory: true }]);
    return r.value[0] ?? null;
  }

  async latestBlockhash(): Promise<string> {
    const r = await this.call<{ value: { blockhash: string } }>('getLatestBlockhash', [{ commitment: 'confirmed' }]);
    return r.value.blockhash;
  }

  async isBlockhashValid(blockhash: string): Promise<boolean> {
    const r = await this.call<{ value: boolean }>('isBlockhashValid', [blockhash, { commitment: 'confirmed' }]);
    return r.value;
  }

  async balance(address: string): Promise<bigint> {
    const r = await this.call<{ value: number }>('getBalance', [address, { commitment: 'confirmed' }]);
    return BigInt(r.value);
  }
}

/**
 * The networks kmas broadcasts to: one JSON-RPC endpoint per CAIP-2 id (RPC_URLS). EVM networks
 * are reached with viem's public client, Solana networks with chains/solana.ts. Handlers find
 * them through the store (attachChains / chainsOf), as the auth flows find their services.
 */
import { createPublicClient, http, type PublicClient } from 'viem';
import { ApiError, Grpc, invalidArgument } from '../errors.js';
import { evmChainId, isSolana } from './caip2.js';
import { SolanaRpc, SolanaTransportError } from './solanaRpc.js';

export { evmChainId } from './caip2.js';

export class Networks {
  readonly #evm = new Map<string, PublicClient>();
  readonly #solana = new Map<string, SolanaRpc>();
  /** EVM networks whose node was asked which chain it serves */
  readonly #checked = new Map<string, Promise<void>>();

  /** entries: `caip2=url` (config.rpcUrls). */
  constructor(entries: readonly string[], readonly timeoutMs: number) {
    for (const e of entries) {
      const eq = e.indexOf('=');
      const caip2 = e.slice(0, eq);
      const url = e.slice(eq + 1);
      if (isSolana(caip2)) this.#solana.set(caip2, new SolanaRpc(url, timeoutMs));
      else this.#evm.set(caip2, createPublicClient({ transport: http(url, { timeout: timeoutMs, retryCount: 0 }) }));
    }
  }

  get configured(): string[] { return [...this.#evm.keys(), ...this.#solana.keys()]; }

  has(caip2: string): boolean { return this.#evm.has(caip2) || this.#solana.has(caip2); }

  /** The client of a configured EVM network; a 400 naming `field` otherwise. */
  evm(caip2: string, field = 'caip2'): PublicClient {
    return this.#evm.get(caip2) ?? this.#missing(caip2, field);
  }

  /**
   * The client of a configured EVM network once its node has shown it serves that chain (asked
   * once per process; a failed check is asked again next time). A node serving another chain is
   * a configuration error: 500, RPC_MISCONFIGURED.
   */
  evmChecked(caip2: string, field = 'caip2'): Promise<PublicClient> {
    const client = this.evm(caip2, field);
    let checked = this.#checked.get(caip2);
    if (!checked) {
      checked = client.getChainId().then((chainId) => {
        if (chainId !== evmChainId(caip2)) {
          throw new ApiError(Grpc.INTERNAL, `the RPC endpoint configured for ${caip2} serves chain ${chainId}: check RPC_URLS`, { turnkeyErrorCode: 'RPC_MISCONFIGURED' });
        }
      });
      checked.catch(() => this.#checked.delete(caip2));
      this.#checked.set(caip2, checked);
    }
    return checked.then(() => client);
  }

  /** The client of a configured Solana network; a 400 naming `field` otherwise. */
  solana(caip2: string, field = 'caip2'): SolanaRpc {
    return this.#solana.get(caip2) ?? this.#missing(caip2, field);
  }

  /** A 400 naming `field` unless kmas has an endpoint for the network. */
  require(caip2: string, field = 'caip2'): void {
    if (!this.has(caip2)) this.#missing(caip2, field);
  }

  #missing(caip2: string, field: string): never {
    const configured = this.configured;
    const which = configured.length === 0 ? 'no network is configured (RPC_URLS)' : `configured: ${configured.join(', ')}`;
    throw invalidArgument(`${field}: kmas has no RPC endpoint for ${caip2.slice(0, 64)} (${which})`,
      [{ field, description: `must name a network this server broadcasts to (${which})` }]);
  }
}

/** A failed JSON-RPC exchange as the API answers it: the node's refusal (400 naming `what`, a field) or an unreachable node (503). */
export function rpcError(e: unknown, what: string): ApiError {
  if (e instanceof ApiError) return e;
  const reason = rpcReason(e);
  if (isUnreachable(e)) {
    return new ApiError(Grpc.UNAVAILABLE, `${what}: the network's RPC endpoint did not answer (${reason})`, { turnkeyErrorCode: 'RPC_UNAVAILABLE' });
  }
  return new ApiError(Grpc.INVALID_ARGUMENT, `${what}: the network refused it (${reason})`,
    { turnkeyErrorCode: 'RPC_REFUSED', fieldViolations: [{ field: what, description: `refused by the network: ${reason}` }] });
}

/** The node's (or the transport's) reason for a failed call, on one line. */
export function rpcReason(e: unknown): string {
  const err = e as { shortMessage?: string; details?: string; message?: string };
  return String(err.details || err.shortMessage || err.message || e).split('\n')[0]!.slice(0, 300);
}

/**
 * Whether a node's answer says "not now" rather than "no": JSON-RPC -32005 (limit exceeded), as a
 * rate-limited provider answers. A send answered so is tried again, not taken as refused.
 */
export function isRateLimited(e: unknown): boolean {
  for (let x = e as { code?: unknown; name?: string; cause?: unknown } | undefined, i = 0; x && i < 6; x = x.cause as typeof x, i++) {
    if (x.code === -32005 || x.name === 'LimitExceededRpcError') return true;
  }
  return false;
}

/** Whether an RPC failure is the transport's (timeout, connection, HTTP status) rather than the node's answer. */
export function isUnreachable(e: unknown): boolean {
  if (e instanceof SolanaTransportError) return true;
  for (let x = e as { name?: string; cause?: unknown } | undefined, i = 0; x && i < 6; x = x.cause as typeof x, i++) {
    if (x.name === 'HttpRequestError' || x.name === 'TimeoutError' || x.name === 'WebSocketRequestError') return true;
  }
  return false;
}

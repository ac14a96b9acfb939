/** CAIP-2 network ids kmas broadcasts to: `eip155:<chain id>` and `solana:<genesis hash prefix>`. */

/** A Solana CAIP-2 id: the first 32 base58 characters of the genesis hash (CAIP-30). */
export const SOLANA_CAIP2 = /^solana:[1-9A-HJ-NP-Za-km-z]{32}$/;

/** The swagger's human-readable Solana aliases and the ids they stand for. */
const SOLANA_ALIASES: Record<string, string> = {
  'solana:mainnet': 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
  'solana:devnet': 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
};

/** `solana:mainnet` / `solana:devnet` → their CAIP-2 ids; anything else as given. */
export function normalizeCaip2(caip2: string): string {
  return SOLANA_ALIASES[caip2] ?? caip2;
}

/** `eip155:<decimal chain id>` → the chain id (undefined for anything else). */
export function evmChainId(caip2: string): number | undefined {
  const m = /^eip155:([1-9]\d{0,15})$/.exec(caip2);
  if (!m) return undefined;
  const id = Number(m[1]);
  return Number.isSafeInteger(id) ? id : undefined;
}

export const isSolana = (caip2: string): boolean => SOLANA_CAIP2.test(caip2);

/** How a sent transaction is named in replies and events: `eth.txHash`, or `solana.signature`. */
export function txReference(caip2: string, hash: string): { eth: { txHash: string } } | { solana: { signature: string } } {
  return isSolana(caip2) ? { solana: { signature: hash } } : { eth: { txHash: hash } };
}

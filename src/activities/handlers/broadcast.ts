/**
 * Broadcasting to EVM and Solana networks through the JSON-RPC endpoints of RPC_URLS (src/chains/networks.ts):
 *
 * - eth_send_transaction (V2): kmas fills what the caller left out (nonce, gas limit, EIP-1559
 *   fees) from the node, signs an EIP-1559 transaction with the `from` key on the wasm core, and
 *   stores it with the activity; src/broadcaster.ts sends it once that commit is on disk and
 *   follows it (get_send_transaction_status: INITIALIZED → BROADCASTING → INCLUDED / FAILED).
 * - eth_send_raw_transaction: a transaction signed elsewhere, sent to the node before the
 *   activity is stored; the node's refusal is the reply (nothing stored).
 * - get_nonces: the address's pending nonce, from the node.
 * - get_wallet_address_balances: a wallet account's native balance, from the node (no token
 *   balances: kmas keeps no token list; no USD value: kmas has no price feed).
 *
 * - sol_send_transaction (V2): kmas signs a Solana transaction with each `signWiths` key (after
 *   putting in the caller's recentBlockhash, or a fresh one when the transaction's is all zeros),
 *   stores it and sends it as eth_send_transaction's are (status by its first signature).
 *
 * Turnkey's Gas Station (sponsor, gasStationNonce, several calls in one EIP-7702 batch) has no
 * counterpart here: such requests are refused with a 400 naming the field.
 */
import { formatUnits, getAddress, isAddress, keccak256, parseTransaction, serializeTransaction, type Hex, type TransactionSerializableEIP1559 } from 'viem';
import { Grpc, invalidArgument, notFound } from '../../errors.js';
import { evmChainId, rpcError } from '../../chains/networks.js';
import { cryptoCall, resolveSigningKey, type SigningKey } from '../../domain/keys.js';
import type { SendTransactionRow, Tx } from '../../storage/types.js';
import { keysFor, type QueryOperation, type SubmitOperation } from '../types.js';
import { Validator, type Obj } from '../../domain/validate.js';
import { requireKeyAdmin } from './keyParams.js';
import type { PolicyTargets } from '../../policy/scope.js';
import { equalBytes, hexToBytes } from '../../crypto/index.js';
import { parseSolanaTransaction, solanaSignerSlot, withRecentBlockhash, type SolanaTransaction } from '../../chains/solana.js';
import { isSolana, normalizeCaip2, txReference } from '../../chains/caip2.js';
import { base58 } from '@scure/base';

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const HEX_DATA = /^0x([0-9a-fA-F]{2})*$/;
const UINT256 = /^(0|[1-9]\d{0,77})$/;
const MAX_UINT256 = (1n << 256n) - 1n;

/** The networks an operation takes, and how a refusal describes them. */
const NETWORKS = {
  evm: { accepts: (c: string) => evmChainId(c) !== undefined, what: 'an EVM network as eip155:<chain id> (e.g. eip155:1)' },
  solana: { accepts: isSolana, what: 'a Solana network: solana:<genesis hash prefix>, solana:mainnet or solana:devnet' },
  any: { accepts: (c: string) => evmChainId(c) !== undefined || isSolana(c), what: 'eip155:<chain id> or a Solana network (solana:<genesis hash prefix>, solana:mainnet, solana:devnet)' },
};

/** `caip2`, with the Solana aliases normalized, if it names a network of the kind the operation takes. */
function readCaip2(v: Validator, o: Obj, kind: keyof typeof NETWORKS): string | undefined {
  const given = v.string(o, 'caip2', 'caip2', { required: true, max: 64 });
  if (given === undefined) return undefined;
  const caip2 = normalizeCaip2(given);
  if (!NETWORKS[kind].accepts(caip2)) { v.fail('caip2', `must be ${NETWORKS[kind].what}`); return undefined; }
  return caip2;
}

function readAddress(v: Validator, o: Obj, key: string, field: string, required: boolean, what = 'an Ethereum address (0x and 40 hex digits)'): string | undefined {
  const a = v.string(o, key, field, { required, max: 42, pattern: ADDRESS, patternDesc: `must be ${what}` });
  // mixed case is an EIP-55 checksum, and must be right (all lower or all upper case carries none)
  const hex = a?.slice(2);
  if (a !== undefined && hex !== hex!.toUpperCase() && !isAddress(a, { strict: true })) {
    v.fail(field, 'has a wrong EIP-55 checksum (mixed-case letters that do not match it)');
    return undefined;
  }
  return a;
}

/** A decimal uint256 (wei, gas, fees); undefined when absent or empty. */
function readUint(v: Validator, o: Obj, key: string, field: string): string | undefined {
  const x = o[key];
  if (x === undefined || x === null || x === '') return undefined;
  if (typeof x !== 'string' || !UINT256.test(x) || BigInt(x) > MAX_UINT256) { v.fail(field, 'must be a decimal integer string (at most 2^256 - 1)'); return undefined; }
  return x;
}

// ---- eth_send_transaction ---------------------------------------------------------------------

interface EthCall { to?: string; value?: string; data?: string }
interface EthSendTransaction {
  from: string;
  caip2: string;
  sponsor?: boolean;
  nonce?: string;
  gasLimit?: string;
  maxFeePerGas?: string;
  maxPriorityFeePerGas?: string;
  calls: EthCall[];
}
/** What the node gave for the fields the caller left out (external), as decimal strings. */
interface Filled { nonce: string; gasLimit: string; maxFeePerGas: string; maxPriorityFeePerGas: string }

const SIGNER = Symbol('signer');
type WithSigner<T> = T & { [SIGNER]?: SigningKey };

/** The secp256k1 key of the organization whose Ethereum address is `from` (400 / 404 naming `from`). */
async function signerOf(tx: Tx, organizationId: string, intent: WithSigner<EthSendTransaction>): Promise<SigningKey> {
  return intent[SIGNER] ?? await resolveSigner(tx, organizationId, intent);
}

async function resolveSigner(tx: Tx, organizationId: string, intent: EthSendTransaction): Promise<SigningKey> {
  const key = await resolveSigningKey(tx, organizationId, getAddress(intent.from), 'from');
  if (key.curve !== 'secp256k1') {
    throw invalidArgument(`from: ${intent.from} is not the address of a CURVE_SECP256K1 key`, [{ field: 'from', description: 'must be the Ethereum address of a secp256k1 private key or wallet account' }]);
  }
  return key;
}

/** The EIP-1559 transaction of the intent, with the node's values for what it left out. */
function transactionOf(intent: EthSendTransaction, filled: Filled): TransactionSerializableEIP1559 {
  const call = intent.calls[0]!;
  return {
    type: 'eip1559',
    chainId: evmChainId(intent.caip2)!,
    nonce: Number(filled.nonce),
    gas: BigInt(filled.gasLimit),
    maxFeePerGas: BigInt(filled.maxFeePerGas),
    maxPriorityFeePerGas: BigInt(filled.maxPriorityFeePerGas),
    ...(call.to !== undefined ? { to: getAddress(call.to) } : {}),
    value: BigInt(call.value ?? '0'),
    ...(call.data !== undefined && call.data !== '0x' ? { data: call.data as Hex } : {}),
  };
}

/**
 * The node's values with the nonce kmas will use. The node's pending nonce (asked before the
 * transaction) does not count what kmas has signed and not sent yet, nor what was mined since it
 * was asked: sends from one address that overlap get consecutive nonces (the sender's lock, held
 * to the commit, orders them). The same in the policy decision and in execute: one transaction.
 */
async function withNonce(tx: Tx, intent: EthSendTransaction, external: Filled): Promise<Filled> {
  const filled = { ...external };
  if (intent.nonce === undefined) {
    const fromAddress = getAddress(intent.from);
    await tx.lock('sender-nonce', `${intent.caip2}/${fromAddress.toLowerCase()}`);
    const ours = await tx.sendTransactions.highestUsedNonce(intent.caip2, fromAddress);
    if (ours !== undefined && ours + 1 > Number(filled.nonce)) filled.nonce = String(ours + 1);
  }
  return filled;
}

export const ethSendTransaction: SubmitOperation<WithSigner<EthSendTransaction>, { sendTransactionStatusId: string }> = {
  kind: 'submit',
  path: 'eth_send_transaction',
  types: { ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2: keysFor('ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2') },
  validate(params: Obj) {
    const v = new Validator();
    const from = readAddress(v, params, 'from', 'from', true, 'the Ethereum address of a key or wallet account (private key ids are not accepted)');
    const caip2 = readCaip2(v, params, 'evm');
    const sponsor = v.boolean(params, 'sponsor', 'sponsor');
    if (sponsor === true) v.fail('sponsor', 'gas sponsorship (Turnkey\'s Gas Station) is not available on kmas: send with sponsor false, the sender pays the gas');
    for (const k of ['deadline', 'gasStationNonce']) {
      if (params[k] !== undefined && params[k] !== null && params[k] !== '') v.fail(k, 'is only used with sponsor true (Turnkey\'s Gas Station), which kmas does not have');
    }
    const nonce = readUint(v, params, 'nonce', 'nonce');
    if (nonce !== undefined && BigInt(nonce) > BigInt(Number.MAX_SAFE_INTEGER)) v.fail('nonce', 'must be at most 2^53 - 1');
    const gasLimit = readUint(v, params, 'gasLimit', 'gasLimit');
    const maxFeePerGas = readUint(v, params, 'maxFeePerGas', 'maxFeePerGas');
    const maxPriorityFeePerGas = readUint(v, params, 'maxPriorityFeePerGas', 'maxPriorityFeePerGas');
    if (maxFeePerGas !== undefined && maxPriorityFeePerGas !== undefined && BigInt(maxPriorityFeePerGas) > BigInt(maxFeePerGas)) {
      v.fail('maxPriorityFeePerGas', 'must not exceed maxFeePerGas');
    }
    const list = v.array(params, 'calls', 'calls', { required: true, nonEmpty: true, max: 50 }) ?? [];
    if (list.length > 1) v.fail('calls', 'several calls in one transaction need EIP-7702 batch execution through Turnkey\'s Gas Station, which kmas does not have: send one call per transaction');
    const calls: EthCall[] = [];
    list.forEach((c, i) => {
      const o = v.object(c, `calls[${i}]`);
      if (!o) return;
      const call: EthCall = {};
      const to = readAddress(v, o, 'to', `calls[${i}].to`, false);
      if (to !== undefined) call.to = to;
      const value = readUint(v, o, 'value', `calls[${i}].value`);
      if (value !== undefined) call.value = value;
      const data = v.string(o, 'data', `calls[${i}].data`, { max: 1 << 20, pattern: HEX_DATA, patternDesc: 'must be hex bytes with the 0x prefix' });
      if (data !== undefined) call.data = data.toLowerCase();
      if (call.to === undefined && (call.data === undefined || call.data === '0x')) v.fail(`calls[${i}]`, 'needs a `to` address, or `data` (the code) to deploy a contract');
      calls.push(call);
    });
    v.done();
    const intent: EthSendTransaction = { from: from!, caip2: caip2!, calls };
    if (sponsor !== undefined) intent.sponsor = sponsor;
    if (nonce !== undefined) intent.nonce = nonce;
    if (gasLimit !== undefined) intent.gasLimit = gasLimit;
    if (maxFeePerGas !== undefined) intent.maxFeePerGas = maxFeePerGas;
    if (maxPriorityFeePerGas !== undefined) intent.maxPriorityFeePerGas = maxPriorityFeePerGas;
    return intent;
  },
  async authorize(p, intent, store, services) {
    services.chains.evm(intent.caip2);
    // resolved anew every time (in the transaction too): the key may have gone since
    const key = await resolveSigner(store, p.organization.id, intent);
    Object.defineProperty(intent, SIGNER, { value: key, enumerable: false, configurable: true });
    requireKeyAdmin(p, 'send transactions with keys of the organization');
  },
  policyReadsExternal: true,
  async policyTargets(intent, store, organizationId, external): Promise<PolicyTargets> {
    const key = await signerOf(store, organizationId, intent);
    // the transaction execute signs, with the node's values (policyReadsExternal: only decided in the write)
    if (external === undefined) throw new Error('eth_send_transaction: its policies are decided only once the node has filled the transaction in');
    const unsigned = serializeTransaction(transactionOf(intent, await withNonce(store, intent, external as Filled)));
    return { ...(key.kind === 'private_key' ? { privateKeyId: key.id } : { walletAccountAddress: getAddress(intent.from) }), ethereumTransaction: unsigned };
  },
  async external(intent, services): Promise<Filled> {
    const account = getAddress(intent.from);
    const call = intent.calls[0]!;
    try {
      const client = await services.chains.evmChecked(intent.caip2);
      const [nonce, fees] = await Promise.all([
        intent.nonce ?? client.getTransactionCount({ address: account, blockTag: 'pending' }).then(String),
        intent.maxFeePerGas !== undefined && intent.maxPriorityFeePerGas !== undefined ? undefined : client.estimateFeesPerGas({ type: 'eip1559', chain: null }),
      ]);
      const maxPriorityFeePerGas = intent.maxPriorityFeePerGas ?? String(fees!.maxPriorityFeePerGas);
      let maxFeePerGas = intent.maxFeePerGas ?? String(fees!.maxFeePerGas);
      if (intent.maxFeePerGas === undefined && BigInt(maxFeePerGas) < BigInt(maxPriorityFeePerGas)) maxFeePerGas = maxPriorityFeePerGas;
      let gasLimit = intent.gasLimit;
      if (gasLimit === undefined) {
        try {
          gasLimit = String(await client.estimateGas({
            account, value: BigInt(call.value ?? '0'),
            ...(call.to !== undefined ? { to: getAddress(call.to) } : {}),
            ...(call.data !== undefined && call.data !== '0x' ? { data: call.data as Hex } : {}),
          }));
        } catch (e) {
          const err = rpcError(e, 'calls[0]');
          if (err.code === Grpc.INVALID_ARGUMENT) {
            throw invalidArgument(`calls[0]: the network cannot estimate its gas (the call would fail): ${err.message.replace(/^calls\[0\]: the network refused it /, '')}`,
              [{ field: 'calls[0]', description: 'would fail on the network (estimating its gas failed); give gasLimit to send it anyway' }]);
          }
          throw err;
        }
      }
      return { nonce, gasLimit, maxFeePerGas, maxPriorityFeePerGas };
    } catch (e) {
      throw rpcError(e, 'caip2');
    }
  },
  async execute(ctx, intent) {
    const key = await signerOf(ctx.tx, ctx.organization.id, intent);
    const fromAddress = getAddress(intent.from);
    const filled = await withNonce(ctx.tx, intent, ctx.external as Filled);
    const unsigned = serializeTransaction(transactionOf(intent, filled));
    const signed = cryptoCall(() => ctx.services.vault.sign(key.sealed, key.ctx, { op: 'transaction', curve: key.curve, unsignedTransaction: unsigned.slice(2) }) as string);
    const hex = signed.replace(/^0x/, '');
    const row: SendTransactionRow = {
      id: ctx.newId(), organizationId: ctx.organization.id, activityId: ctx.activityId ?? '', caip2: intent.caip2,
      fromAddress, txHash: keccak256(`0x${hex}`), nonce: Number(filled.nonce), signedTransaction: hex,
      status: 'INITIALIZED', error: null, blockNumber: null, attempts: 0, nextCheckMs: ctx.nowMs, createdMs: ctx.nowMs, updatedMs: ctx.nowMs,
    };
    await ctx.tx.sendTransactions.insert(row);
    ctx.tx.afterCommit(ctx.services.kick.broadcasts);
    return { sendTransactionStatusId: row.id };
  },
};

// ---- eth_send_raw_transaction -----------------------------------------------------------------

interface EthSendRawTransaction { signedTransaction: string; caip2: string }

/** Hex as given (with or without 0x) → lower-case 0x hex. */
const prefixed = (hex: string): Hex => (hex.startsWith('0x') ? hex : `0x${hex}`).toLowerCase() as Hex;

export const ethSendRawTransaction: SubmitOperation<EthSendRawTransaction, { transactionHash: string }> = {
  kind: 'submit',
  path: 'eth_send_raw_transaction',
  types: { ACTIVITY_TYPE_ETH_SEND_RAW_TRANSACTION: keysFor('ACTIVITY_TYPE_ETH_SEND_RAW_TRANSACTION') },
  validate(params: Obj) {
    const v = new Validator();
    const given = v.string(params, 'signedTransaction', 'signedTransaction', { required: true, max: 1 << 20, pattern: /^(0x)?([0-9a-fA-F]{2})+$/, patternDesc: 'must be the signed transaction in hex' });
    const caip2 = readCaip2(v, params, 'evm');
    if (given !== undefined) {
      try {
        const tx = parseTransaction(prefixed(given));
        if (tx.r === undefined || tx.s === undefined) v.fail('signedTransaction', 'is not signed (no signature): sign it first, e.g. with sign_transaction');
        else if (tx.chainId === undefined) v.fail('signedTransaction', 'has no chain id (a pre-EIP-155 legacy transaction): kmas only sends replay-protected transactions');
        else if (caip2 !== undefined && tx.chainId !== evmChainId(caip2)) v.fail('signedTransaction', `is for chain ${tx.chainId}, not ${caip2}`);
      } catch (e) {
        v.fail('signedTransaction', `cannot be parsed as an Ethereum transaction: ${String((e as { shortMessage?: string }).shortMessage ?? e).split('\n')[0]!.slice(0, 200)}`);
      }
    }
    v.done();
    return { signedTransaction: given!, caip2: caip2! };
  },
  authorize(p, intent, store, services) {
    services.chains.evm(intent.caip2);
    requireKeyAdmin(p, 'broadcast transactions for the organization');
  },
  async external(intent, services): Promise<string> {
    const client = services.chains.evm(intent.caip2);
    try {
      return await client.sendRawTransaction({ serializedTransaction: prefixed(intent.signedTransaction) });
    } catch (e) {
      throw rpcError(e, 'signedTransaction');
    }
  },
  readOnly: true,
  execute(ctx) {
    return { transactionHash: ctx.external as string };
  },
};

// ---- sol_send_transaction ---------------------------------------------------------------------

interface SolSendTransaction { unsignedTransaction: string; signWiths: string[]; caip2: string; sponsor?: boolean; recentBlockhash?: string }

const SOLANA_SIGNERS = Symbol('signers');
type WithSigners<T> = T & { [SOLANA_SIGNERS]?: SigningKey[] };

const ZERO_BLOCKHASH = new Uint8Array(32);
/** Whether the transaction's blockhash is all zeros (kmas then puts in a fresh one). */
const zeroBlockhash = (tx: SolanaTransaction) => equalBytes(tx.recentBlockhash, ZERO_BLOCKHASH);

/** Each signWiths entry as an Ed25519 key of the organization that is a required signer of the transaction. */
async function solanaSigners(tx: Tx, organizationId: string, intent: SolSendTransaction, solTx: SolanaTransaction): Promise<SigningKey[]> {
  const keys: SigningKey[] = [];
  for (const [i, signWith] of intent.signWiths.entries()) {
    const field = `signWiths[${i}]`;
    const key = await resolveSigningKey(tx, organizationId, signWith, field);
    if (key.curve !== 'ed25519') throw invalidArgument(`${field}: ${signWith} is not a CURVE_ED25519 key`, [{ field, description: 'must name an Ed25519 (Solana) key or wallet account' }]);
    if (solanaSignerSlot(solTx, hexToBytes(key.publicKey)) < 0) {
      throw invalidArgument(`${field}: ${signWith} is not one of the transaction's ${solTx.requiredSignatures} required signers`, [{ field, description: 'must be a required signer of the transaction' }]);
    }
    keys.push(key);
  }
  return keys;
}

/** Whether kmas must put in a blockhash (the caller's, or a fresh one for an all-zero blockhash). */
const blockhashToSet = (intent: SolSendTransaction, tx: SolanaTransaction) => intent.recentBlockhash !== undefined || zeroBlockhash(tx);

/** The transaction in lower-case hex with the blockhash kmas puts in: the caller's recentBlockhash, else the node's (external). */
function withBlockhash(intent: SolSendTransaction, external: { blockhash?: string } | undefined): string {
  const blockhash = intent.recentBlockhash ?? external?.blockhash;
  return blockhash === undefined ? intent.unsignedTransaction.toLowerCase().replace(/^0x/, '')
    : withRecentBlockhash(parseSolanaTransaction(intent.unsignedTransaction), base58.decode(blockhash));
}

export const solSendTransaction: SubmitOperation<WithSigners<SolSendTransaction>, { sendTransactionStatusId: string }> = {
  kind: 'submit',
  path: 'sol_send_transaction',
  types: { ACTIVITY_TYPE_SOL_SEND_TRANSACTION_V2: keysFor('ACTIVITY_TYPE_SOL_SEND_TRANSACTION_V2') },
  validate(params: Obj) {
    const v = new Validator();
    const unsignedTransaction = v.string(params, 'unsignedTransaction', 'unsignedTransaction', { required: true, max: 1 << 16 });
    let tx: SolanaTransaction | undefined;
    if (unsignedTransaction !== undefined) {
      try { tx = parseSolanaTransaction(unsignedTransaction); } catch (e) { v.fail('unsignedTransaction', e instanceof Error ? e.message : 'cannot parse the transaction'); }
    }
    const signWiths = v.stringArray(params, 'signWiths', 'signWiths', { required: true, nonEmpty: true, max: 16 }) ?? [];
    if (new Set(signWiths).size !== signWiths.length) v.fail('signWiths', 'must not name a signer twice');
    const caip2 = readCaip2(v, params, 'solana');
    const sponsor = v.boolean(params, 'sponsor', 'sponsor');
    if (sponsor === true) v.fail('sponsor', 'fee sponsorship (Turnkey\'s Gas Station) is not available on kmas: send with sponsor false, the fee payer pays');
    const recentBlockhash = v.string(params, 'recentBlockhash', 'recentBlockhash', { max: 64 });
    if (recentBlockhash !== undefined) {
      let ok = false;
      try { ok = base58.decode(recentBlockhash).length === 32; } catch { /* not base58 */ }
      if (!ok) v.fail('recentBlockhash', 'must be a base58 blockhash (32 bytes)');
    }
    v.done();
    const intent: SolSendTransaction = { unsignedTransaction: unsignedTransaction!, signWiths, caip2: caip2! };
    if (sponsor !== undefined) intent.sponsor = sponsor;
    if (recentBlockhash !== undefined) intent.recentBlockhash = recentBlockhash;
    if (tx && blockhashToSet(intent, tx) && signWiths.length < tx.requiredSignatures) {
      // a new blockhash voids every signature the transaction carries: kmas must make them all
      throw invalidArgument(`signWiths: the transaction needs ${tx.requiredSignatures} signatures and kmas sets its blockhash, so every required signer must be in signWiths`,
        [{ field: 'signWiths', description: 'must list every required signer when kmas sets the blockhash' }]);
    }
    return intent;
  },
  async authorize(p, intent, store, services) {
    services.chains.solana(intent.caip2);
    const keys = await solanaSigners(store, p.organization.id, intent, parseSolanaTransaction(intent.unsignedTransaction));
    Object.defineProperty(intent, SOLANA_SIGNERS, { value: keys, enumerable: false, configurable: true });
    requireKeyAdmin(p, 'send transactions with keys of the organization');
  },
  policyReadsExternal: true,
  async policyTargets(intent, store, organizationId, external): Promise<PolicyTargets[]> {
    const keys = intent[SOLANA_SIGNERS] ?? await solanaSigners(store, organizationId, intent, parseSolanaTransaction(intent.unsignedTransaction));
    // with the blockhash execute puts in (the node's only in the write, once external() has run)
    const solanaTransaction = withBlockhash(intent, external as { blockhash?: string } | undefined);
    // every signing key is a target: a policy on any of them applies wherever it stands in signWiths
    return keys.map((key, i) => ({ ...(key.kind === 'private_key' ? { privateKeyId: key.id } : { walletAccountAddress: intent.signWiths[i]! }), solanaTransaction }));
  },
  async external(intent, services): Promise<{ blockhash?: string }> {
    const tx = parseSolanaTransaction(intent.unsignedTransaction);
    if (intent.recentBlockhash !== undefined || !zeroBlockhash(tx)) return {};
    try {
      return { blockhash: await services.chains.solana(intent.caip2).latestBlockhash() };
    } catch (e) {
      throw rpcError(e, 'caip2');
    }
  },
  async execute(ctx, intent) {
    const keys = await solanaSigners(ctx.tx, ctx.organization.id, intent, parseSolanaTransaction(intent.unsignedTransaction));
    let hex = withBlockhash(intent, ctx.external as { blockhash?: string });
    for (const [i, key] of keys.entries()) {
      hex = cryptoCall(() => ctx.services.vault.sign(key.sealed, key.ctx, { op: 'solana', curve: key.curve, unsignedTransaction: hex, field: `signWiths[${i}]` }) as string);
    }
    const tx = parseSolanaTransaction(hex);
    const signatures = Array.from({ length: tx.requiredSignatures }, (_, i) => tx.bytes.subarray(tx.signaturesAt + 64 * i, tx.signaturesAt + 64 * (i + 1)));
    const unsigned = signatures.findIndex((sig) => sig.every((b) => b === 0));
    if (unsigned >= 0) {
      throw invalidArgument(`signWiths: the transaction's required signer ${base58.encode(tx.staticKeys[unsigned]!)} has not signed it and is not in signWiths`,
        [{ field: 'signWiths', description: 'must include every required signer whose signature the transaction lacks' }]);
    }
    const row: SendTransactionRow = {
      id: ctx.newId(), organizationId: ctx.organization.id, activityId: ctx.activityId ?? '', caip2: intent.caip2,
      fromAddress: base58.encode(tx.staticKeys[0]!), txHash: base58.encode(signatures[0]!), nonce: null, signedTransaction: hex,
      status: 'INITIALIZED', error: null, blockNumber: null, attempts: 0, nextCheckMs: ctx.nowMs, createdMs: ctx.nowMs, updatedMs: ctx.nowMs,
    };
    await ctx.tx.sendTransactions.insert(row);
    ctx.tx.afterCommit(ctx.services.kick.broadcasts);
    return { sendTransactionStatusId: row.id };
  },
};

// ---- queries ----------------------------------------------------------------------------------

export const getSendTransactionStatus: QueryOperation<{ sendTransactionStatusId: string }> = {
  kind: 'query',
  path: 'get_send_transaction_status',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body) {
    const v = new Validator();
    const id = v.string(body, 'sendTransactionStatusId', 'sendTransactionStatusId', { required: true, max: 128 });
    v.done();
    return { sendTransactionStatusId: id! };
  },
  async execute(ctx, q) {
    const row = await ctx.tx.sendTransactions.get(ctx.organization.id, q.sendTransactionStatusId);
    if (!row) throw notFound(`no sent transaction ${q.sendTransactionStatusId.slice(0, 128)} in this organization`, 'SEND_TRANSACTION_NOT_FOUND');
    return {
      txStatus: row.status,
      ...txReference(row.caip2, row.txHash),
      // an error is told once FAILED (an INITIALIZED row may hold a refusal it is still asking the node about)
      ...(row.status === 'FAILED' && row.error !== null ? { txError: row.error, error: { message: row.error } } : {}),
    };
  },
};

export const getNonces: QueryOperation<{ address: string; caip2: string; nonce: boolean }> = {
  kind: 'query',
  path: 'get_nonces',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body) {
    const v = new Validator();
    const address = readAddress(v, body, 'address', 'address', true);
    const caip2 = readCaip2(v, body, 'evm');
    const nonce = v.boolean(body, 'nonce', 'nonce');
    if (v.boolean(body, 'gasStationNonce', 'gasStationNonce') === true) v.fail('gasStationNonce', 'kmas has no Gas Station: only the on-chain nonce is available');
    v.done();
    return { address: address!, caip2: caip2!, nonce: nonce === true };
  },
  async external(q, services) {
    if (!q.nonce) return undefined;
    try {
      return String(await services.chains.evm(q.caip2).getTransactionCount({ address: getAddress(q.address), blockTag: 'pending' }));
    } catch (e) {
      throw rpcError(e, 'caip2');
    }
  },
  execute(ctx, q) {
    if (!q.nonce) ctx.services.chains.evm(q.caip2);
    return ctx.external === undefined ? {} : { nonce: ctx.external as string };
  },
};

/** Native assets of the networks the swagger lists (SLIP-44 coin types); any other chain is taken as ETH. */
const NATIVE: Record<number, { symbol: string; name: string; slip44: number }> = {
  137: { symbol: 'POL', name: 'Polygon', slip44: 966 }, 80002: { symbol: 'POL', name: 'Polygon', slip44: 966 },
  56: { symbol: 'BNB', name: 'BNB', slip44: 714 }, 97: { symbol: 'BNB', name: 'BNB', slip44: 714 },
};
const ETHER = { symbol: 'ETH', name: 'Ether', slip44: 60 };

/** The native asset of a network, as balances and list_supported_assets name it. */
function nativeAsset(caip2: string): { caip19: string; symbol: string; name: string; decimals: number } {
  if (isSolana(caip2)) return { caip19: `${caip2}/slip44:501`, symbol: 'SOL', name: 'Solana', decimals: 9 };
  const native = NATIVE[evmChainId(caip2)!] ?? ETHER;
  return { caip19: `${caip2}/slip44:${native.slip44}`, symbol: native.symbol, name: native.name, decimals: 18 };
}



/** list_supported_assets: what get_wallet_address_balances reports on a configured network (its native asset). */
export const listSupportedAssets: QueryOperation<{ caip2: string }> = {
  kind: 'query',
  path: 'list_supported_assets',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body) {
    const v = new Validator();
    const caip2 = readCaip2(v, body, 'any');
    v.done();
    return { caip2: caip2! };
  },
  execute(ctx, q) {
    ctx.services.chains.require(q.caip2);
    return { assets: [{ ...nativeAsset(q.caip2), stable: false }] };
  },
};

export const getWalletAddressBalances: QueryOperation<{ address: string; caip2: string }> = {
  kind: 'query',
  path: 'get_wallet_address_balances',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body) {
    const v = new Validator();
    const caip2 = readCaip2(v, body, 'any');
    const address = caip2 !== undefined && isSolana(caip2)
      ? v.string(body, 'address', 'address', { required: true, max: 44, pattern: /^[1-9A-HJ-NP-Za-km-z]{32,44}$/, patternDesc: 'must be the Solana address of a wallet account of the organization' })
      : readAddress(v, body, 'address', 'address', true, 'the Ethereum address of a wallet account of the organization');
    v.done();
    return { address: address!, caip2: caip2! };
  },
  async external(q, services, organizationId, read) {
    const solana = isSolana(q.caip2);
    services.chains.require(q.caip2);
    if (!await read((tx) => tx.keys.accounts.byAddress(organizationId, solana ? q.address : getAddress(q.address)))) {
      throw notFound(`address: no wallet account of this organization has the address ${q.address} (private key addresses are not supported)`, 'WALLET_ACCOUNT_NOT_FOUND');
    }
    try {
      return String(solana ? await services.chains.solana(q.caip2).balance(q.address)
        : await services.chains.evm(q.caip2).getBalance({ address: getAddress(q.address), blockTag: 'latest' }));
    } catch (e) {
      throw rpcError(e, 'caip2');
    }
  },
  execute(ctx, q) {
    const { caip19, symbol, name, decimals } = nativeAsset(q.caip2);
    const balance = ctx.external as string;
    return { balances: [{ caip19, symbol, name, balance, decimals, display: { crypto: formatUnits(BigInt(balance), decimals) } }] };
  },
};

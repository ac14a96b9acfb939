/**
 * sign_raw_payload (V2), sign_raw_payloads (core batch path), sign_transaction (V2, Ethereum).
 * signWith = private key id, private key address or wallet account address of the organization.
 * Everything the caller can get wrong (unknown signWith, curve / encoding / hash mismatch, bad
 * payload or transaction) is refused before acceptance: a 4xx and nothing stored.
 */
import { invalidArgument } from '../../errors.js';
import {
  HASH_FUNCTIONS, PAYLOAD_ENCODINGS, equalBytes, hexToBytes, preparePayload, type CurveId, type RawSignature,
} from '../../crypto/index.js';
import { parseUnsignedTransaction } from '../../chains/ethereum.js';
import { parseSolanaTransaction, solanaSignerSlot } from '../../chains/solana.js';
import { parseTronRawData } from '../../chains/tron.js';
import { inputsOf, parsePsbt } from '../../chains/bitcoin.js';
import { cryptoCall, resolveSigningKey, type SigningKey } from '../../domain/keys.js';
import type { Tx } from '../../storage/types.js';
import { keysFor, type ExecContext, type PrepareContext, type SubmitOperation } from '../types.js';
import type { SignJob } from '../../crypto/signjob.js';
import { Validator, type Obj } from '../../domain/validate.js';
import { requireKeyAdmin } from './keyParams.js';
import type { PolicyTargets } from '../../policy/scope.js';

/** The key resolved at authorization, kept off the stored intent (non-enumerable). */
const RESOLVED = Symbol('resolved');
/** The key's read, started with the transaction's first message (prefetch). */
const PREFETCHED = Symbol('prefetched');
interface Prefetched { tx: Tx; organizationId: string; key: Promise<SigningKey> }
type WithKey<T> = T & { [RESOLVED]?: SigningKey; [PREFETCHED]?: Prefetched };

function remember<T extends object>(intent: T, key: SigningKey): void {
  Object.defineProperty(intent, RESOLVED, { value: key, enumerable: false, configurable: true });
}

/** SubmitOperation.prefetch of the signing operations: the key signWith names. */
function prefetchKey(tx: Tx, intent: WithKey<{ signWith: string }>, organizationId: string): void {
  const key = resolve(tx, organizationId, intent.signWith);
  // authorize awaits it (and refuses as it would have); unused, it must not be an unhandled rejection
  key.catch(() => undefined);
  Object.defineProperty(intent, PREFETCHED, { value: { tx, organizationId, key } satisfies Prefetched, enumerable: false, configurable: true });
}

/** For authorize: the prefetched read if it was made in this transaction for this organization, else a read now. */
function resolveForAuthorize(tx: Tx, organizationId: string, intent: WithKey<{ signWith: string }>): Promise<SigningKey> {
  const early = intent[PREFETCHED];
  if (early !== undefined && early.tx === tx && early.organizationId === organizationId) {
    Object.defineProperty(intent, PREFETCHED, { value: undefined, enumerable: false, configurable: true });
    return early.key;
  }
  return resolve(tx, organizationId, intent.signWith);
}

async function resolve(tx: Tx, organizationId: string, signWith: string): Promise<SigningKey> {
  return await resolveSigningKey(tx, organizationId, signWith, 'signWith');
}

/** A signature made before the transaction (prepare, on a signing thread) and the key it used. */
interface Presigned { keyId: string; sealed: Uint8Array; result: unknown }

/** Signs on a signing thread with the key authorize resolved (undefined: no threads). */
function presign(ctx: PrepareContext, intent: WithKey<{ signWith: string }>, job: (key: SigningKey) => SignJob): Promise<Presigned> | undefined {
  const key = intent[RESOLVED];
  if (!key) return undefined;
  return ctx.services.vault.signOffThread(key.sealed, key.ctx, job(key), ctx.stampCheck)?.then((result) => ({ keyId: key.id, sealed: key.sealed, result }));
}

/** prepare()'s signature, if it was made with the very key the transaction resolved. */
function presigned<T>(ctx: ExecContext, key: SigningKey): T | undefined {
  const p = ctx.prepared as Presigned | undefined;
  return p && p.keyId === key.id && equalBytes(p.sealed, key.sealed) ? p.result as T : undefined;
}

/** The key authorize resolved (same transaction, so still current); resolved anew if absent. */
/** What a sign request targets, for policy conditions: the private key, or the wallet account and its wallet. */
async function signingTargets(intent: WithKey<{ signWith: string }>, tx: Tx, organizationId: string): Promise<PolicyTargets> {
  const key = await resolved(tx, organizationId, intent);
  return key.kind === 'private_key' ? { privateKeyId: key.id } : { walletAccountAddress: intent.signWith };
}

async function resolved(tx: Tx, organizationId: string, intent: WithKey<{ signWith: string }>): Promise<SigningKey> {
  return intent[RESOLVED] ?? await resolve(tx, organizationId, intent.signWith);
}

interface SignRawPayload { signWith: string; payload: string; encoding: string; hashFunction: string }

function readSignCommon(v: Validator, params: Obj): { signWith?: string; encoding?: string; hashFunction?: string } {
  const signWith = v.string(params, 'signWith', 'signWith', { required: true, max: 200 });
  const encoding = v.enumOf(params, 'encoding', 'encoding', PAYLOAD_ENCODINGS);
  const hashFunction = v.enumOf(params, 'hashFunction', 'hashFunction', HASH_FUNCTIONS);
  return { signWith, encoding, hashFunction };
}

export const signRawPayload: SubmitOperation<WithKey<SignRawPayload>, RawSignature> = {
  kind: 'submit',
  path: 'sign_raw_payload',
  types: {
    ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2: keysFor('ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', {
      resultKey: 'signRawPayloadResult', specIntentKey: 'signRawPayloadIntent', specResultKey: 'signRawPayloadResult',
    }),
  },
  validate(params: Obj) {
    const v = new Validator();
    const c = readSignCommon(v, params);
    const payload = v.string(params, 'payload', 'payload', { required: true, nonEmpty: false, max: 1 << 20 });
    v.done();
    return { signWith: c.signWith!, payload: payload!, encoding: c.encoding!, hashFunction: c.hashFunction! };
  },
  prefetch: prefetchKey,
  async authorize(p, intent, store) {
    const key = await resolveForAuthorize(store, p.organization.id, intent);
    // Dry run of the digest rules: mismatched curve / encoding / hash function or a bad payload → 400.
    cryptoCall(() => preparePayload(key.curve, intent));
    remember(intent, key);
    requireKeyAdmin(p, 'sign with keys of the organization');
  },
  async policyTargets(intent, store, organizationId) {
    const targets = await signingTargets(intent, store, organizationId);
    if (intent.encoding === 'PAYLOAD_ENCODING_EIP712') targets.typedData = intent.payload;
    if (intent.encoding === 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION') targets.authorization = intent.payload;
    return targets;
  },
  // No prepare: one signature (tens of µs in the core) costs less inside the transaction, on this
  // thread, than the read and the thread hop signing before it would (README, "Storage engines and
  // nodes": less CPU per request on both engines). sign_raw_payloads, a hundred at a time, keeps it.
  readOnly: true,
  async execute(ctx, intent) {
    const key = await resolved(ctx.tx, ctx.organization.id, intent);
    return presigned<RawSignature>(ctx, key)
      ?? cryptoCall(() => ctx.services.vault.signPayload(key.sealed, key.ctx, key.curve, intent));
  },
  specIntent(intent) {
    // the specification's intent echoes the request, `signWith` renamed, exactly as sent (an address stays that address)
    return { privateKeyId: intent.signWith, payload: intent.payload, encoding: intent.encoding, hashFunction: intent.hashFunction };
  },
};

interface SignRawPayloads { signWith: string; payloads: string[]; encoding: string; hashFunction: string }

export const MAX_PAYLOADS = 1000;

export const signRawPayloads: SubmitOperation<WithKey<SignRawPayloads>, { signatures: RawSignature[] }> = {
  kind: 'submit',
  path: 'sign_raw_payloads',
  types: { ACTIVITY_TYPE_SIGN_RAW_PAYLOADS: keysFor('ACTIVITY_TYPE_SIGN_RAW_PAYLOADS') },
  validate(params: Obj) {
    const v = new Validator();
    const c = readSignCommon(v, params);
    const arr = v.array(params, 'payloads', 'payloads', { required: true, nonEmpty: true, max: MAX_PAYLOADS }) ?? [];
    const payloads: string[] = [];
    arr.forEach((x, i) => {
      if (typeof x !== 'string') v.fail(`payloads[${i}]`, 'must be a string');
      else payloads.push(x);
    });
    v.done();
    return { signWith: c.signWith!, payloads, encoding: c.encoding!, hashFunction: c.hashFunction! };
  },
  prefetch: prefetchKey,
  async authorize(p, intent, store) {
    const key = await resolveForAuthorize(store, p.organization.id, intent);
    intent.payloads.forEach((payload, i) => {
      cryptoCall(() => preparePayload(key.curve, { payload, encoding: intent.encoding, hashFunction: intent.hashFunction }, { payload: `payloads[${i}]` }));
    });
    remember(intent, key);
    requireKeyAdmin(p, 'sign with keys of the organization');
  },
  async policyTargets(intent, store, organizationId) {
    const targets = await signingTargets(intent, store, organizationId);
    // typed data and authorizations: every payload is a target of its own, as sign_raw_payload binds one
    const field = intent.encoding === 'PAYLOAD_ENCODING_EIP712' ? 'typedData' : intent.encoding === 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION' ? 'authorization' : undefined;
    return field ? intent.payloads.map((payload): PolicyTargets => ({ ...targets, [field]: payload })) : targets;
  },
  prepare(ctx, intent) {
    return presign(ctx, intent, (key) => ({ op: 'payloads', curve: key.curve, payloads: intent.payloads, encoding: intent.encoding, hashFunction: intent.hashFunction }));
  },
  readOnly: true,
  async execute(ctx, intent) {
    const key = await resolved(ctx.tx, ctx.organization.id, intent);
    const signatures = presigned<RawSignature[]>(ctx, key)
      ?? cryptoCall(() => ctx.services.vault.signPayloads(key.sealed, key.ctx, key.curve, intent.payloads, intent.encoding, intent.hashFunction));
    return { signatures };
  },
};

export const TRANSACTION_TYPES = ['TRANSACTION_TYPE_ETHEREUM', 'TRANSACTION_TYPE_SOLANA', 'TRANSACTION_TYPE_TRON', 'TRANSACTION_TYPE_BITCOIN', 'TRANSACTION_TYPE_TEMPO'] as const;

/** The transaction types kmas signs: the curve each needs, how its transaction is parsed, its signing job. */
const SIGNED_TYPES: Record<string, { curve: CurveId; apiCurve: string; parse: (hex: string, field: string) => unknown; job: 'transaction' | 'solana' | 'tron' | 'bitcoin' }> = {
  TRANSACTION_TYPE_ETHEREUM: { curve: 'secp256k1', apiCurve: 'CURVE_SECP256K1', parse: parseUnsignedTransaction, job: 'transaction' },
  TRANSACTION_TYPE_SOLANA: { curve: 'ed25519', apiCurve: 'CURVE_ED25519', parse: parseSolanaTransaction, job: 'solana' },
  TRANSACTION_TYPE_TRON: { curve: 'secp256k1', apiCurve: 'CURVE_SECP256K1', parse: parseTronRawData, job: 'tron' },
  TRANSACTION_TYPE_BITCOIN: { curve: 'secp256k1', apiCurve: 'CURVE_SECP256K1', parse: parsePsbt, job: 'bitcoin' },
};

interface SignTransaction { signWith: string; unsignedTransaction: string; type: string }

function transactionJob(intent: SignTransaction, key: SigningKey): SignJob {
  return { op: SIGNED_TYPES[intent.type]!.job, curve: key.curve, unsignedTransaction: intent.unsignedTransaction };
}

export const signTransaction: SubmitOperation<WithKey<SignTransaction>, { signedTransaction: string }> = {
  kind: 'submit',
  path: 'sign_transaction',
  types: {
    ACTIVITY_TYPE_SIGN_TRANSACTION_V2: keysFor('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', {
      resultKey: 'signTransactionResult', specIntentKey: 'signTransactionIntent', specResultKey: 'signTransactionResult',
    }),
  },
  validate(params: Obj) {
    const v = new Validator();
    const signWith = v.string(params, 'signWith', 'signWith', { required: true, max: 200 });
    const unsignedTransaction = v.string(params, 'unsignedTransaction', 'unsignedTransaction', { required: true, max: 1 << 20 });
    const type = v.enumOf(params, 'type', 'type', TRANSACTION_TYPES);
    const signed = type === undefined ? undefined : SIGNED_TYPES[type];
    if (type !== undefined && !signed) v.fail('type', `${type} is not supported yet; ${Object.keys(SIGNED_TYPES).join(', ')} are`);
    if (unsignedTransaction !== undefined && signed) {
      try { signed.parse(unsignedTransaction, 'unsignedTransaction'); } catch (e) {
        v.fail('unsignedTransaction', e instanceof Error ? e.message : 'cannot parse the transaction');
      }
    }
    v.done();
    return { signWith: signWith!, unsignedTransaction: unsignedTransaction!, type: type! };
  },
  prefetch: prefetchKey,
  async authorize(p, intent, store) {
    const key = await resolveForAuthorize(store, p.organization.id, intent);
    const want = SIGNED_TYPES[intent.type]!;
    if (key.curve !== want.curve) {
      throw invalidArgument(`signWith: ${intent.type} needs a ${want.apiCurve} key; this key is ${key.apiCurve}`,
        [{ field: 'signWith', description: `must name a ${want.apiCurve} key for ${intent.type}` }]);
    }
    if (intent.type === 'TRANSACTION_TYPE_BITCOIN') {
      // the key must control an input (400 naming signWith, or unsignedTransaction for a missing previous transaction)
      cryptoCall(() => inputsOf(parsePsbt(intent.unsignedTransaction), hexToBytes(key.publicKey)));
    }
    if (intent.type === 'TRANSACTION_TYPE_SOLANA') {
      const tx = parseSolanaTransaction(intent.unsignedTransaction);
      if (solanaSignerSlot(tx, hexToBytes(key.publicKey)) < 0) {
        throw invalidArgument(`signWith: the key ${intent.signWith} is not one of the transaction's ${tx.requiredSignatures} required signers`,
          [{ field: 'signWith', description: 'must name a key whose address is a required signer of the transaction' }]);
      }
    }
    remember(intent, key);
    requireKeyAdmin(p, 'sign with keys of the organization');
  },
  async policyTargets(intent, store, organizationId) {
    const targets = await signingTargets(intent, store, organizationId);
    switch (intent.type) {
      case 'TRANSACTION_TYPE_SOLANA': return { ...targets, solanaTransaction: intent.unsignedTransaction };
      case 'TRANSACTION_TYPE_TRON': return { ...targets, tronTransaction: intent.unsignedTransaction };
      case 'TRANSACTION_TYPE_BITCOIN': return { ...targets, bitcoinTransaction: intent.unsignedTransaction };
      default: return { ...targets, ethereumTransaction: intent.unsignedTransaction };
    }
  },
  prepare(ctx, intent) {
    return presign(ctx, intent, (key) => transactionJob(intent, key));
  },
  readOnly: true,
  async execute(ctx, intent) {
    const key = await resolved(ctx.tx, ctx.organization.id, intent);
    const signedTransaction = presigned<string>(ctx, key)
      ?? cryptoCall(() => ctx.services.vault.sign(key.sealed, key.ctx, transactionJob(intent, key)) as string);
    return { signedTransaction };
  },
  specIntent(intent) {
    // as in sign_raw_payload: `signWith` exactly as sent
    return { privateKeyId: intent.signWith, unsignedTransaction: intent.unsignedTransaction, type: intent.type };
  },
};

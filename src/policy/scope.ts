/**
 * The keywords a policy `condition` can use, bound for one activity:
 * - `activity`: {type, resource, action} of the request;
 * - `private_key` / `wallet` / `wallet_account`: the key a sign, export or account request names;
 *   `wallets`: the wallets a delete_wallets names;
 * - `activity.kind` (the type without its version; root-quorum-only types have none) and
 *   `activity.params` (the request fields Turnkey's reference exposes, by type);
 * - `eth.tx`: the parsed unsigned Ethereum transaction of sign_transaction;
 * - `eth.eip_712` / `eth.eip_7702_authorization`: the typed data or authorization a
 *   sign_raw_payload signs (policy/ethViews.ts);
 * - `solana.tx` / `tron.tx`: the parsed Solana / Tron transaction of sign_transaction
 *   (src/chains/solana.ts, tron.ts).
 * A keyword the activity does not have is left unbound: a policy that uses it does not apply.
 */
import type { Tx } from '../storage/types.js';
import { ApiError, Grpc } from '../errors.js';
import { parseUnsignedTransaction } from '../chains/ethereum.js';
import { ethereumAddress } from '../crypto/addresses.js';
import { hexToBytes } from '../encoding/bytes.js';
import { parseSolanaTransaction, solanaPolicyView } from '../chains/solana.js';
import { parseTronRawData, tronPolicyView } from '../chains/tron.js';
import { bitcoinNetworkOf, bitcoinPolicyView, parsePsbt } from '../chains/bitcoin.js';
import type { Value } from './language.js';
import { decodeCall } from './contracts.js';
import { eip712View, eip7702View } from './ethViews.js';

/**
 * What an operation's policyTargets returns: nothing, one target, or (an activity touching several
 * keys, payloads or secrets) a list of targets, each decided on its own (activities/consensus.ts).
 */
export type PolicyTargetsOf = PolicyTargets | PolicyTargets[] | undefined;

/** What an operation tells the policy engine about the keys and transaction it targets. */
export interface PolicyTargets {
  privateKeyId?: string;
  walletId?: string;
  /** requests touching several wallets (delete_wallets): `wallets` */
  walletIds?: string[];
  walletAccountAddress?: string;
  /** a wallet account named by its id (delete_wallet_accounts): bound as walletAccountAddress binds one */
  walletAccountId?: string;
  ethereumTransaction?: string;
  solanaTransaction?: string;
  tronTransaction?: string;
  bitcoinTransaction?: string;
  /** export_secrets: a secret's static properties (`secret.static_properties`), one target per secret */
  secretProperties?: { key: string; value: string }[];
  /** sign_raw_payload with PAYLOAD_ENCODING_EIP712: the typed-data JSON */
  typedData?: string;
  /** sign_raw_payload with PAYLOAD_ENCODING_EIP7702_AUTHORIZATION: the authorization JSON */
  authorization?: string;
}

/** activity.params: the request fields Turnkey's reference exposes, by type (without version): [policy name, intent field]. */
const PARAMS: Record<string, [string, string][]> = {
  SIGN_RAW_PAYLOAD: [['hash_function', 'hashFunction'], ['encoding', 'encoding']],
  SIGN_RAW_PAYLOADS: [['hash_function', 'hashFunction'], ['encoding', 'encoding']],
  SIGN_TRANSACTION: [['type', 'type']],
  DELETE_USERS: [['user_ids', 'userIds']],
  CREATE_API_KEYS: [['user_id', 'userId']],
  DELETE_API_KEYS: [['user_id', 'userId'], ['api_key_ids', 'apiKeyIds']],
  EXPORT_WALLET: [['target_public_key', 'targetPublicKey']],
  EXPORT_WALLET_ACCOUNT: [['target_public_key', 'targetPublicKey']],
  EXPORT_PRIVATE_KEY: [['target_public_key', 'targetPublicKey']],
  UPDATE_WALLET: [['wallet_id', 'walletId']],
  INIT_OTP_AUTH: [['otp_length', 'otpLength']],
  OTP_LOGIN: [['session_profile_id', 'sessionProfileId']],
  STAMP_LOGIN: [['session_profile_id', 'sessionProfileId']],
  OAUTH_LOGIN: [['session_profile_id', 'sessionProfileId']],
  UPDATE_WEBHOOK_ENDPOINT: [['endpoint_id', 'endpointId']],
  DELETE_WEBHOOK_ENDPOINT: [['endpoint_id', 'endpointId']],
};

function paramValue(v: unknown): Value {
  if (typeof v === 'number') return BigInt(v);
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (Array.isArray(v)) return v.map(paramValue);
  return '';
}

/** The `activity` struct: type, resource, action, kind, params. */
function activityValue(type: string, intent: unknown): Value {
  const { resource, action } = resourceAction(type);
  const kind = activityKind(type);
  const params: Record<string, Value> = {};
  const i = (typeof intent === 'object' && intent !== null ? intent : {}) as Record<string, unknown>;
  for (const [name, field] of PARAMS[kind] ?? []) params[name] = paramValue(i[field]);
  return { type, resource, action, ...(ROOT_QUORUM_ONLY.has(type) ? {} : { kind }), params };
}

/** viem's transaction types under the names Turnkey's policy reference gives `eth.tx.type`. */
const ETH_TX_TYPES: Record<string, string> = { legacy: 'LEGACY', eip2930: 'TYPE_1', eip1559: 'TYPE_2', eip4844: 'TYPE_3', eip7702: 'TYPE_4' };

/**
 * activity.resource / activity.action as Turnkey's policy-language reference tabulates them (by the
 * type without its version suffix); a type the table does not list falls back to its name
 * (ACTIVITY_TYPE_<VERB>_<NOUN>).
 */
const TABLE: Record<string, [string, string]> = {
  CREATE_SUB_ORGANIZATION: ['ORGANIZATION', 'CREATE'], DELETE_SUB_ORGANIZATION: ['ORGANIZATION', 'DELETE'],
  CREATE_POLICY: ['POLICY', 'CREATE'], CREATE_POLICIES: ['POLICY', 'CREATE'], UPDATE_POLICY: ['POLICY', 'UPDATE'],
  DELETE_POLICY: ['POLICY', 'DELETE'], DELETE_POLICIES: ['POLICY', 'DELETE'],
  CREATE_WALLET: ['WALLET', 'CREATE'], CREATE_WALLET_ACCOUNTS: ['WALLET', 'CREATE'], EXPORT_WALLET: ['WALLET', 'EXPORT'],
  EXPORT_WALLET_ACCOUNT: ['WALLET', 'EXPORT'], INIT_IMPORT_WALLET: ['WALLET', 'IMPORT'], IMPORT_WALLET: ['WALLET', 'IMPORT'],
  DELETE_WALLETS: ['WALLET', 'DELETE'], UPDATE_WALLET: ['WALLET', 'UPDATE'], DELETE_WALLET_ACCOUNTS: ['WALLET', 'DELETE'],
  CREATE_PRIVATE_KEYS: ['PRIVATE_KEY', 'CREATE'], CREATE_PRIVATE_KEY_TAG: ['PRIVATE_KEY', 'CREATE'],
  UPDATE_PRIVATE_KEY_TAG: ['PRIVATE_KEY', 'UPDATE'], DELETE_PRIVATE_KEY_TAGS: ['PRIVATE_KEY', 'DELETE'],
  DELETE_PRIVATE_KEYS: ['PRIVATE_KEY', 'DELETE'], EXPORT_PRIVATE_KEY: ['PRIVATE_KEY', 'EXPORT'],
  INIT_IMPORT_PRIVATE_KEY: ['PRIVATE_KEY', 'IMPORT'], IMPORT_PRIVATE_KEY: ['PRIVATE_KEY', 'IMPORT'],
  SIGN_RAW_PAYLOAD: ['PRIVATE_KEY', 'SIGN'], SIGN_RAW_PAYLOADS: ['PRIVATE_KEY', 'SIGN'], SIGN_TRANSACTION: ['PRIVATE_KEY', 'SIGN'],
  CREATE_USERS: ['USER', 'CREATE'], CREATE_USER_TAG: ['USER', 'CREATE'], CREATE_API_ONLY_USERS: ['USER', 'CREATE'], CREATE_READ_ONLY_SESSION: ['AUTH', 'CREATE'],
  UPDATE_USER: ['USER', 'UPDATE'], UPDATE_USER_NAME: ['USER', 'UPDATE'], UPDATE_USER_EMAIL: ['USER', 'UPDATE'],
  UPDATE_USER_PHONE_NUMBER: ['USER', 'UPDATE'], UPDATE_USER_TAG: ['USER', 'UPDATE'], DELETE_USERS: ['USER', 'DELETE'],
  DELETE_USER_TAGS: ['USER', 'DELETE'],
  CREATE_API_KEYS: ['CREDENTIAL', 'CREATE'], CREATE_AUTHENTICATORS: ['CREDENTIAL', 'CREATE'], DELETE_API_KEYS: ['CREDENTIAL', 'DELETE'],
  DELETE_AUTHENTICATORS: ['CREDENTIAL', 'DELETE'], CREATE_OAUTH_PROVIDERS: ['CREDENTIAL', 'CREATE'], DELETE_OAUTH_PROVIDERS: ['CREDENTIAL', 'DELETE'],
  INIT_USER_EMAIL_RECOVERY: ['RECOVERY', 'CREATE'], RECOVER_USER: ['RECOVERY', 'UPDATE'],
  EMAIL_AUTH: ['AUTH', 'CREATE'], INIT_OTP_AUTH: ['AUTH', 'CREATE'], OTP_AUTH: ['AUTH', 'CREATE'], OAUTH: ['AUTH', 'CREATE'],
  OAUTH_LOGIN: ['AUTH', 'CREATE'], OTP_LOGIN: ['AUTH', 'CREATE'], STAMP_LOGIN: ['AUTH', 'CREATE'], CREATE_READ_WRITE_SESSION: ['AUTH', 'CREATE'],
  INIT_OTP: ['OTP', 'CREATE'], VERIFY_OTP: ['OTP', 'VERIFY'],
  CREATE_WEBHOOK_ENDPOINT: ['WEBHOOK_ENDPOINT', 'CREATE'], UPDATE_WEBHOOK_ENDPOINT: ['WEBHOOK_ENDPOINT', 'UPDATE'],
  DELETE_WEBHOOK_ENDPOINT: ['WEBHOOK_ENDPOINT', 'DELETE'],
  // not in the table: the root quorum alone decides these (ROOT_QUORUM_ONLY)
  UPDATE_ROOT_QUORUM: ['ORGANIZATION', 'UPDATE'], SET_ORGANIZATION_FEATURE: ['ORGANIZATION', 'UPDATE'],
  REMOVE_ORGANIZATION_FEATURE: ['ORGANIZATION', 'UPDATE'], UPDATE_ORGANIZATION_NAME: ['ORGANIZATION', 'UPDATE'],
  // not in the table (kmas's choice): secrets as their own resource
  INIT_IMPORT_SECRETS: ['SECRET', 'IMPORT'], IMPORT_SECRETS: ['SECRET', 'IMPORT'], EXPORT_SECRETS: ['SECRET', 'EXPORT'],
  SET_IP_ALLOWLIST: ['ORGANIZATION', 'UPDATE'], REMOVE_IP_ALLOWLIST: ['ORGANIZATION', 'UPDATE'],
  // kmas's choice: sending uses (or stands for) the organization's keys
  ETH_SEND_TRANSACTION: ['PRIVATE_KEY', 'SIGN'], ETH_SEND_RAW_TRANSACTION: ['PRIVATE_KEY', 'SIGN'], SOL_SEND_TRANSACTION: ['PRIVATE_KEY', 'SIGN'],
  APPROVE_ACTIVITY: ['ACTIVITY', 'APPROVE'], REJECT_ACTIVITY: ['ACTIVITY', 'REJECT'],
};

/** Types only the root quorum may run: a policy that allows them has no effect (Turnkey's policy-language reference). */
export const ROOT_QUORUM_ONLY = new Set([
  'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM', 'ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE',
  'ACTIVITY_TYPE_REMOVE_ORGANIZATION_FEATURE', 'ACTIVITY_TYPE_UPDATE_ORGANIZATION_NAME',
  // kmas's choice (Turnkey's reference no longer lists them): network access is the root quorum's
  'ACTIVITY_TYPE_SET_IP_ALLOWLIST', 'ACTIVITY_TYPE_REMOVE_IP_ALLOWLIST',
]);

const VERBS = ['CREATE', 'UPDATE', 'DELETE', 'SIGN', 'EXPORT', 'IMPORT', 'VERIFY'] as const;

/** The type without its prefix and version: Turnkey's `activity.kind` (SIGN_TRANSACTION for _V2). */
function activityKind(type: string): string {
  return type.replace(/^ACTIVITY_TYPE_/, '').replace(/_V\d+$/, '');
}

export function resourceAction(type: string): { resource: string; action: string } {
  const name = activityKind(type);
  const hit = TABLE[name];
  if (hit) return { resource: hit[0], action: hit[1] };
  const verb = VERBS.find((v) => name.startsWith(`${v}_`));
  return { resource: (verb ? name.slice(verb.length + 1) : name).replace(/S$/, ''), action: verb ?? 'UNKNOWN' };
}

/** The Ethereum address of a secp256k1 key (what it sends from); '' for another curve. */
function ethereumAddressOf(key: { curve: string; publicKey: string }): string {
  if (key.curve !== 'CURVE_SECP256K1') return '';
  try { return ethereumAddress(hexToBytes(key.publicKey)); } catch { return ''; }
}

/**
 * The store reads a condition scope makes. One value serves every target of a decision: targets
 * signed by one key (the payloads of a sign_raw_payloads) read the key, its tags and its wallet once.
 */
export class ScopeReads {
  readonly #memo = new Map<string, Promise<unknown>>();
  constructor(private readonly tx: Tx, private readonly organizationId: string) {}

  #once<T>(key: string, read: () => Promise<T>): Promise<T> {
    let p = this.#memo.get(key) as Promise<T> | undefined;
    if (!p) { p = read(); this.#memo.set(key, p); }
    return p;
  }
  privateKey(id: string) { return this.#once(`k ${id}`, () => this.tx.keys.privateKeys.get(this.organizationId, id)); }
  tagsOf(id: string) { return this.#once(`t ${id}`, () => this.tx.tags.tagsOf(id)); }
  account(address: string) { return this.#once(`a ${address}`, () => this.tx.keys.accounts.byAddress(this.organizationId, address)); }
  accountById(id: string) { return this.#once(`A ${id}`, () => this.tx.keys.accounts.get(this.organizationId, id)); }
  wallet(id: string) { return this.#once(`w ${id}`, () => this.tx.keys.wallets.get(this.organizationId, id)); }
  ethereumAbi(to: string) { return this.#once(`i ${to}`, () => this.tx.contractInterfaces.byAddress(this.organizationId, 'SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM', to)); }
}

/** The condition scope of an activity (or of one of its targets: pass the decision's `reads` to each). */
export async function conditionScope(
  tx: Tx, organizationId: string, type: string, targets: PolicyTargets | undefined, intent?: unknown, reads = new ScopeReads(tx, organizationId),
): Promise<Map<string, Value>> {
  const scope = new Map<string, Value>([['activity', activityValue(type, intent)]]);
  if (!targets) return scope;
  if (targets.secretProperties) {
    scope.set('secret', { static_properties: Object.fromEntries(targets.secretProperties.map((p) => [p.key, p.value])) });
  }
  const eth: Record<string, Value> = {};
  const typedData = targets.typedData === undefined ? undefined : eip712View(targets.typedData);
  if (typedData) eth.eip_712 = typedData;
  const authorization = targets.authorization === undefined ? undefined : eip7702View(targets.authorization);
  if (authorization) eth.eip_7702_authorization = authorization;
  // What the policies cannot read is not signed: a DENY on eth.eip_712 would otherwise not apply to it.
  if ((targets.typedData !== undefined && !typedData) || (targets.authorization !== undefined && !authorization)) {
    throw new ApiError(Grpc.INVALID_ARGUMENT, `the ${targets.typedData !== undefined && !typedData ? 'EIP-712 typed data' : 'EIP-7702 authorization'} cannot be read by its types as the policies read it`);
  }
  if (typedData || authorization) scope.set('eth', eth);
  // eth.tx.from: the Ethereum address of the signing key (derived from its public key when it has none stored)
  let from = '';
  const pk = targets.privateKeyId ? await reads.privateKey(targets.privateKeyId) : undefined;
  if (pk) {
    scope.set('private_key', { id: pk.id, label: pk.name, tags: await reads.tagsOf(pk.id), imported: pk.imported, exported: pk.exported, curve: pk.curve });
    from = pk.addresses.find((a) => a.format === 'ADDRESS_FORMAT_ETHEREUM')?.address ?? ethereumAddressOf(pk);
  }
  let walletId = targets.walletId;
  let walletAccountFormat: string | undefined;
  if (targets.walletAccountAddress || targets.walletAccountId) {
    const acct = targets.walletAccountId
      ? await reads.accountById(targets.walletAccountId)
      : await reads.account(targets.walletAccountAddress!);
    if (acct) {
      walletId ??= acct.walletId;
      scope.set('wallet_account', { address: acct.address, curve: acct.curve, path: acct.path, address_format: acct.addressFormat });
      if (acct.addressFormat === 'ADDRESS_FORMAT_ETHEREUM') from = acct.address;
      else if (from === '') from = ethereumAddressOf(acct);
      walletAccountFormat = acct.addressFormat;
    }
  }
  const walletValue = async (id: string): Promise<Value | undefined> => {
    const w = await reads.wallet(id);
    return w ? { id: w.id, label: w.name, imported: w.imported, exported: w.exported } : undefined;
  };
  const wallet = walletId ? await walletValue(walletId) : undefined;
  if (wallet) scope.set('wallet', wallet);
  if (targets.walletIds) {
    const wallets: Value[] = [];
    for (const id of targets.walletIds) { const w = await walletValue(id); if (w !== undefined) wallets.push(w); }
    scope.set('wallets', wallets);
  }
  // An unparsable transaction binds nothing (a policy that reads it does not apply); the operation refuses it later.
  const bindTx = (keyword: string, view: () => Value): void => {
    try { scope.set(keyword, { tx: view() }); } catch { /* see above */ }
  };
  const ethTx = targets.ethereumTransaction;
  if (ethTx !== undefined) {
    let parsed: ReturnType<typeof parseUnsignedTransaction> | undefined;
    try { parsed = parseUnsignedTransaction(ethTx); } catch { /* binds nothing, as below */ }
    const to = (parsed?.to ?? '').toLowerCase();
    // function_name, function_signature, contract_call_args: only with an ABI uploaded for `to`
    const abi = to === '' ? undefined : await reads.ethereumAbi(to);
    if (parsed) bindTx('eth', () => {
      const t = parsed;
      const data = (t as { data?: string }).data ?? '0x';
      const maxFee = (t as { maxFeePerGas?: bigint }).maxFeePerGas;
      const call = abi ? decodeCall(abi.interface, data) : undefined;
      return {
        from: from.toLowerCase(),
        to,
        value: t.value ?? 0n,
        nonce: BigInt(t.nonce ?? 0),
        chain_id: BigInt(t.chainId ?? 0),
        gas: t.gas ?? 0n,
        // EIP-1559 transactions have no gas price; Turnkey's reference fills it with the fee cap.
        gas_price: (t as { gasPrice?: bigint }).gasPrice ?? maxFee ?? 0n,
        max_fee_per_gas: maxFee ?? 0n,
        max_priority_fee_per_gas: (t as { maxPriorityFeePerGas?: bigint }).maxPriorityFeePerGas ?? 0n,
        data: data.toLowerCase(),
        type: ETH_TX_TYPES[t.type ?? 'legacy'] ?? String(t.type),
        ...call,
      };
    });
  }
  const btcTx = targets.bitcoinTransaction;
  if (btcTx !== undefined) {
    // addresses in the network of the signing key's Bitcoin address (mainnet when it has none)
    const formats = [...(pk?.addresses.map((a) => a.format) ?? []), walletAccountFormat ?? ''];
    const network = formats.map(bitcoinNetworkOf).find((n) => n !== undefined) ?? 'mainnet';
    bindTx('bitcoin', () => bitcoinPolicyView(parsePsbt(btcTx), network));
  }
  const tronTx = targets.tronTransaction;
  if (tronTx !== undefined) bindTx('tron', () => tronPolicyView(parseTronRawData(tronTx)));
  const solTx = targets.solanaTransaction;
  if (solTx !== undefined) bindTx('solana', () => solanaPolicyView(parseSolanaTransaction(solTx)));
  return scope;
}

/**
 * The keywords a policy `condition` can use, bound for one activity:
 * - `activity`: {type, resource, action} of the request;
 * - `private_key` / `wallet` / `wallet_account`: the key a sign, export or account request names;
 * - `eth.tx`: the parsed unsigned Ethereum transaction of sign_transaction.
 * A keyword the activity does not have is left unbound: a policy that uses it does not apply.
 */
import type { Store } from '../storage/types.js';
import { parseUnsignedTransaction } from '../crypto/ethereum.js';
import type { Value } from './language.js';

/** What an operation tells the policy engine about the keys and transaction it targets. */
export interface PolicyTargets {
  privateKeyId?: string;
  walletId?: string;
  walletAccountAddress?: string;
  ethereumTransaction?: string;
}

const VERBS = ['CREATE', 'UPDATE', 'DELETE', 'SIGN', 'EXPORT', 'IMPORT', 'APPROVE', 'REJECT', 'SET', 'REMOVE'] as const;

/** activity.resource / activity.action, from the type's name (ACTIVITY_TYPE_<VERB>_<NOUN>[_Vn]). */
export function resourceAction(type: string): { resource: string; action: string } {
  const name = type.replace(/^ACTIVITY_TYPE_/, '').replace(/_V\d+$/, '');
  const table: Record<string, [string, string]> = {
    SIGN_RAW_PAYLOAD: ['PRIVATE_KEY', 'SIGN'], SIGN_RAW_PAYLOADS: ['PRIVATE_KEY', 'SIGN'], SIGN_TRANSACTION: ['PRIVATE_KEY', 'SIGN'],
    EXPORT_WALLET_ACCOUNT: ['WALLET', 'EXPORT'], CREATE_WALLET_ACCOUNTS: ['WALLET', 'CREATE'], DELETE_WALLET_ACCOUNTS: ['WALLET', 'DELETE'],
    UPDATE_USER_NAME: ['USER', 'UPDATE'], UPDATE_USER_EMAIL: ['USER', 'UPDATE'], UPDATE_USER_PHONE_NUMBER: ['USER', 'UPDATE'],
    CREATE_SUB_ORGANIZATION: ['ORGANIZATION', 'CREATE'], DELETE_SUB_ORGANIZATION: ['ORGANIZATION', 'DELETE'],
    UPDATE_ROOT_QUORUM: ['ROOT_QUORUM', 'UPDATE'], SET_ORGANIZATION_FEATURE: ['ORGANIZATION', 'UPDATE'],
    REMOVE_ORGANIZATION_FEATURE: ['ORGANIZATION', 'UPDATE'], UPDATE_ORGANIZATION_NAME: ['ORGANIZATION', 'UPDATE'],
    CREATE_API_ONLY_USERS: ['USER', 'CREATE'], CREATE_READ_WRITE_SESSION: ['AUTH', 'CREATE'],
    EMAIL_AUTH: ['AUTH', 'CREATE'], OTP_AUTH: ['AUTH', 'CREATE'], INIT_OTP_AUTH: ['AUTH', 'CREATE'], OAUTH: ['AUTH', 'CREATE'],
    OAUTH_LOGIN: ['AUTH', 'CREATE'], OTP_LOGIN: ['AUTH', 'CREATE'], STAMP_LOGIN: ['AUTH', 'CREATE'],
    INIT_OTP: ['OTP', 'CREATE'], VERIFY_OTP: ['OTP', 'VERIFY'],
    INIT_USER_EMAIL_RECOVERY: ['RECOVERY', 'CREATE'], RECOVER_USER: ['RECOVERY', 'UPDATE'],
    INIT_IMPORT_WALLET: ['WALLET', 'IMPORT'], INIT_IMPORT_PRIVATE_KEY: ['PRIVATE_KEY', 'IMPORT'],
    APPROVE_ACTIVITY: ['ACTIVITY', 'APPROVE'], REJECT_ACTIVITY: ['ACTIVITY', 'REJECT'],
  };
  const hit = table[name];
  if (hit) return { resource: hit[0], action: hit[1] };
  const verb = VERBS.find((v) => name.startsWith(`${v}_`));
  const noun = verb ? name.slice(verb.length + 1) : name;
  const resource = noun
    .replace(/_TAGS?$/, '_TAG')
    .replace(/^(USERS|API_KEYS|AUTHENTICATORS|PRIVATE_KEYS|WALLETS|POLICIES|OAUTH_PROVIDERS|INVITATIONS|WEBHOOK_ENDPOINTS?)$/, (m) => ({
      USERS: 'USER', API_KEYS: 'CREDENTIAL', AUTHENTICATORS: 'CREDENTIAL', PRIVATE_KEYS: 'PRIVATE_KEY', WALLETS: 'WALLET',
      POLICIES: 'POLICY', OAUTH_PROVIDERS: 'CREDENTIAL', INVITATIONS: 'INVITATION', WEBHOOK_ENDPOINTS: 'WEBHOOK', WEBHOOK_ENDPOINT: 'WEBHOOK',
    } as Record<string, string>)[m]!);
  return { resource: resource === 'API_KEY' ? 'CREDENTIAL' : resource, action: verb ?? 'UNKNOWN' };
}

/** The condition scope of an activity. */
export function conditionScope(store: Store, organizationId: string, type: string, targets: PolicyTargets | undefined): Map<string, Value> {
  const { resource, action } = resourceAction(type);
  const scope = new Map<string, Value>([['activity', { type, resource, action }]]);
  if (!targets) return scope;
  if (targets.privateKeyId) {
    const pk = store.keys.privateKeys.get(organizationId, targets.privateKeyId);
    if (pk) scope.set('private_key', { id: pk.id, name: pk.name, curve: pk.curve, tags: store.tags.tagsOf(pk.id) });
  }
  let walletId = targets.walletId;
  if (targets.walletAccountAddress) {
    const acct = store.keys.accounts.byAddress(organizationId, targets.walletAccountAddress);
    if (acct) {
      walletId ??= acct.walletId;
      scope.set('wallet_account', { address: acct.address, curve: acct.curve, path: acct.path, address_format: acct.addressFormat });
    }
  }
  if (walletId) {
    const w = store.keys.wallets.get(organizationId, walletId);
    if (w) scope.set('wallet', { id: w.id, name: w.name, exported: w.exported, imported: w.imported });
  }
  if (targets.ethereumTransaction !== undefined) {
    try {
      const tx = parseUnsignedTransaction(targets.ethereumTransaction);
      const data = (tx as { data?: string }).data ?? '0x';
      scope.set('eth', {
        tx: {
          to: (tx.to ?? '').toLowerCase(),
          value: tx.value ?? 0n,
          nonce: BigInt(tx.nonce ?? 0),
          chain_id: BigInt(tx.chainId ?? 0),
          gas: tx.gas ?? 0n,
          gas_price: (tx as { gasPrice?: bigint }).gasPrice ?? 0n,
          max_fee_per_gas: (tx as { maxFeePerGas?: bigint }).maxFeePerGas ?? 0n,
          max_priority_fee_per_gas: (tx as { maxPriorityFeePerGas?: bigint }).maxPriorityFeePerGas ?? 0n,
          data: data.toLowerCase(),
          type: tx.type ?? 'legacy',
        },
      });
    } catch {
      // An unparsable transaction binds no eth.tx; the operation itself refuses it later.
    }
  }
  return scope;
}

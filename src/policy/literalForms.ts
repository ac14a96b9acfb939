/**
 * Comparisons that letter case (or a literal's form) makes impossible, found when a policy is
 * stored. The policy engine reads some fields in one normal form and compares strings exactly,
 * as Turnkey's does: `eth.tx.to`, `eth.tx.from`, `eth.tx.data` and `eth.tx.function_signature` are lower-case hex, and so are
 * the hex strings (addresses, bytes) of `eth.eip_712`. A policy
 * that compares such a field with a mixed-case literal — an address copied from an explorer, in
 * EIP-55 form — would never match: an EFFECT_DENY written that way would silently never fire.
 * Such a condition is refused at create_policy / update_policy instead of being stored dead.
 *
 * Forms, by field (a path: keyword, fields, `[]` for an item or a map entry):
 * - lower-case hex: eth.tx.to / from / data (and its slices) / function_signature, eip_712.domain.verifying_contract,
 *   eip_7702_authorization.address, solana instruction_data_hex, tron contract data and block
 *   references, bitcoin script_pubkey and tx_id;
 * - hex strings lower-case: eth.eip_712.message[…] (its other strings are free text), as
 *   Turnkey's reference says EIP-712 values are normalized;
 * - eth.tx.contract_call_args[…]: addresses in EIP-55 form (as the ABI decoder gives them and as
 *   Turnkey's own example writes them), bytes lower-case: a 20-byte hex literal must be EIP-55
 *   (so a bytes20 argument cannot be compared with a literal; addresses are what calls carry);
 * - Solana keys: 32 bytes in base58 (letter case is part of the key: only a literal that is no
 *   key at all can be detected);
 * - bitcoin.tx.outputs[].address: bech32 addresses lower-case;
 * - wallet_account.address: as kmas stores and returns it — Ethereum in EIP-55 form, other hex
 *   addresses and bech32 lower-case.
 * Checked: `==`, `!=`, `in` (either side), `.contains()`, `.startsWith()`, `.endsWith()`.
 *
 * Types: a field the views bind with a known type (FIELD_TYPES: `eth.tx.value` is an int,
 * `eth.tx.to` a string, `private_key.imported` a bool, …) compared with a literal of another type
 * (`eth.tx.value > '1000'`), or ordered (`<`, `<=`, `>`, `>=`) when it is no int, can never hold:
 * evaluating it is a type error, and a policy whose expression errs does not apply. Such a
 * comparison is refused too, in conditions and consensus expressions alike.
 */
import { base58, bech32, bech32m } from '@scure/base';
import { toChecksumAddress } from '../crypto/addresses.js';
import { children, parse, type Node } from './language.js';
import type { Tx } from '../storage/types.js';

type Form = 'lower' | 'hexLower' | 'callArg' | 'solanaKey' | 'bech32Lower' | 'accountAddress';

const FORMS: [RegExp, Form][] = [
  [/^eth\.tx\.(to|from|data|function_signature)$/, 'lower'],
  [/^eth\.eip_712\.domain\.verifying_contract$/, 'lower'],
  [/^eth\.eip_7702_authorization\.address$/, 'lower'],
  [/^eth\.tx\.contract_call_args(\[\]|\.\w+)+$/, 'callArg'],
  [/^eth\.eip_712\.message(\[\]|\.\w+)+$/, 'hexLower'],
  [/^solana\.tx\.instructions\[\]\.instruction_data_hex$/, 'lower'],
  [/^solana\.tx\.(account_keys\[\]|program_keys\[\]|recent_blockhash|address_table_lookups\[\]\.address_table_key)$/, 'solanaKey'],
  [/^solana\.tx\.instructions\[\]\.(program_key|accounts\[\]\.account_key|address_table_lookups\[\]\.address_table_key)$/, 'solanaKey'],
  [/^solana\.tx\.(transfers|spl_transfers)\[\]\.(from|to|owner|token_mint|signers\[\])$/, 'solanaKey'],
  [/^tron\.tx\.(ref_block_bytes|ref_block_hash|contract\[\]\.data)$/, 'lower'],
  [/^bitcoin\.tx\.outputs\[\]\.script_pubkey$/, 'lower'],
  [/^bitcoin\.tx\.inputs\[\]\.tx_id$/, 'lower'],
  [/^bitcoin\.tx\.outputs\[\]\.address$/, 'bech32Lower'],
  [/^wallet_account\.address$/, 'accountAddress'],
];

type Scalar = 'int' | 'string' | 'bool';

/** The type of each field the views bind whose type does not depend on the request (paths as `pathOf` writes them). */
export const FIELD_TYPES: ReadonlyMap<string, Scalar> = new Map<string, Scalar>([
  ...fields('string', 'activity.', ['type', 'resource', 'action', 'kind']),
  ...fields('string', 'private_key.', ['id', 'label', 'curve', 'tags[]']),
  ...fields('bool', 'private_key.', ['imported', 'exported']),
  ...fields('string', 'wallet.', ['id', 'label']),
  ...fields('bool', 'wallet.', ['imported', 'exported']),
  ...fields('string', 'wallets[].', ['id', 'label']),
  ...fields('bool', 'wallets[].', ['imported', 'exported']),
  ...fields('string', 'wallet_account.', ['address', 'curve', 'path', 'address_format']),
  ['secret.static_properties[]', 'string'],
  ...fields('string', 'eth.tx.', ['from', 'to', 'data', 'type', 'function_name', 'function_signature']),
  ...fields('int', 'eth.tx.', ['value', 'nonce', 'chain_id', 'gas', 'gas_price', 'max_fee_per_gas', 'max_priority_fee_per_gas']),
  ...fields('string', 'eth.eip_712.', ['primary_type', 'domain.name', 'domain.version', 'domain.verifying_contract']),
  ['eth.eip_712.domain.chain_id', 'int'],
  ['eth.eip_7702_authorization.address', 'string'],
  ...fields('int', 'eth.eip_7702_authorization.', ['chain_id', 'nonce']),
  ...fields('string', 'solana.tx.', ['account_keys[]', 'program_keys[]', 'recent_blockhash', 'address_table_lookups[].address_table_key']),
  ...fields('int', 'solana.tx.', ['address_table_lookups[].writable_indexes[]', 'address_table_lookups[].readonly_indexes[]']),
  ...fields('string', 'solana.tx.instructions[].', ['program_key', 'instruction_data_hex', 'accounts[].account_key', 'address_table_lookups[].address_table_key']),
  ...fields('bool', 'solana.tx.instructions[].', ['accounts[].signer', 'accounts[].writable']),
  ...fields('int', 'solana.tx.instructions[].', ['address_table_lookups[].writable_indexes[]', 'address_table_lookups[].readonly_indexes[]']),
  ...fields('string', 'solana.tx.transfers[].', ['from', 'to']),
  ['solana.tx.transfers[].amount', 'int'],
  ...fields('string', 'solana.tx.spl_transfers[].', ['from', 'to', 'owner', 'token_mint', 'signers[]']),
  ['solana.tx.spl_transfers[].amount', 'int'],
  ...fields('string', 'tron.tx.', ['ref_block_bytes', 'ref_block_hash', 'data']),
  ...fields('int', 'tron.tx.', ['expiration', 'timestamp', 'fee_limit']),
  ...fields('string', 'tron.tx.contract[].', ['type', 'owner_address', 'to_address', 'contract_address', 'data']),
  ...fields('int', 'tron.tx.contract[].', ['permission_id', 'amount', 'call_value', 'call_token_value', 'token_id']),
  ...fields('string', 'bitcoin.tx.', ['version', 'inputs[].tx_id', 'outputs[].script_pubkey', 'outputs[].address', 'outputs[].address_type', 'locktime.type']),
  ...fields('int', 'bitcoin.tx.', ['fee', 'inputs[].vout', 'inputs[].sequence', 'outputs[].value', 'locktime.amount']),
  ...fields('string', 'approvers[].', ['id', 'email', 'alias', 'name', 'tags[]']),
  ['approvers[].is_root', 'bool'],
  ...fields('string', 'credentials[].', ['id', 'user_id', 'type', 'credential_id', 'public_key']),
]);

function fields(type: Scalar, prefix: string, names: string[]): [string, Scalar][] {
  return names.map((n) => [prefix + n, type]);
}

/** A literal's type, as the evaluator sees it. */
function scalarOf(lit: Node): Scalar | undefined {
  if (lit.k !== 'lit') return undefined;
  if (typeof lit.v === 'bigint') return 'int';
  if (typeof lit.v === 'string') return 'string';
  if (typeof lit.v === 'boolean') return 'bool';
  return undefined;
}

const ARTICLE: Record<Scalar, string> = { int: 'an int', string: 'a string', bool: 'a bool' };

/** How `lit` is written as a literal of `type`, when it reads as one (the fix to name). */
function rewrite(lit: Node, type: Scalar): string | undefined {
  if (lit.k !== 'lit') return undefined;
  const text = String(lit.v);
  if (type === 'string') return `'${text}'`;
  if (type === 'int') return /^-?[0-9]+$/.test(text) ? text : undefined;
  return text === 'true' || text === 'false' ? text : undefined;
}

function formOf(path: string | undefined): Form | undefined {
  if (path === undefined) return undefined;
  return FORMS.find(([re]) => re.test(path))?.[1];
}

const hasUpper = (s: string): boolean => s !== s.toLowerCase();
/** A path as the messages show it: `[…]` for an item or a map entry. */
const show = (path: string): string => path.replace(/\[\]/g, '[…]');

/** Why a 20-byte hex literal never equals an address kept in EIP-55 form, or undefined when it is that form. */
function eip55Mismatch(lit: string, where: string): string | undefined {
  const eip55 = toChecksumAddress(lit);
  return lit === eip55 ? undefined : `holds ${where} in their EIP-55 checksummed form: write '${eip55}'`;
}
const HEX = /^(0x)?[0-9a-f]+$/i;

function isBech32(s: string): boolean {
  for (const codec of [bech32, bech32m]) {
    try { codec.decode(s as `${string}1${string}`, 90); return true; } catch { /* not this one */ }
  }
  return false;
}

function isSolanaKey(s: string): boolean {
  try { return base58.decode(s).length === 32; } catch { return false; }
}

/** Why `lit` can never equal (or, as a fragment, be part of) a value of `form`; undefined when it can. */
function mismatch(form: Form, lit: string, fragment: boolean): string | undefined {
  switch (form) {
    case 'lower':
      return hasUpper(lit) ? `holds lower-case hex, so it never equals a literal with upper-case letters: write '${lit.toLowerCase()}'` : undefined;
    case 'hexLower':
      return HEX.test(lit) && hasUpper(lit) ? `holds addresses and bytes as lower-case hex, so it never equals a literal with upper-case letters: write '${lit.toLowerCase()}'` : undefined;
    case 'callArg': {
      // addresses as the ABI decoder gives them (EIP-55, as Turnkey's own example writes them), bytes lower-case
      if (fragment || !HEX.test(lit) || !lit.startsWith('0x')) return undefined;
      if (/^0x[0-9a-f]{40}$/i.test(lit)) return eip55Mismatch(lit, 'addresses');
      return hasUpper(lit) ? `holds bytes as lower-case hex: write '${lit.toLowerCase()}'` : undefined;
    }
    case 'solanaKey':
      return !fragment && lit !== '' && !isSolanaKey(lit) ? 'holds Solana keys (32 bytes in base58), and this literal is none' : undefined;
    case 'bech32Lower':
      return !fragment && hasUpper(lit) && isBech32(lit.toLowerCase()) ? `holds bech32 addresses in lower case: write '${lit.toLowerCase()}'` : undefined;
    case 'accountAddress': {
      if (fragment) return undefined;
      if (/^0x[0-9a-f]{40}$/i.test(lit)) return eip55Mismatch(lit, 'Ethereum addresses (as kmas returns them)');
      if (/^0x[0-9a-f]+$/i.test(lit) && hasUpper(lit)) return `holds this kind of address in lower-case hex: write '${lit.toLowerCase()}'`;
      if (hasUpper(lit) && isBech32(lit.toLowerCase())) return `holds bech32 addresses in lower case: write '${lit.toLowerCase()}'`;
      return undefined;
    }
  }
}

const short = (s: string): string => (s.length > 80 ? `${s.slice(0, 77)}...` : s);

/**
 * The comparisons of `tree` (a policy condition) that can never hold because of a literal's
 * letter case or form, each as a sentence naming the field, the literal and the fix.
 */
export function literalFormProblems(tree: Node): string[] {
  const out: string[] = [];
  const report = (path: string, lit: string, fragment: boolean): void => {
    const form = formOf(path);
    const why = form && mismatch(form, lit, fragment);
    if (why) out.push(`${show(path)} is compared with '${short(lit)}', which can never match: ${show(path)} ${why}`);
  };
  const stringLit = (n: Node): string | undefined => (n.k === 'lit' && typeof n.v === 'string' ? n.v : undefined);
  const listStrings = (n: Node): string[] => (n.k === 'list' ? n.items.map(stringLit).filter((x): x is string => x !== undefined) : []);

  const pathOf = (n: Node, env: ReadonlyMap<string, string>): string | undefined => {
    switch (n.k) {
      case 'name': return env.get(n.name) ?? n.name;
      case 'field': { const p = pathOf(n.of, env); return p === undefined ? undefined : `${p}.${n.name}`; }
      case 'index': { const p = pathOf(n.of, env); return p === undefined ? undefined : `${p}[]`; }
      // a slice keeps the form of what it slices (a substring, or a shorter list of the same items)
      case 'slice': return pathOf(n.of, env);
      case 'call': return n.name === 'filter' ? pathOf(n.of, env) : undefined;
      default: return undefined;
    }
  };

  const typeMismatch = (path: string | undefined, lit: Node, op: string): void => {
    const type = path === undefined ? undefined : FIELD_TYPES.get(path);
    const litType = scalarOf(lit);
    if (!type || !litType) return;
    const ordering = op === '<' || op === '<=' || op === '>' || op === '>=';
    const shown = lit.k === 'lit' && typeof lit.v === 'string' ? `'${short(lit.v)}'` : String((lit as { v: unknown }).v);
    if (ordering && type !== 'int') {
      out.push(`${show(path!)} is ${ARTICLE[type]}, and '${op}' orders ints (or timestamps) only, so the comparison with ${shown} can never hold`);
    } else if (litType !== type) {
      const fix = rewrite(lit, type);
      out.push(`${show(path!)} is ${ARTICLE[type]}, compared with ${ARTICLE[litType]} ${shown}, which can never match${fix ? `: write ${fix}` : ''}`);
    }
  };
  const ORDERS = new Set(['==', '!=', '<', '<=', '>', '>=']);

  const walk = (n: Node, env: ReadonlyMap<string, string>): void => {
    if (n.k === 'bin' && ORDERS.has(n.op)) {
      typeMismatch(pathOf(n.a, env), n.b, n.op);
      typeMismatch(pathOf(n.b, env), n.a, n.op);
    } else if (n.k === 'bin' && n.op === 'in') {
      const p = pathOf(n.a, env);
      if (n.b.k === 'list') n.b.items.forEach((item) => typeMismatch(p, item, 'in'));
      const q = pathOf(n.b, env);
      if (q !== undefined) typeMismatch(`${q}[]`, n.a, 'in');
    }
    if (n.k === 'bin' && (n.op === '==' || n.op === '!=')) {
      for (const [field, other] of [[n.a, n.b], [n.b, n.a]] as const) {
        const p = pathOf(field, env);
        const lit = stringLit(other);
        if (p !== undefined && lit !== undefined) report(p, lit, false);
      }
      // two fields whose Ethereum addresses are spelled differently (lower case, EIP-55) never match
      const [pa, pb] = [pathOf(n.a, env), pathOf(n.b, env)];
      const [fa, fb] = [formOf(pa), formOf(pb)];
      const eip55 = (f: Form | undefined) => f === 'accountAddress' || f === 'callArg';
      const lower = (f: Form | undefined) => f === 'lower' || f === 'hexLower';
      if ((eip55(fa) && lower(fb)) || (lower(fa) && eip55(fb))) {
        out.push(`${show(pa!)} is compared with ${show(pb!)}, which can never match: one holds Ethereum addresses in lower case, the other in their EIP-55 checksummed form`);
      }
    } else if (n.k === 'bin' && n.op === 'in') {
      const p = pathOf(n.a, env);
      if (p !== undefined) listStrings(n.b).forEach((l) => report(p, l, false));
      const q = pathOf(n.b, env);
      const lit = stringLit(n.a);
      if (q !== undefined && lit !== undefined) report(`${q}[]`, lit, false);
    } else if (n.k === 'call' && !n.param && n.args.length === 1) {
      const p = pathOf(n.of, env);
      const arg = n.args[0]!;
      const lit = stringLit(arg);
      if (p !== undefined && lit !== undefined) {
        // a list's contains() compares whole items; a string's methods compare fragments
        const listItem = formOf(`${p}[]`) !== undefined;
        if (n.name === 'contains' && listItem) report(`${p}[]`, lit, false);
        else if (n.name === 'contains' || n.name === 'startsWith' || n.name === 'endsWith') report(p, lit, true);
      }
      const q = pathOf(arg, env);
      if (n.name === 'contains' && q !== undefined) listStrings(n.of).forEach((l) => report(q, l, false));
    }
    if (n.k === 'call' && n.param) {
      walk(n.of, env);
      const item = pathOf(n.of, env);
      const inner = new Map(env);
      if (item === undefined) inner.delete(n.param); else inner.set(n.param, `${item}[]`);
      n.args.forEach((x) => walk(x, inner));
      return;
    }
    children(n).forEach((x) => walk(x, env));
  };
  walk(tree, new Map());
  return out;
}

/**
 * Stored policies whose condition or consensus has such a comparison (written before kmas refused them): each
 * never matches as written. The server names them in its log at start so an operator can fix them.
 */
export async function deadPolicies(tx: Tx): Promise<{ organizationId: string; policyId: string; policyName: string; effect: string; problem: string }[]> {
  const out: { organizationId: string; policyId: string; policyName: string; effect: string; problem: string }[] = [];
  const queue = [...await tx.organizations.roots()];
  while (queue.length > 0) {
    const org = queue.pop()!;
    for (const p of await tx.policies.list(org.id)) {
      const problems: string[] = [];
      for (const src of [p.condition, p.consensus]) {
        try { if (src.trim() !== '') problems.push(...literalFormProblems(parse(src))); } catch { /* an expression that no longer parses is not this check's to report */ }
      }
      if (problems.length > 0) out.push({ organizationId: org.id, policyId: p.id, policyName: p.name, effect: p.effect, problem: problems[0]! });
    }
    queue.push(...await tx.organizations.childrenOf(org.id));
  }
  return out;
}

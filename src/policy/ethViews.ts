/**
 * `eth.eip_712` and `eth.eip_7702_authorization`: what a sign_raw_payload with
 * PAYLOAD_ENCODING_EIP712 / _EIP7702_AUTHORIZATION signs, as policy values. Typed-data values
 * are read by their EIP-712 types: ints as the signer reads them (JavaScript's BigInt of the JSON
 * number or string: "0X10", " 10" and 1e21 included), addresses and bytes as lowercase hex
 * (Turnkey normalizes them so), structs as maps, arrays as lists. A payload that does not read
 * that way is refused before any policy is decided (policy/scope.ts): what is signed is always
 * what the policies saw.
 */
import type { Value } from './language.js';

type Field = { name: string; type: string };
type Types = Record<string, Field[]>;

class Unreadable extends Error {}

function int(v: unknown): bigint {
  if (typeof v === 'bigint') return v;
  // exactly what the signer takes (viem encodes BigInt(value)): a stricter reading here would let
  // a value the signer accepts hide the payload from the policies
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  if (typeof v === 'string') {
    try { return BigInt(v); } catch { throw new Unreadable(); }
  }
  throw new Unreadable();
}

function typed(v: unknown, type: string, types: Types, depth = 0): Value {
  if (depth > 32) throw new Unreadable();
  const array = /^(.*)\[(\d*)\]$/.exec(type);
  if (array) {
    if (!Array.isArray(v)) throw new Unreadable();
    return v.map((x) => typed(x, array[1]!, types, depth + 1));
  }
  const struct = types[type];
  if (struct) {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Unreadable();
    const out: Record<string, Value> = {};
    for (const f of struct) {
      const x = (v as Record<string, unknown>)[f.name];
      if (x !== undefined && x !== null) out[f.name] = typed(x, f.type, types, depth + 1);
    }
    return out;
  }
  if (/^u?int\d*$/.test(type)) return int(v);
  if (type === 'bool') { if (typeof v !== 'boolean') throw new Unreadable(); return v; }
  if (type === 'string') { if (typeof v !== 'string') throw new Unreadable(); return v; }
  if (type === 'address' || /^bytes\d*$/.test(type)) { if (typeof v !== 'string') throw new Unreadable(); return v.toLowerCase(); }
  throw new Unreadable();
}

/** `eth.eip_712`: {primary_type, domain {name, version, chain_id, verifying_contract}, message}. */
export function eip712View(payload: string): Value | undefined {
  try {
    const td = JSON.parse(payload) as { types?: Types; primaryType?: unknown; domain?: Record<string, unknown>; message?: unknown };
    if (!td || typeof td.types !== 'object' || td.types === null || typeof td.primaryType !== 'string') return undefined;
    const d = td.domain ?? {};
    const domain: Record<string, Value> = {};
    if (typeof d.name === 'string') domain.name = d.name;
    if (typeof d.version === 'string') domain.version = d.version;
    if (d.chainId !== undefined && d.chainId !== null) domain.chain_id = int(d.chainId);
    if (typeof d.verifyingContract === 'string') domain.verifying_contract = d.verifyingContract.toLowerCase();
    return { primary_type: td.primaryType, domain, message: typed(td.message ?? {}, td.primaryType, td.types) };
  } catch {
    return undefined;
  }
}

/** `eth.eip_7702_authorization`: {address, chain_id, nonce} of the JSON {address (or contractAddress, as the signer reads it), chainId, nonce}. */
export function eip7702View(payload: string): Value | undefined {
  try {
    const a = JSON.parse(payload) as Record<string, unknown>;
    const address = a.address ?? a.contractAddress;
    if (typeof address !== 'string') return undefined;
    return { address: address.toLowerCase(), chain_id: int(a.chainId), nonce: int(a.nonce) };
  } catch {
    return undefined;
  }
}

/**
 * Smart contract interfaces for policies: an Ethereum ABI uploaded with
 * create_smart_contract_interface lets `eth.tx` carry `function_name`, `function_signature` (the
 * 4-byte selector, 0x-prefixed) and `contract_call_args` (argument name → value) for calls to that
 * contract. Values: ints as ints, addresses as viem decodes them (EIP-55), bytes as 0x hex, arrays
 * and tuples as lists (so `call[0]` reads a tuple's first component).
 */
import { decodeFunctionData, toFunctionSelector, type Abi, type AbiFunction, type AbiParameter, type Hex } from 'viem';
import type { Value } from './language.js';

type Item = { type?: unknown; name?: unknown; inputs?: unknown };

/** Why `text` is not a usable Ethereum ABI (JSON array of ABI items), or undefined when it is. */
export function abiProblem(text: string): string | undefined {
  let abi: unknown;
  try { abi = JSON.parse(text); } catch { return 'is not valid JSON'; }
  if (!Array.isArray(abi)) return 'must be a JSON array of ABI items';
  let functions = 0;
  for (const [i, item] of abi.entries()) {
    if (typeof item !== 'object' || item === null || typeof (item as Item).type !== 'string') return `item ${i} has no type`;
    if ((item as Item).type !== 'function') continue;
    const f = item as Item;
    if (typeof f.name !== 'string' || !/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(f.name)) return `item ${i} is a function without a valid name`;
    if (!Array.isArray(f.inputs) || !f.inputs.every(validParameter)) return `function ${f.name} has an input that is not a Solidity ABI type`;
    functions++;
  }
  return functions === 0 ? 'has no function' : undefined;
}

const ELEMENTARY = /^(?:address|bool|string|bytes|function|u?int(8|16|24|32|40|48|56|64|72|80|88|96|104|112|120|128|136|144|152|160|168|176|184|192|200|208|216|224|232|240|248|256)?|bytes([1-9]|[12][0-9]|3[0-2]))$/;

/** An ABI parameter: an elementary type or a tuple with valid components, with any array suffixes. */
function validParameter(p: unknown): boolean {
  if (typeof p !== 'object' || p === null || typeof (p as { type?: unknown }).type !== 'string') return false;
  const m = /^([a-z0-9]+)((?:\[\d*\])*)$/.exec((p as { type: string }).type);
  if (!m) return false;
  if (m[1] === 'tuple') {
    const c = (p as { components?: unknown }).components;
    return Array.isArray(c) && c.every(validParameter);
  }
  return ELEMENTARY.test(m[1]!);
}

/** Solana IDLs are kept for later use; they must be a JSON object. */
export function idlProblem(text: string): string | undefined {
  try {
    const idl: unknown = JSON.parse(text);
    return typeof idl === 'object' && idl !== null && !Array.isArray(idl) ? undefined : 'must be a JSON object (an Anchor IDL)';
  } catch { return 'is not valid JSON'; }
}

function toValue(v: unknown, p: AbiParameter | undefined): Value {
  if (typeof v === 'bigint' || typeof v === 'boolean' || typeof v === 'string') return v;
  if (typeof v === 'number') return BigInt(v);
  const components = (p as { components?: readonly AbiParameter[] } | undefined)?.components;
  if (Array.isArray(v)) {
    // an array (its elements share the parameter's element type) or a tuple decoded positionally
    const element = p && /\[\d*\]$/.test(p.type) ? { ...p, type: p.type.replace(/\[\d*\]$/, '') } as AbiParameter : undefined;
    return v.map((x, i) => toValue(x, element ?? components?.[i]));
  }
  if (typeof v === 'object' && v !== null && components) {
    // a tuple with named components: positional, as Turnkey's examples index them
    return components.map((c, i) => toValue((v as Record<string, unknown>)[c.name ?? String(i)], c));
  }
  return String(v);
}

export interface DecodedCall { function_name: string; function_signature: string; contract_call_args: { [name: string]: Value } }

/** The call `data` makes to a contract with this ABI; undefined when no function of it matches. */
export function decodeCall(abiText: string, data: string): DecodedCall | undefined {
  if (!/^0x[0-9a-fA-F]{8}/.test(data)) return undefined;
  try {
    const abi = (JSON.parse(abiText) as Item[]).filter((x) => x.type === 'function') as unknown as Abi;
    const { functionName, args } = decodeFunctionData({ abi, data: data as Hex });
    const selector = data.slice(0, 10).toLowerCase();
    const fn = (abi as AbiFunction[]).find((f) => f.name === functionName && toFunctionSelector(f) === selector);
    if (!fn) return undefined;
    const out: { [name: string]: Value } = {};
    fn.inputs.forEach((input, i) => { out[input.name || String(i)] = toValue((args ?? [])[i], input); });
    return { function_name: functionName, function_signature: selector, contract_call_args: out };
  } catch {
    return undefined;
  }
}

/** Shared request-parameter readers for the key, wallet, signing and import/export operations. */
import { isRoot } from '../../domain/principal.js';
import type { Principal } from '../../domain/principal.js';
import { permissionDenied } from '../../errors.js';
import {
  CryptoError, assertFormatFitsCurve, formatPath, parseTargetPublicKey, validateAccountSpec, type CurveId,
} from '../../crypto/index.js';
import { API_CURVES, curveId } from '../../domain/keys.js';
import { MAX_NAME, Validator, type Obj } from '../../domain/validate.js';

export interface AccountParams {
  curve: string;
  pathFormat: string;
  /** Canonical (formatPath: hardened written `'`), whichever of `'`, `h`, `H` the request used. */
  path: string;
  addressFormat: string;
  name?: string;
}

/** Records a CryptoError as a field violation (field from the error, else `fallback`). */
export function failFromCrypto(v: Validator, e: unknown, fallback: string): void {
  if (e instanceof CryptoError) v.fail(e.field ?? fallback, e.message);
  else throw e;
}

/** accounts: v1WalletAccountParams[], each checked (curve, path, address format fitting the curve). */
export function readAccounts(v: Validator, o: Obj, key: string, field: string, opts: { nonEmpty?: boolean } = {}): AccountParams[] {
  const arr = v.array(o, key, field, { required: true, nonEmpty: opts.nonEmpty }) ?? [];
  const out: AccountParams[] = [];
  arr.forEach((item, i) => {
    const f = `${field}[${i}]`;
    const a = v.object(item, f);
    if (!a) return;
    const curve = v.enumOf(a, 'curve', `${f}.curve`, API_CURVES);
    const pathFormat = v.enumOf(a, 'pathFormat', `${f}.pathFormat`, ['PATH_FORMAT_BIP32'] as const);
    const path = v.string(a, 'path', `${f}.path`, { required: true, max: 1024 });
    const addressFormat = v.string(a, 'addressFormat', `${f}.addressFormat`, { required: true, max: 100 });
    const name = v.string(a, 'name', `${f}.name`, { max: MAX_NAME });
    if (!curve || !pathFormat || path === undefined || addressFormat === undefined) return;
    let indices: number[];
    try {
      ({ indices } = validateAccountSpec({ curve, pathFormat, path, addressFormat }, f));
    } catch (e) {
      failFromCrypto(v, e, f);
      return;
    }
    // Stored, compared and returned in one spelling (hardened `'`): m/44h/60h/0h/0/0 is m/44'/60'/0'/0/0.
    out.push({ curve, pathFormat, path: formatPath(indices), addressFormat, ...(name ? { name } : {}) });
  });
  return out;
}

/** addressFormats for a curve: each must be a known, supported format that fits the curve. */
export function readAddressFormats(v: Validator, o: Obj, key: string, field: string, curve: string | undefined): string[] {
  const arr = v.array(o, key, field) ?? [];
  const out: string[] = [];
  const seen = new Set<string>();
  arr.forEach((fmt, j) => {
    const f = `${field}[${j}]`;
    if (typeof fmt !== 'string') { v.fail(f, 'must be an address format string'); return; }
    if (seen.has(fmt)) { v.fail(f, 'is a duplicate'); return; }
    seen.add(fmt);
    if (curve === undefined) return;
    try {
      assertFormatFitsCurve(fmt, curveId(curve) as CurveId, f);
      out.push(fmt);
    } catch (e) {
      failFromCrypto(v, e, f);
    }
  });
  return out;
}

/** targetPublicKey: a P-256 public key in hex (33 or 65 bytes), as @turnkey/crypto's embedded key. */
export function readTargetPublicKey(v: Validator, o: Obj, field = 'targetPublicKey'): string | undefined {
  const t = v.string(o, 'targetPublicKey', field, { required: true, max: 200 });
  if (t === undefined) return undefined;
  try {
    parseTargetPublicKey(t, field);
  } catch (e) {
    failFromCrypto(v, e, field);
    return undefined;
  }
  return t;
}

/** The fixed rule for keys and wallets: root users; anyone else as policies allow or after approvals (activities/consensus.ts). */
export function requireKeyAdmin(p: Principal, what: string): void {
  if (!isRoot(p)) throw permissionDenied(`only a root user of the organization may ${what}`);
}

export { Validator };

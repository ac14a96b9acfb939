/**
 * Field-by-field validation of request parameters. A Validator collects every violation
 * (google.rpc.BadRequest fieldViolations) and throws one InvalidArgument error at the end.
 * Unknown keys are ignored: only the fields read here reach the handlers.
 */
import { invalidArgument, type FieldViolation } from '../errors.js';

export type Obj = Record<string, unknown>;

export const EMAIL = /^[^\s@"<>()[\]\\,;:]+@[^\s@"<>()[\]\\,;:]+\.[^\s@"<>()[\]\\,;:]+$/;
export const E164 = /^\+[1-9]\d{1,14}$/;
export const MAX_NAME = 256;
export const MAX_ARRAY = 100;

export class Validator {
  readonly violations: FieldViolation[] = [];

  fail(field: string, description: string): void {
    this.violations.push({ field, description });
  }

  /** Throws InvalidArgument with all violations, if any. */
  done(message = 'invalid request parameters'): void {
    if (this.violations.length > 0) {
      const first = this.violations[0]!;
      throw invalidArgument(`${message}: ${first.field}: ${first.description}`, this.violations);
    }
  }

  object(v: unknown, field: string): Obj | undefined {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) { this.fail(field, 'must be an object'); return undefined; }
    return v as Obj;
  }

  string(o: Obj, key: string, field: string, opts: { required?: boolean; nonEmpty?: boolean; max?: number; pattern?: RegExp; patternDesc?: string } = {}): string | undefined {
    const v = o[key];
    if (v === undefined || v === null) {
      if (opts.required) this.fail(field, 'is required');
      return undefined;
    }
    if (typeof v !== 'string') { this.fail(field, 'must be a string'); return undefined; }
    // An empty optional formatted field (e-mail, phone) counts as absent.
    if (v === '' && opts.pattern && !opts.required) return undefined;
    if ((opts.nonEmpty ?? opts.required) && v.trim() === '') { this.fail(field, 'must not be empty'); return undefined; }
    if (v.length > (opts.max ?? 4096)) { this.fail(field, `must be at most ${opts.max ?? 4096} characters`); return undefined; }
    if (opts.pattern && !opts.pattern.test(v)) { this.fail(field, opts.patternDesc ?? 'has an invalid format'); return undefined; }
    return v;
  }

  boolean(o: Obj, key: string, field: string): boolean | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'boolean') { this.fail(field, 'must be a boolean'); return undefined; }
    return v;
  }

  enumOf<T extends string>(o: Obj, key: string, field: string, values: readonly T[], required = true): T | undefined {
    const v = o[key];
    if (v === undefined || v === null) { if (required) this.fail(field, 'is required'); return undefined; }
    if (typeof v !== 'string' || !values.includes(v as T)) {
      this.fail(field, `must be one of ${values.join(', ')}`);
      return undefined;
    }
    return v as T;
  }

  /** An array; missing → `missing` (undefined unless given). */
  array(o: Obj, key: string, field: string, opts: { required?: boolean; max?: number; nonEmpty?: boolean } = {}): unknown[] | undefined {
    const v = o[key];
    if (v === undefined || v === null) { if (opts.required) this.fail(field, 'is required'); return undefined; }
    if (!Array.isArray(v)) { this.fail(field, 'must be an array'); return undefined; }
    if (v.length > (opts.max ?? MAX_ARRAY)) { this.fail(field, `must have at most ${opts.max ?? MAX_ARRAY} elements`); return undefined; }
    if (opts.nonEmpty && v.length === 0) { this.fail(field, 'must not be empty'); return undefined; }
    return v;
  }

  /** An array of non-empty strings without duplicates. */
  stringArray(o: Obj, key: string, field: string, opts: { required?: boolean; max?: number; nonEmpty?: boolean } = {}): string[] | undefined {
    const arr = this.array(o, key, field, opts);
    if (!arr) return undefined;
    const out: string[] = [];
    const seen = new Set<string>();
    let ok = true;
    arr.forEach((x, i) => {
      if (typeof x !== 'string' || x.trim() === '' || x.length > MAX_NAME) { this.fail(`${field}[${i}]`, 'must be a non-empty string'); ok = false; return; }
      if (seen.has(x)) { this.fail(`${field}[${i}]`, 'is a duplicate'); ok = false; return; }
      seen.add(x); out.push(x);
    });
    return ok ? out : undefined;
  }

  /** A decimal uint64 string, as the API carries 64-bit numbers. */
  uintString(o: Obj, key: string, field: string, opts: { min?: number; max?: number } = {}): string | undefined {
    const v = o[key];
    if (v === undefined || v === null || v === '') return undefined;
    const s = v;
    if (typeof s !== 'string' || !/^\d{1,20}$/.test(s)) { this.fail(field, 'must be a decimal integer string'); return undefined; }
    const n = Number(s);
    if (opts.min !== undefined && n < opts.min) { this.fail(field, `must be at least ${opts.min}`); return undefined; }
    if (opts.max !== undefined && n > opts.max) { this.fail(field, `must be at most ${opts.max}`); return undefined; }
    return String(BigInt(s));
  }

  /** A required int32 from min to max, sent as a JSON number or a decimal string (proto3 JSON accepts both). */
  int(o: Obj, key: string, field: string, min: number, max: number): number | undefined {
    const raw = o[key];
    if (raw === undefined || raw === null) { this.fail(field, 'is required'); return undefined; }
    const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d{1,10}$/.test(raw) ? Number(raw) : NaN;
    if (!Number.isInteger(n) || n < min || n > max) { this.fail(field, `must be an integer from ${min} to ${max}`); return undefined; }
    return n;
  }
}

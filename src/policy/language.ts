/**
 * The policy language of `condition` and `consensus` (Turnkey's documented grammar): a small,
 * strongly typed expression language.
 *
 *   expr     := or
 *   or       := and ('||' and)*
 *   and      := not ('&&' not)*
 *   not      := '!' not | cmp
 *   cmp      := postfix (('==' | '!=' | '<' | '<=' | '>' | '>=' | 'in') postfix)?
 *   postfix  := primary ('.' name ['(' args ')'] | '[' expr ['..' expr] ']')*
 *   primary  := 'true' | 'false' | int | 'string' | '[' [expr (',' expr)*] ']' | name
 *             | name '(' [expr (',' expr)*] ')' | '(' expr ')'
 *
 * Values: booleans, integers (bigint: the documented int type is 256 bits wide), strings (single
 * quotes only, no escapes), lists and structs (the keywords' records). Methods of lists: `all`,
 * `any`, `filter` (item name + predicate), `contains`, `count`; of strings: `contains`,
 * `startsWith`, `endsWith`, `count` (length). A type mismatch, a missing field or an index out of
 * range is an EvalError, on either side of `&&` / `||` (no short-circuit, as Turnkey documents):
 * the caller decides what a policy that cannot be evaluated means.
 *
 * The `time` field adds timestamps: `time.now` (bound by the caller), `Timestamp('…Z')` and
 * `CronSpan(cron, duration, tz)` (policy/cron.ts); timestamps compare with each other.
 *
 * The parser works on the source as given (at most MAX_SOURCE characters, nesting at most
 * MAX_DEPTH), so a stored policy is parsed again when evaluated; `parse` results are cached.
 */

import { CronError, inCronSpan, parseTimestamp } from './cron.js';

export const MAX_SOURCE = 4096;
const MAX_DEPTH = 64;

/** A moment (the `time` field's timestamp type). */
export class Instant {
  constructor(readonly ms: number) {}
}

export type Value = boolean | bigint | string | Instant | Value[] | { readonly [field: string]: Value | undefined };

export type Node =
  | { k: 'lit'; v: Value }
  | { k: 'list'; items: Node[] }
  | { k: 'name'; name: string }
  | { k: 'field'; of: Node; name: string }
  | { k: 'index'; of: Node; index: Node }
  | { k: 'slice'; of: Node; from: Node; to: Node }
  | { k: 'call'; of: Node; name: string; param?: string; args: Node[] }
  | { k: 'fn'; name: string; args: Node[] }
  | { k: 'not'; of: Node }
  | { k: 'bin'; op: string; a: Node; b: Node };

/** A source that does not parse: `at` is the character offset. */
export class SyntaxError extends Error {
  constructor(message: string, readonly at: number) { super(`${message} at character ${at + 1}`); }
}

/** An expression that parsed but cannot be evaluated against the given values. */
export class EvalError extends Error {}

interface Token { t: 'num' | 'str' | 'id' | 'op' | 'end'; v: string; at: number }

const OPS = ['&&', '||', '==', '!=', '<=', '>=', '..', '<', '>', '!', '.', ',', '(', ')', '[', ']'];

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') { i++; continue; }
    const at = i;
    if (c >= '0' && c <= '9') {
      while (i < src.length && src[i]! >= '0' && src[i]! <= '9') i++;
      out.push({ t: 'num', v: src.slice(at, i), at });
      continue;
    }
    if (c === '\'') {
      const end = src.indexOf('\'', i + 1);
      if (end < 0) throw new SyntaxError('unterminated string', at);
      out.push({ t: 'str', v: src.slice(i + 1, end), at });
      i = end + 1;
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      while (i < src.length && /[A-Za-z0-9_]/.test(src[i]!)) i++;
      out.push({ t: 'id', v: src.slice(at, i), at });
      continue;
    }
    const op = OPS.find((o) => src.startsWith(o, i));
    if (!op) {
      const hint = c === '"' ? 'strings take single quotes' : c === '=' ? "'=' is not an operator: compare with '=='" : `unexpected character '${c}'`;
      throw new SyntaxError(hint, at);
    }
    out.push({ t: 'op', v: op, at });
    i += op.length;
  }
  out.push({ t: 'end', v: '', at: src.length });
  return out;
}

const CMP = new Set(['==', '!=', '<', '<=', '>', '>=']);
const LAMBDA_METHODS = new Set(['all', 'any', 'filter']);

class Parser {
  private i = 0;
  private depth = 0;
  constructor(private readonly toks: Token[]) {}

  private peek(): Token { return this.toks[this.i]!; }
  private next(): Token { return this.toks[this.i++]!; }
  private isOp(v: string): boolean { const t = this.peek(); return t.t === 'op' && t.v === v; }
  private expect(v: string): void {
    const t = this.next();
    if (t.t !== 'op' || t.v !== v) throw new SyntaxError(`expected '${v}'${t.t === 'end' ? ' before the end' : ` but found '${t.v}'`}`, t.at);
  }

  parseAll(): Node {
    const n = this.expr();
    const t = this.peek();
    if (t.t !== 'end') throw new SyntaxError(`unexpected '${t.v}'`, t.at);
    return n;
  }

  private expr(): Node {
    if (++this.depth > MAX_DEPTH) throw new SyntaxError('expression nested too deeply', this.peek().at);
    try { return this.or(); } finally { this.depth--; }
  }

  private or(): Node {
    let a = this.and();
    while (this.isOp('||')) { this.next(); a = { k: 'bin', op: '||', a, b: this.and() }; }
    return a;
  }

  private and(): Node {
    let a = this.not();
    while (this.isOp('&&')) { this.next(); a = { k: 'bin', op: '&&', a, b: this.not() }; }
    return a;
  }

  private not(): Node {
    if (this.isOp('!')) {
      this.next();
      if (++this.depth > MAX_DEPTH) throw new SyntaxError('expression nested too deeply', this.peek().at);
      try { return { k: 'not', of: this.not() }; } finally { this.depth--; }
    }
    return this.cmp();
  }

  private cmp(): Node {
    const a = this.postfix();
    const t = this.peek();
    if ((t.t === 'op' && CMP.has(t.v)) || (t.t === 'id' && t.v === 'in')) {
      this.next();
      const b = this.postfix();
      const u = this.peek();
      if ((u.t === 'op' && CMP.has(u.v)) || (u.t === 'id' && u.v === 'in')) {
        throw new SyntaxError(`comparisons do not chain: put '${t.v}' or '${u.v}' in parentheses`, u.at);
      }
      return { k: 'bin', op: t.v, a, b };
    }
    return a;
  }

  private postfix(): Node {
    let n = this.primary();
    for (;;) {
      if (this.isOp('.')) {
        this.next();
        const t = this.next();
        if (t.t !== 'id') throw new SyntaxError('expected a field or method name after \'.\'', t.at);
        if (this.isOp('(')) {
          this.next();
          if (LAMBDA_METHODS.has(t.v)) {
            const p = this.next();
            if (p.t !== 'id' || KEYWORDS.has(p.v)) throw new SyntaxError(`${t.v}() takes an item name first, e.g. ${t.v}(x, <predicate>)`, p.at);
            this.expect(',');
            const body = this.expr();
            this.expect(')');
            n = { k: 'call', of: n, name: t.v, param: p.v, args: [body] };
          } else {
            const args: Node[] = [];
            if (!this.isOp(')')) {
              args.push(this.expr());
              while (this.isOp(',')) { this.next(); args.push(this.expr()); }
            }
            this.expect(')');
            n = { k: 'call', of: n, name: t.v, args };
          }
        } else {
          n = { k: 'field', of: n, name: t.v };
        }
      } else if (this.isOp('[')) {
        this.next();
        const index = this.expr();
        if (this.isOp('..')) {
          this.next();
          const to = this.expr();
          this.expect(']');
          n = { k: 'slice', of: n, from: index, to };
        } else {
          this.expect(']');
          n = { k: 'index', of: n, index };
        }
      } else {
        return n;
      }
    }
  }

  private primary(): Node {
    const t = this.next();
    switch (t.t) {
      case 'num': return { k: 'lit', v: BigInt(t.v) };
      case 'str': return { k: 'lit', v: t.v };
      case 'id':
        if (t.v === 'true') return { k: 'lit', v: true };
        if (t.v === 'false') return { k: 'lit', v: false };
        if (t.v === 'in') throw new SyntaxError('unexpected \'in\'', t.at);
        if (this.isOp('(')) {
          // a function: Timestamp('…'), CronSpan(…)
          this.next();
          const args: Node[] = [];
          if (!this.isOp(')')) {
            args.push(this.expr());
            while (this.isOp(',')) { this.next(); args.push(this.expr()); }
          }
          this.expect(')');
          return { k: 'fn', name: t.v, args };
        }
        return { k: 'name', name: t.v };
      case 'op':
        if (t.v === '(') { const n = this.expr(); this.expect(')'); return n; }
        if (t.v === '[') {
          const items: Node[] = [];
          if (!this.isOp(']')) {
            items.push(this.expr());
            while (this.isOp(',')) { this.next(); items.push(this.expr()); }
          }
          this.expect(']');
          return { k: 'list', items };
        }
        throw new SyntaxError(`unexpected '${t.v}'`, t.at);
      default:
        throw new SyntaxError('unexpected end of expression', t.at);
    }
  }
}

const KEYWORDS = new Set(['true', 'false', 'in']);

const cache = new Map<string, Node>();

/** Parses a policy expression (throws SyntaxError). */
export function parse(src: string): Node {
  const hit = cache.get(src);
  if (hit) return hit;
  if (src.length > MAX_SOURCE) throw new SyntaxError(`longer than ${MAX_SOURCE} characters`, MAX_SOURCE);
  const n = new Parser(tokenize(src)).parseAll();
  if (cache.size >= 1024) cache.clear();
  cache.set(src, n);
  return n;
}

/** The sub-expressions of a node, in source order (a method's arguments after its receiver). */
export function children(m: Node): Node[] {
  switch (m.k) {
    case 'lit': case 'name': return [];
    case 'list': return m.items;
    case 'field': case 'not': return [m.of];
    case 'index': return [m.of, m.index];
    case 'slice': return [m.of, m.from, m.to];
    case 'bin': return [m.a, m.b];
    case 'call': return [m.of, ...m.args];
    case 'fn': return m.args;
  }
}

/** The free names an expression refers to (keywords and functions it needs), without lambda parameters. */
export function freeNames(n: Node, bound: ReadonlySet<string> = new Set()): Set<string> {
  const out = new Set<string>();
  const walk = (m: Node, b: ReadonlySet<string>): void => {
    if (m.k === 'name') { if (!b.has(m.name)) out.add(m.name); return; }
    if (m.k === 'fn') out.add(m.name);
    if (m.k === 'call' && m.param) {
      // the lambda's item name is bound in its body, not in the receiver
      walk(m.of, b);
      const inner = new Set([...b, m.param]);
      m.args.forEach((x) => walk(x, inner));
      return;
    }
    children(m).forEach((x) => walk(x, b));
  };
  walk(n, bound);
  return out;
}

const isList = (v: Value): v is Value[] => Array.isArray(v);
const isStruct = (v: Value): v is { readonly [f: string]: Value | undefined } =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Instant);

function typeName(v: Value): string {
  if (v instanceof Instant) return 'timestamp';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'bigint') return 'int';
  if (typeof v === 'string') return 'string';
  return isList(v) ? 'list' : 'struct';
}

function equal(a: Value, b: Value): boolean {
  if (typeof a !== typeof b || isList(a) !== isList(b)) {
    throw new EvalError(`cannot compare ${typeName(a)} with ${typeName(b)}`);
  }
  if (isList(a)) {
    const bl = b as Value[];
    return a.length === bl.length && a.every((x, i) => equal(x, bl[i]!));
  }
  if (a instanceof Instant || b instanceof Instant) {
    if (!(a instanceof Instant && b instanceof Instant)) throw new EvalError(`cannot compare ${typeName(a)} with ${typeName(b)}`);
    return a.ms === b.ms;
  }
  if (isStruct(a)) throw new EvalError('structs cannot be compared');
  return a === b;
}

function toIndex(v: Value, len: number, what: string, allowEnd = false): number {
  if (typeof v !== 'bigint') throw new EvalError(`${what} must be an int, not ${typeName(v)}`);
  if (v < 0n || v > BigInt(allowEnd ? len : len - 1)) throw new EvalError(`${what} ${v} is out of range (length ${len})`);
  return Number(v);
}

/** Evaluates `n` with `scope` binding the keywords; the result may be any value. */
export function evaluate(n: Node, scope: ReadonlyMap<string, Value>): Value {
  switch (n.k) {
    case 'lit': return n.v;
    case 'list': return n.items.map((x) => evaluate(x, scope));
    case 'name': {
      const v = scope.get(n.name);
      if (v === undefined) throw new EvalError(`'${n.name}' is not defined here`);
      return v;
    }
    case 'field': {
      const of = evaluate(n.of, scope);
      // Turnkey's Solana examples write `transfers.count == 1`: a list's count without parentheses.
      if (isList(of) && n.name === 'count') return BigInt(of.length);
      if (!isStruct(of)) throw new EvalError(`a ${typeName(of)} has no field '${n.name}'`);
      const v = Object.prototype.hasOwnProperty.call(of, n.name) ? of[n.name] : undefined;
      if (v === undefined) throw new EvalError(`no field '${n.name}' here`);
      return v;
    }
    case 'index': {
      const of = evaluate(n.of, scope);
      const ix = evaluate(n.index, scope);
      if (isList(of)) return of[toIndex(ix, of.length, 'index')]!;
      if (typeof of === 'string') return of[toIndex(ix, of.length, 'index')]!;
      // a map's entry by key: eth.tx.contract_call_args['to']
      if (isStruct(of) && typeof ix === 'string') {
        const v = Object.prototype.hasOwnProperty.call(of, ix) ? of[ix] : undefined;
        if (v === undefined) throw new EvalError(`no key '${ix}' here`);
        return v;
      }
      throw new EvalError(`a ${typeName(of)} cannot be indexed`);
    }
    case 'slice': {
      const of = evaluate(n.of, scope);
      if (!isList(of) && typeof of !== 'string') throw new EvalError(`a ${typeName(of)} cannot be sliced`);
      const from = toIndex(evaluate(n.from, scope), of.length, 'slice start', true);
      const to = toIndex(evaluate(n.to, scope), of.length, 'slice end', true);
      if (to < from) throw new EvalError(`slice end ${to} is before its start ${from}`);
      return of.slice(from, to);
    }
    case 'not': return !truth(evaluate(n.of, scope), '!');
    case 'bin': return binary(n.op, n.a, n.b, scope);
    case 'call': return call(n, scope);
    case 'fn': return callFunction(n, scope);
  }
}

function callFunction(n: Extract<Node, { k: 'fn' }>, scope: ReadonlyMap<string, Value>): Value {
  const strings = (k: number): string[] => {
    if (n.args.length !== k) throw new EvalError(`${n.name}() takes ${k} argument${k === 1 ? '' : 's'}`);
    return n.args.map((a) => {
      const v = evaluate(a, scope);
      if (typeof v !== 'string') throw new EvalError(`${n.name}() takes strings, not ${typeName(v)}`);
      return v;
    });
  };
  try {
    switch (n.name) {
      case 'Timestamp': return new Instant(parseTimestamp(strings(1)[0]!));
      case 'CronSpan': {
        const [cron, duration, tz] = strings(3) as [string, string, string];
        const t = scope.get('time');
        const now = t !== undefined && isStruct(t) ? t.now : undefined;
        if (!(now instanceof Instant)) throw new EvalError('CronSpan() needs time.now');
        return inCronSpan(now.ms, cron, duration, tz);
      }
      default: throw new EvalError(`there is no function ${n.name}()`);
    }
  } catch (e) {
    if (e instanceof CronError) throw new EvalError(`${n.name}(): ${e.message}`);
    throw e;
  }
}

/**
 * What is wrong with the functions of `n` whose arguments are literals (a bad timestamp, cron
 * schedule, duration or zone), found without a request: for checking policies when stored.
 */
export function literalProblems(n: Node): string[] {
  const out: string[] = [];
  const walk = (m: Node): void => {
    children(m).forEach(walk);
    if (m.k === 'fn' && m.args.every((x) => x.k === 'lit')) {
      try { callFunction(m, new Map([['time', { now: new Instant(0) }]])); } catch (e) {
        if (!(e instanceof EvalError)) throw e;
        out.push(e.message);
      }
    }
  };
  walk(n);
  return out;
}

function truth(v: Value, what: string): boolean {
  if (typeof v !== 'boolean') throw new EvalError(`${what} needs a bool, not ${typeName(v)}`);
  return v;
}

function binary(op: string, an: Node, bn: Node, scope: ReadonlyMap<string, Value>): Value {
  // Both sides are always evaluated (Turnkey's engine does not short-circuit): an error on either
  // side makes the whole expression an error, e.g. `wallet.id == … || private_key.id == …`.
  if (op === '&&' || op === '||') {
    const a = truth(evaluate(an, scope), op);
    const b = truth(evaluate(bn, scope), op);
    return op === '&&' ? a && b : a || b;
  }
  const a = evaluate(an, scope);
  const b = evaluate(bn, scope);
  switch (op) {
    case '==': return equal(a, b);
    case '!=': return !equal(a, b);
    case 'in':
      if (!isList(b)) throw new EvalError(`'in' needs a list on its right, not ${typeName(b)}`);
      return b.some((x) => equal(a, x));
    default: {
      let x: bigint | number;
      let y: bigint | number;
      if (typeof a === 'bigint' && typeof b === 'bigint') { x = a; y = b; } else if (a instanceof Instant && b instanceof Instant) { x = a.ms; y = b.ms; } else {
        throw new EvalError(`'${op}' compares ints or timestamps, not ${typeName(a)} and ${typeName(b)}`);
      }
      if (op === '<') return x < y;
      if (op === '<=') return x <= y;
      if (op === '>') return x > y;
      return x >= y;
    }
  }
}

function call(n: Extract<Node, { k: 'call' }>, scope: ReadonlyMap<string, Value>): Value {
  const of = evaluate(n.of, scope);
  const arity = (k: number): void => {
    if (n.args.length !== k) throw new EvalError(`${n.name}() takes ${k} argument${k === 1 ? '' : 's'}`);
  };
  if (typeof of === 'string') {
    switch (n.name) {
      case 'count': arity(0); return BigInt(of.length);
      case 'contains': case 'startsWith': case 'endsWith': {
        arity(1);
        const s = evaluate(n.args[0]!, scope);
        if (typeof s !== 'string') throw new EvalError(`${n.name}() of a string takes a string`);
        return n.name === 'contains' ? of.includes(s) : n.name === 'startsWith' ? of.startsWith(s) : of.endsWith(s);
      }
      default: throw new EvalError(`a string has no method ${n.name}()`);
    }
  }
  if (!isList(of)) throw new EvalError(`a ${typeName(of)} has no method ${n.name}()`);
  switch (n.name) {
    case 'count': arity(0); return BigInt(of.length);
    case 'contains': { arity(1); const x = evaluate(n.args[0]!, scope); return of.some((y) => equal(y, x)); }
    case 'all': case 'any': case 'filter': {
      const test = (item: Value): boolean => {
        const inner = new Map(scope);
        inner.set(n.param!, item);
        return truth(evaluate(n.args[0]!, inner), `${n.name}()`);
      };
      if (n.name === 'all') return of.every(test);
      if (n.name === 'any') return of.some(test);
      return of.filter(test);
    }
    default: throw new EvalError(`a list has no method ${n.name}()`);
  }
}

/** Evaluates an expression that must give a bool. */
export function evaluateBool(n: Node, scope: ReadonlyMap<string, Value>): boolean {
  return truth(evaluate(n, scope), 'a policy expression');
}

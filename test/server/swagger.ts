// Turns the swagger 2.0 definitions of the public Turnkey API (src/http/public_api.swagger.json,
// see src/http/ATTRIBUTION.md) into JSON schemas and validates server replies against them.
//
// Strictness: every member a definition marks `required` must be present, every present member
// must have the declared type, enum members must hold one of the listed values, nested records
// are checked recursively. Extra members are allowed (replies.md: kmas replies carry the
// specification's members beside the clients' ones). Swagger int64/uint64 travel as decimal strings
// in grpc-gateway JSON: `type: string` + int64/uint64 must be a decimal string, `type: integer`
// + int64 may be a JSON integer or a decimal string.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction, type ErrorObject } from 'ajv';

const swaggerPath = fileURLToPath(new URL('../../src/http/public_api.swagger.json', import.meta.url));

interface SwaggerSchema {
  type?: string;
  format?: string;
  $ref?: string;
  items?: SwaggerSchema;
  properties?: Record<string, SwaggerSchema>;
  required?: string[];
  enum?: unknown[];
  additionalProperties?: SwaggerSchema | boolean;
  'x-nullable'?: boolean;
}

export const swagger = JSON.parse(readFileSync(swaggerPath, 'utf8')) as {
  swagger: string;
  paths: Record<string, { post?: { responses: Record<string, { schema?: { $ref?: string } }> } }>;
  definitions: Record<string, SwaggerSchema>;
};

const DECIMAL = '^-?[0-9]+$';

/** Converts one swagger schema node into a JSON-schema (draft-07) node. Exported for the self-test. */
export function convert(node: SwaggerSchema): Record<string, unknown> {
  if (node.$ref) {
    const name = node.$ref.replace(/^#\/definitions\//, '');
    return { $ref: `#/definitions/${name}` };
  }
  let out: Record<string, unknown> = {};
  const fmt = node.format;
  if (node.type === 'string' && (fmt === 'int64' || fmt === 'uint64')) {
    out = { type: 'string', pattern: DECIMAL };
  } else if (node.type === 'integer' && (fmt === 'int64' || fmt === 'uint64')) {
    out = { anyOf: [{ type: 'integer' }, { type: 'string', pattern: DECIMAL }] };
  } else if (node.type) {
    out.type = node.type;
  }
  if (node.enum) out.enum = node.enum;
  if (node.items) out.items = convert(node.items);
  if (node.properties) {
    const props: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node.properties)) props[k] = convert(v);
    out.properties = props;
  }
  if (node.required && node.required.length) out.required = node.required;
  if (node.additionalProperties && typeof node.additionalProperties === 'object' && Object.keys(node.additionalProperties).length) {
    out.additionalProperties = convert(node.additionalProperties);
  }
  if (node['x-nullable']) {
    if (typeof out.type === 'string') out.type = [out.type, 'null'];
    if (out.enum) out.enum = [...(out.enum as unknown[]), null];
  }
  return out;
}

const definitions: Record<string, unknown> = {};
for (const [name, def] of Object.entries(swagger.definitions)) definitions[name] = convert(def);

const ajv = new Ajv({ allErrors: true, strict: false });
ajv.addSchema({ $id: 'swagger', definitions }, 'swagger');

const compiled = new Map<string, ValidateFunction>();
function validatorFor(defName: string): ValidateFunction {
  let v = compiled.get(defName);
  if (!v) {
    if (!(defName in definitions)) throw new Error(`no swagger definition ${defName}`);
    v = ajv.compile({ $ref: `swagger#/definitions/${defName}` });
    compiled.set(defName, v);
  }
  return v;
}

function describe(errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}${e.params ? ' ' + JSON.stringify(e.params) : ''}`);
}

/** Errors of `value` against definition `defName` (empty = valid). */
export function validateDefinition(defName: string, value: unknown): string[] {
  const v = validatorFor(defName);
  return v(value) ? [] : describe(v.errors);
}

/** Response definition of a path (`/public/v1/query/whoami` → `v1GetWhoamiResponse`). */
export function responseDefinition(path: string, status = 200): string {
  const op = swagger.paths[path]?.post;
  if (!op) throw new Error(`path ${path} is not in the swagger`);
  const resp = status >= 200 && status < 300 ? op.responses['200'] : op.responses['default'];
  const ref = resp?.schema?.$ref;
  if (!ref) throw new Error(`no response schema for ${path} ${status}`);
  return ref.replace(/^#\/definitions\//, '');
}

/** Validates a reply for `path` with HTTP `status` against its swagger response definition. */
export function validateReply(path: string, status: number, body: unknown): string[] {
  const errs = validateDefinition(responseDefinition(path, status), body);
  if (status >= 300) errs.push(...checkErrorBody(body));
  return errs;
}

/** The error format of wire-compat §2.3 / issue 3: `{code:int, message:string, details:array}`. */
export function checkErrorBody(body: unknown): string[] {
  const errs: string[] = [];
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return ['error body is not a JSON object'];
  const b = body as Record<string, unknown>;
  if (!Number.isInteger(b.code)) errs.push(`code is not an integer: ${JSON.stringify(b.code)}`);
  if (typeof b.message !== 'string' || b.message.length === 0) errs.push('message is not a non-empty string');
  if (!Array.isArray(b.details)) errs.push('details is not an array');
  return errs;
}

/** Throws with every violation listed when `body` does not match. */
export function assertReply(path: string, status: number, body: unknown): void {
  const errs = validateReply(path, status, body);
  if (errs.length) {
    throw new Error(`reply of ${path} (${status}) does not match ${responseDefinition(path, status)}:\n  ${errs.slice(0, 20).join('\n  ')}\nbody: ${JSON.stringify(body).slice(0, 2000)}`);
  }
}

export function assertDefinition(defName: string, value: unknown): void {
  const errs = validateDefinition(defName, value);
  if (errs.length) throw new Error(`value does not match ${defName}:\n  ${errs.slice(0, 20).join('\n  ')}\nvalue: ${JSON.stringify(value).slice(0, 2000)}`);
}

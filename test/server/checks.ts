// Shared assertions on reply shapes (replies.md, wire-compat §2.3–§3.4), used by the component tests.
import { expect } from 'vitest';
import { createHash } from 'node:crypto';
import { assertReply, checkErrorBody } from './swagger.js';
import { GRPC_FOR_HTTP, type RawReply } from './harness.js';

export const QUERY = (op: string) => `/public/v1/query/${op}`;
export const SUBMIT = (op: string) => `/public/v1/submit/${op}`;

export function fingerprintOf(body: string | Uint8Array): string {
  return 'sha256:' + createHash('sha256').update(body).digest('hex');
}

const DECIMAL = /^[0-9]+$/;

function checkTimestamp(ts: any, what: string) {
  expect(ts, `${what} is {seconds, nanos}`).toEqual({ seconds: expect.stringMatching(DECIMAL), nanos: expect.stringMatching(DECIMAL) });
  expect(Number(ts.nanos), `${what}.nanos`).toBeLessThan(1_000_000_000);
  expect(Math.abs(Number(ts.seconds) - Date.now() / 1000), `${what}.seconds is near the current time`).toBeLessThan(86_400);
}

/**
 * The query reply of replies.md: the clients' members (checked against the swagger response
 * definition of the path) plus the specification's `activity` wrapper holding the same data in
 * `activity.result` with type ACTIVITY_TYPE_UNKNOWN_V1 and status COMPLETED.
 */
export function checkQueryReply(op: string, body: any, dataKeys: string[], orgId?: string) {
  assertReply(QUERY(op), 200, body);
  const a = body.activity;
  expect(a, `query ${op}: specification wrapper "activity" (replies.md)`).toBeTypeOf('object');
  expect(a.type).toBe('ACTIVITY_TYPE_UNKNOWN_V1');
  expect(a.status).toBe('ACTIVITY_STATUS_COMPLETED');
  expect(a.id).toBeTypeOf('string');
  expect(a.id.length).toBeGreaterThan(0);
  expect(a.timestampMs).toMatch(DECIMAL);
  if (orgId) expect(a.organizationId).toBe(orgId);
  expect(a.result, `query ${op}: activity.result`).toBeTypeOf('object');
  for (const k of dataKeys) expect(a.result[k], `query ${op}: activity.result.${k} equals the clients' ${k}`).toEqual(body[k]);
}

export interface SubmitShape {
  type: string;
  intentKey: string;
  resultKey: string;
  /** the specification's key where it differs from the clients' (replies.md) */
  specIntentKey?: string;
  specResultKey?: string;
}

/**
 * A completed submit reply (replies.md "Submit replies"): swagger v1ActivityResponse, the
 * clients' intent/result keys, and the specification's nested result.activity {type, intent, result}.
 */
export function checkSubmitReply(op: string, body: any, shape: SubmitShape, orgId?: string, requestBody?: string) {
  assertReply(SUBMIT(op), 200, body);
  const a = body.activity;
  expect(a.status, `submit ${op} status (failure: ${JSON.stringify(a.failure)})`).toBe('ACTIVITY_STATUS_COMPLETED');
  expect(a.type).toBe(shape.type);
  if (orgId) expect(a.organizationId).toBe(orgId);
  expect(a.timestampMs, 'activity.timestampMs (specification: milliseconds string)').toMatch(DECIMAL);
  checkTimestamp(a.createdAt, 'createdAt');
  checkTimestamp(a.updatedAt, 'updatedAt');
  expect(a.votes).toEqual(expect.any(Array));
  expect(a.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
  if (requestBody !== undefined) expect(a.fingerprint).toBe(fingerprintOf(requestBody));
  expect(Object.keys(a.intent), 'activity.intent holds one member under the clients\' key').toEqual([shape.intentKey]);
  expect(a.result[shape.resultKey], `activity.result.${shape.resultKey}`).toBeTypeOf('object');
  const spec = a.result.activity;
  expect(spec, 'activity.result.activity (specification nesting)').toBeTypeOf('object');
  expect(spec.type).toBe(shape.type);
  expect(Object.keys(spec.intent)).toEqual([shape.specIntentKey ?? shape.intentKey]);
  expect(Object.keys(spec.result)).toEqual([shape.specResultKey ?? shape.resultKey]);
  expect(spec.result[shape.specResultKey ?? shape.resultKey]).toEqual(a.result[shape.resultKey]);
  return a;
}

/**
 * An error reply: non-2xx, JSON {code:int, message, details:[]}, the gRPC code wire-compat §2.3
 * pairs with the HTTP status, and the swagger rpcStatus definition.
 */
export function checkError(r: RawReply, statuses: number | number[], what = ''): void {
  const allowed = Array.isArray(statuses) ? statuses : [statuses];
  expect(allowed, `${what}: HTTP status ${r.status}, body ${r.text.slice(0, 300)}`).toContain(r.status);
  expect(r.headers.get('content-type') ?? '', `${what}: content-type`).toMatch(/application\/json/);
  expect(checkErrorBody(r.json), `${what}: error body ${r.text.slice(0, 300)}`).toEqual([]);
  if (GRPC_FOR_HTTP[r.status] !== undefined) expect(r.json.code, `${what}: gRPC code for HTTP ${r.status}`).toBe(GRPC_FOR_HTTP[r.status]);
  expect(r.text, `${what}: no stack trace in the reply`).not.toMatch(/\n\s+at |node:internal|\.ts:\d+|\.js:\d+:\d+/);
}

/** The google.rpc.BadRequest detail with a violation naming `field` (substring match on the field path). */
export function expectFieldViolation(r: RawReply, field: string): void {
  const details = (r.json?.details ?? []) as any[];
  const br = details.find((d) => d?.['@type'] === 'type.googleapis.com/google.rpc.BadRequest');
  expect(br, `google.rpc.BadRequest detail in ${r.text.slice(0, 400)}`).toBeDefined();
  expect(br.fieldViolations).toEqual(expect.any(Array));
  for (const v of br.fieldViolations) {
    expect(v.field).toBeTypeOf('string');
    expect(v.description).toBeTypeOf('string');
  }
  expect(br.fieldViolations.map((v: any) => v.field).join(' '), `a field violation naming ${field}`).toContain(field);
}

/**
 * A submit that no rule allows yet (a non-root user without a policy, a root quorum above one):
 * 200 with the activity stored as ACTIVITY_STATUS_CONSENSUS_NEEDED, no result, the requester's vote.
 */
export function checkAwaitsConsensus(r: RawReply, what = ''): void {
  expect(r.status, `${what}: HTTP status ${r.status}, body ${r.text.slice(0, 300)}`).toBe(200);
  expect(r.json.activity.status, what).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
  expect(r.json.activity.result, what).toEqual({});
  expect(r.json.activity.votes, what).toHaveLength(1);
  expect(r.json.activity.canApprove, what).toBe(true);
}

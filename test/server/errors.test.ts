// Request checks and the error format (issue 3 "Requests", "Errors"; wire-compat §1, §2.1–§2.3):
// stamps, timestamps, envelopes, idempotency, size limits, CORS, health endpoints.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import {
  startTestServer, newP256Key, newSecp256k1Key, newEd25519Key, submitBody, stampFor, base64url, enc, sleep, signBody,
  newestActivityId, allActivities, uniqueName, httpClient, createActivityPoller, type TestServer, type RawKey,
} from './harness.js';
import { checkError, checkSubmitReply, expectFieldViolation, fingerprintOf, QUERY, SUBMIT } from './checks.js';
import { assertReply } from './swagger.js';
import { p256 } from '@noble/curves/nist.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';

let ts: TestServer;
beforeAll(async () => { ts = await startTestServer(); });
afterAll(async () => { await ts?.stop(); });

const tagBody = (name = uniqueName('e'), ms = String(Date.now()), org?: string) =>
  submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', org ?? ts.orgId, { userTagName: name, userIds: [] }, ms);
const whoBody = () => JSON.stringify({ organizationId: ts.orgId });

async function expectNothingStored(fn: () => Promise<void>) {
  const before = await newestActivityId(ts);
  await fn();
  expect(await newestActivityId(ts), 'no activity was stored').toBe(before);
}

describe('idempotency', () => {
  it('an identical resubmission returns the same activity and stores only one', async () => {
    const body = tagBody();
    const a = await ts.raw(SUBMIT('create_user_tag'), body);
    const b = await ts.raw(SUBMIT('create_user_tag'), body);
    const c = await ts.raw(SUBMIT('create_user_tag'), body, { key: ts.rootKey }); // fresh stamp (new random signature), same body
    for (const r of [a, b, c]) expect(r.status, r.text).toBe(200);
    expect(b.json.activity.id).toBe(a.json.activity.id);
    expect(c.json.activity.id).toBe(a.json.activity.id);
    expect(b.json.activity.fingerprint).toBe(fingerprintOf(body));
    expect(b.json.activity.result).toEqual(a.json.activity.result);
    const all = await allActivities(ts);
    expect(all.filter((x) => x.fingerprint === fingerprintOf(body))).toHaveLength(1);
    const tags: any = await ts.sdk.listUserTags();
    expect(tags.userTags.filter((t: any) => t.tagId === a.json.activity.result.createUserTagResult.userTagId)).toHaveLength(1);
  });

  it('a body differing by one byte (timestamp) is a new activity', async () => {
    const name = uniqueName('twice');
    const now = Date.now();
    const a = await ts.raw(SUBMIT('create_private_key_tag'), submitBody('ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG', ts.orgId, { privateKeyTagName: name + 'a', privateKeyIds: [] }, String(now)));
    const b = await ts.raw(SUBMIT('create_private_key_tag'), submitBody('ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG', ts.orgId, { privateKeyTagName: name + 'b', privateKeyIds: [] }, String(now + 1)));
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(a.json.activity.id).not.toBe(b.json.activity.id);
  });
});

describe('stamps (401 Unauthenticated)', () => {
  it('missing X-Stamp', async () => {
    await expectNothingStored(async () => {
      checkError(await ts.raw(SUBMIT('create_user_tag'), tagBody(), { key: undefined }), 401, 'no stamp on submit');
    });
    checkError(await ts.raw(QUERY('whoami'), whoBody(), { key: undefined }), 401, 'no stamp on query');
  });

  it('tampered body (stamp over other bytes) is refused and stores nothing', async () => {
    const body = tagBody();
    const tampered = body.replace('"userIds":[]', '"userIds":[ ]');
    await expectNothingStored(async () => {
      checkError(await ts.raw(SUBMIT('create_user_tag'), tampered, { stampedBody: body }), 401, 'tampered submit');
    });
    checkError(await ts.raw(QUERY('whoami'), whoBody() + ' ', { stampedBody: whoBody() }), 401, 'tampered query (trailing space)');
  });

  it('unknown public key, bad signature, wrong scheme, garbage header', async () => {
    const stranger = newP256Key();
    checkError(await ts.raw(QUERY('whoami'), whoBody(), { key: stranger }), 401, 'unknown key');
    const body = whoBody();
    const wrongSig = stampFor(body, ts.rootKey, { signature: bytesToHex(p256.sign(enc.encode('other'), hexToBytes(ts.rootKey.privateKey), { format: 'der', lowS: false })) });
    checkError(await ts.raw(QUERY('whoami'), body, { stamp: wrongSig }), 401, 'signature over other bytes');
    checkError(await ts.raw(QUERY('whoami'), body, { stamp: stampFor(body, ts.rootKey, { scheme: 'SIGNATURE_SCHEME_TK_API_ED25519' }) }), 401, 'wrong scheme for a P-256 key');
    checkError(await ts.raw(QUERY('whoami'), body, { stamp: stampFor(body, ts.rootKey, { scheme: 'SIGNATURE_SCHEME_NOPE' }) }), [400, 401], 'unknown scheme');
    checkError(await ts.raw(QUERY('whoami'), body, { stamp: stampFor(body, ts.rootKey, { signature: 'zz' }) }), [400, 401], 'non-hex signature');
    for (const junk of ['', '!!!', 'e30', base64url(enc.encode('[1,2]')), base64url(enc.encode('{"publicKey":5}')), 'a'.repeat(5000)]) {
      checkError(await ts.raw(QUERY('whoami'), body, { stamp: junk }), [400, 401], `garbage stamp ${JSON.stringify(junk.slice(0, 20))}`);
    }
  });

  it('accepts a high-S P-256 signature (not normalized, wire-compat §1.1)', async () => {
    const body = whoBody();
    const sig = p256.sign(enc.encode(body), hexToBytes(ts.rootKey.privateKey), { lowS: false, format: 'compact' });
    const r = BigInt('0x' + bytesToHex(sig.slice(0, 32)));
    let s = BigInt('0x' + bytesToHex(sig.slice(32)));
    const n = p256.Point.CURVE().n;
    if (s <= n / 2n) s = n - s; // force high-S
    const der = p256.Signature.fromBytes(hexToBytes(r.toString(16).padStart(64, '0') + s.toString(16).padStart(64, '0')), 'compact').toBytes('der');
    const stamp = stampFor(body, ts.rootKey, { signature: bytesToHex(der) });
    const res = await ts.raw(QUERY('whoami'), body, { stamp });
    expect(res.status, res.text).toBe(200);
    expect(res.json.userId).toBe(ts.rootUserId);
  });

  it('an X-Stamp-Webauthn of no registered passkey, or not of the right form, is a clear 401', async () => {
    const r = await ts.raw(QUERY('whoami'), whoBody(), { key: undefined, headers: { 'X-Stamp-Webauthn': JSON.stringify({ authenticatorData: 'AA', clientDataJson: 'AA', credentialId: 'AA', signature: 'AA' }) } });
    checkError(r, 401, 'webauthn stamp');
    expect(r.json.message).toBe('credential ID could not be found in organization or its parent organization'); // Turnkey's text
    const bad = await ts.raw(QUERY('whoami'), whoBody(), { key: undefined, headers: { 'X-Stamp-Webauthn': '{"credentialId": 5}' } });
    checkError(bad, 401, 'malformed webauthn stamp');
    expect(bad.json.message).toBe('malformed activity stamp'); // Turnkey's text; the log line says what is malformed
  });

  for (const [label, mk, curve] of [
    ['SECP256K1', newSecp256k1Key, 'API_KEY_CURVE_SECP256K1'],
    ['ED25519', newEd25519Key, 'API_KEY_CURVE_ED25519'],
  ] as [string, () => RawKey, string][]) {
    it(`an API key of curve ${curve} stamps with SIGNATURE_SCHEME_TK_API_${label}`, async () => {
      const key = mk();
      const r: any = await ts.sdk.createApiKeys({ userId: ts.rootUserId, apiKeys: [{ apiKeyName: uniqueName(label), publicKey: key.publicKey, curveType: curve }] } as any);
      expect(r.apiKeyIds).toHaveLength(1);
      const got: any = await ts.sdk.getApiKey({ apiKeyId: r.apiKeyIds[0] });
      expect(got.apiKey.credential.type).toBe(`CREDENTIAL_TYPE_API_KEY_${label}`);
      const who = await ts.raw(QUERY('whoami'), whoBody(), { key });
      expect(who.status, who.text).toBe(200);
      expect(who.json.userId).toBe(ts.rootUserId);
      // the same key with the P-256 scheme is refused
      checkError(await ts.raw(QUERY('whoami'), whoBody(), { stamp: stampFor(whoBody(), key, { scheme: 'SIGNATURE_SCHEME_TK_API_P256' }) }), 401, 'scheme/curve mismatch');
    });
  }

  it('a SECP256K1 key also stamps with SIGNATURE_SCHEME_TK_API_SECP256K1_EIP191 (keccak256 of the personal_sign message)', async () => {
    const key = newSecp256k1Key();
    const r: any = await ts.sdk.createApiKeys({ userId: ts.rootUserId, apiKeys: [{ apiKeyName: uniqueName('eip191'), publicKey: key.publicKey, curveType: 'API_KEY_CURVE_SECP256K1' }] } as any);
    expect(r.apiKeyIds).toHaveLength(1);
    const body = whoBody();
    const bytes = enc.encode(body);
    const msg = new Uint8Array([...enc.encode(`\x19Ethereum Signed Message:\n${bytes.length}`), ...bytes]);
    const sig = secp256k1.sign(keccak_256(msg), hexToBytes(key.privateKey), { prehash: false, format: 'der' });
    const stamp = base64url(enc.encode(JSON.stringify({ publicKey: key.publicKey, scheme: 'SIGNATURE_SCHEME_TK_API_SECP256K1_EIP191', signature: bytesToHex(sig) })));
    const who = await ts.raw(QUERY('whoami'), body, { stamp });
    expect(who.status, who.text).toBe(200);
    expect(who.json.userId).toBe(ts.rootUserId);
    // the plain SHA-256 signature under the EIP-191 scheme name is refused
    const wrong = base64url(enc.encode(JSON.stringify({ publicKey: key.publicKey, scheme: 'SIGNATURE_SCHEME_TK_API_SECP256K1_EIP191', signature: signBody(bytes, key) })));
    checkError(await ts.raw(QUERY('whoami'), body, { stamp: wrong }), 401, 'sha256 signature under the EIP-191 scheme');
  });

  it('an expired API key (expirationSeconds "1") is refused with 401', async () => {
    const key = newP256Key();
    const r: any = await ts.sdk.createApiKeys({ userId: ts.rootUserId, apiKeys: [{ apiKeyName: uniqueName('short'), publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '1' }] } as any);
    expect(r.apiKeyIds).toHaveLength(1);
    await sleep(2100);
    const who = await ts.raw(QUERY('whoami'), whoBody(), { key });
    checkError(who, 401, 'expired key');
    await expectNothingStored(async () => {
      checkError(await ts.raw(SUBMIT('create_user_tag'), tagBody(), { key }), 401, 'expired key submit');
    });
    // the sdk-server client sees TurnkeyRequestError code 16
    await expect(httpClient(ts.url, key).getWhoami({ organizationId: ts.orgId })).rejects.toMatchObject({ code: 16 });
  });
});

describe('organizations', () => {
  it('another organization\'s id is refused (401/403/404), nothing stored', async () => {
    const other = await startTestServer();
    try {
      for (const orgId of [other.orgId, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
        checkError(await ts.raw(QUERY('whoami'), JSON.stringify({ organizationId: orgId })), [400, 401, 403, 404], `whoami in org ${orgId}`);
        checkError(await ts.raw(QUERY('list_users'), JSON.stringify({ organizationId: orgId })), [400, 401, 403, 404], `list_users in org ${orgId}`);
        await expectNothingStored(async () => {
          checkError(await ts.raw(SUBMIT('create_user_tag'), tagBody(uniqueName('x'), String(Date.now()), orgId)), [400, 401, 403, 404], `submit in org ${orgId}`);
        });
      }
      // the other server's root key is unknown here, with its own org id
      checkError(await ts.raw(QUERY('whoami'), JSON.stringify({ organizationId: other.orgId }), { key: other.rootKey }), [401, 403, 404], 'foreign key + foreign org');
      checkError(await ts.raw(QUERY('whoami'), whoBody(), { key: other.rootKey }), 401, 'foreign key in our org');
    } finally {
      await other.stop();
    }
  });

  it('a missing organizationId is a 400 with a field violation', async () => {
    const r = await ts.raw(QUERY('list_users'), JSON.stringify({}));
    checkError(r, 400, 'no organizationId');
    expectFieldViolation(r, 'organizationId');
    const s = await ts.raw(SUBMIT('create_user_tag'), JSON.stringify({ parameters: { userTagName: uniqueName('noorg'), userIds: [] }, timestampMs: String(Date.now()), type: 'ACTIVITY_TYPE_CREATE_USER_TAG' }));
    checkError(s, 400, 'submit without organizationId');
    expectFieldViolation(s, 'organizationId');
    // an empty one is as good as none
    for (const op of ['whoami', 'list_users']) {
      const e = await ts.raw(QUERY(op), JSON.stringify({ organizationId: '' }));
      checkError(e, 400, `${op} with organizationId ""`);
      expectFieldViolation(e, 'organizationId');
    }
    await expectNothingStored(async () => {
      const es = await ts.raw(SUBMIT('create_user_tag'), JSON.stringify({ parameters: { userTagName: uniqueName('emptyorg'), userIds: [] }, organizationId: '', timestampMs: String(Date.now()), type: 'ACTIVITY_TYPE_CREATE_USER_TAG' }));
      checkError(es, 400, 'submit with organizationId ""');
      expectFieldViolation(es, 'organizationId');
    });
  });
});

describe('timestamps', () => {
  it('a stale timestampMs (1 hour old) is refused, nothing stored', async () => {
    await expectNothingStored(async () => {
      const r = await ts.raw(SUBMIT('create_user_tag'), tagBody(uniqueName('old'), String(Date.now() - 3_600_000)));
      checkError(r, [400, 401], 'stale timestamp');
      expect(r.json.message.toLowerCase()).toMatch(/timestamp/);
    });
  });

  it('a timestampMs far in the future, non-numeric or missing is refused', async () => {
    await expectNothingStored(async () => {
      checkError(await ts.raw(SUBMIT('create_user_tag'), tagBody(uniqueName('fut'), String(Date.now() + 3_600_000))), [400, 401], 'future timestamp');
      const r = await ts.raw(SUBMIT('create_user_tag'), tagBody(uniqueName('nan'), 'yesterday'));
      checkError(r, 400, 'non-numeric timestamp');
      expectFieldViolation(r, 'timestampMs');
      const noTs = JSON.stringify({ parameters: { userTagName: uniqueName('nots'), userIds: [] }, organizationId: ts.orgId, type: 'ACTIVITY_TYPE_CREATE_USER_TAG' });
      const r2 = await ts.raw(SUBMIT('create_user_tag'), noTs);
      checkError(r2, 400, 'missing timestamp');
      expectFieldViolation(r2, 'timestampMs');
      const numTs = JSON.stringify({ parameters: { userTagName: uniqueName('num'), userIds: [] }, organizationId: ts.orgId, timestampMs: Date.now(), type: 'ACTIVITY_TYPE_CREATE_USER_TAG' });
      const r3 = await ts.raw(SUBMIT('create_user_tag'), numTs);
      expect([200, 400], r3.text).toContain(r3.status);
      if (r3.status === 200) throw new Error('a JSON number timestampMs was accepted and stored, the envelope says string');
    });
  });

  it('a timestampMs a few seconds old is accepted', async () => {
    const r = await ts.raw(SUBMIT('create_user_tag'), tagBody(uniqueName('recent'), String(Date.now() - 5_000)));
    expect(r.status, r.text).toBe(200);
  });
});

describe('envelope', () => {
  it('wrong type for the path is 400 with a field violation on type, nothing stored', async () => {
    await expectNothingStored(async () => {
      const body = submitBody('ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG', ts.orgId, { privateKeyTagName: uniqueName('w'), privateKeyIds: [] });
      const r = await ts.raw(SUBMIT('create_user_tag'), body);
      checkError(r, 400, 'wrong type');
      expectFieldViolation(r, 'type');
      for (const type of ['ACTIVITY_TYPE_NOPE', '', 'activity_type_create_user_tag']) {
        checkError(await ts.raw(SUBMIT('create_user_tag'), submitBody(type, ts.orgId, { userTagName: uniqueName('w'), userIds: [] })), 400, `type ${type}`);
      }
    });
  });

  it('unknown keys inside parameters (generateAppProofs) are ignored', async () => {
    const body = submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: uniqueName('x'), userIds: [], generateAppProofs: true, somethingElse: { a: 1 } });
    const r = await ts.raw(SUBMIT('create_user_tag'), body);
    expect(r.status, r.text).toBe(200);
    checkSubmitReply('create_user_tag', r.json, { type: 'ACTIVITY_TYPE_CREATE_USER_TAG', intentKey: 'createUserTagIntent', resultKey: 'createUserTagResult' }, ts.orgId, body);
  });

  it('missing or non-object parameters is 400 with a field violation', async () => {
    await expectNothingStored(async () => {
      for (const parameters of [undefined, null, 'x', [1], 5]) {
        const body = JSON.stringify({ parameters, organizationId: ts.orgId, timestampMs: String(Date.now()), type: 'ACTIVITY_TYPE_CREATE_USER_TAG' });
        const r = await ts.raw(SUBMIT('create_user_tag'), body);
        checkError(r, 400, `parameters ${JSON.stringify(parameters)}`);
        expectFieldViolation(r, 'parameters');
      }
    });
  });

  it('parameter validation: wrong field types give BadRequest fieldViolations naming the field', async () => {
    await expectNothingStored(async () => {
      const r1 = await ts.raw(SUBMIT('create_user_tag'), submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: 42, userIds: [] }));
      checkError(r1, 400, 'userTagName number');
      expectFieldViolation(r1, 'userTagName');
      const r2 = await ts.raw(SUBMIT('create_user_tag'), submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: 'x', userIds: 'nope' }));
      checkError(r2, 400, 'userIds string');
      expectFieldViolation(r2, 'userIds');
      const r3 = await ts.raw(SUBMIT('create_api_keys'), submitBody('ACTIVITY_TYPE_CREATE_API_KEYS_V2', ts.orgId, { userId: ts.rootUserId, apiKeys: [{ apiKeyName: 'k', publicKey: 'zz', curveType: 'API_KEY_CURVE_P256' }] }));
      checkError(r3, 400, 'bad public key');
      expectFieldViolation(r3, 'publicKey');
      const r4 = await ts.raw(SUBMIT('create_api_keys'), submitBody('ACTIVITY_TYPE_CREATE_API_KEYS_V2', ts.orgId, { userId: ts.rootUserId, apiKeys: [{ apiKeyName: 'k', publicKey: newP256Key().publicKey, curveType: 'API_KEY_CURVE_RSA' }] }));
      checkError(r4, 400, 'bad curveType');
      expectFieldViolation(r4, 'curveType');
    });
  });
});

describe('a FAILED activity', () => {
  it('an accepted activity whose operation fails is stored FAILED with failure {code,message,details}; refused ones store nothing', async () => {
    // Which semantic failures are refused up front and which are accepted-then-failed is the
    // server's choice; at least one of these must be the latter.
    const unknownUser = '00000000-0000-4000-8000-0000000000aa';
    const dupName = uniqueName('dup');
    await ts.sdk.createUserTag({ userTagName: dupName, userIds: [] });
    const candidates: [string, string, unknown][] = [
      ['create_user_tag', 'ACTIVITY_TYPE_CREATE_USER_TAG', { userTagName: dupName, userIds: [] }],
      ['update_user', 'ACTIVITY_TYPE_UPDATE_USER', { userId: unknownUser, userName: 'ghost' }],
      ['delete_users', 'ACTIVITY_TYPE_DELETE_USERS', { userIds: [unknownUser] }],
      ['create_user_tag', 'ACTIVITY_TYPE_CREATE_USER_TAG', { userTagName: uniqueName('ghosts'), userIds: [unknownUser] }],
      ['delete_api_keys', 'ACTIVITY_TYPE_DELETE_API_KEYS', { userId: ts.rootUserId, apiKeyIds: ['00000000-0000-4000-8000-0000000000bb'] }],
      ['create_private_key_tag', 'ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG', { privateKeyTagName: uniqueName('pk'), privateKeyIds: ['00000000-0000-4000-8000-0000000000cc'] }],
    ];
    let failed = 0;
    const seen: string[] = [];
    for (const [op, type, params] of candidates) {
      const before = await newestActivityId(ts);
      const body = submitBody(type, ts.orgId, params);
      const r = await ts.raw(SUBMIT(op), body);
      seen.push(`${op}: ${r.status} ${r.json?.activity?.status ?? r.json?.message}`);
      if (r.status === 200) {
        assertReply(SUBMIT(op), 200, r.json);
        const a = r.json.activity;
        expect(a.status, `${op} ${JSON.stringify(params)} must not succeed`).toBe('ACTIVITY_STATUS_FAILED');
        expect(a.failure, `${op}: failure`).toMatchObject({ code: expect.any(Number), message: expect.any(String), details: expect.any(Array) });
        expect(a.failure.code).not.toBe(0);
        expect(a.fingerprint).toBe(fingerprintOf(body));
        const clientKeys = Object.keys(a.result).filter((k) => k !== 'activity');
        expect(clientKeys, `${op}: a FAILED activity has an empty result`).toEqual([]);
        const stored: any = await ts.sdk.getActivity({ activityId: a.id });
        expect(stored.activity.status).toBe('ACTIVITY_STATUS_FAILED');
        expect(stored.activity.failure).toEqual(a.failure);
        const listed: any = await ts.sdk.getActivities({ filterByStatus: ['ACTIVITY_STATUS_FAILED'], paginationOptions: { limit: '100' } } as any);
        expect(listed.activities.map((x: any) => x.id)).toContain(a.id);
        // sdk-server returns a FAILED activity without throwing; createActivityPoller would throw
        failed++;
      } else {
        checkError(r, [400, 403, 404, 409], `${op} refused`);
        expect(await newestActivityId(ts), `${op} refused before acceptance stores nothing`).toBe(before);
      }
    }
    expect(failed, `no candidate produced a FAILED activity: ${seen.join('; ')}`).toBeGreaterThan(0);

    // How the real clients see a FAILED activity (wire-compat §2.4): sdk-server's command()
    // returns {activity} without throwing; @turnkey/http's createActivityPoller throws TurnkeyActivityError.
    const [op, type, params] = candidates[seen.findIndex((x) => x.includes('ACTIVITY_STATUS_FAILED'))]!;
    const viaSdk: any = await (ts.sdk as any).command(SUBMIT(op), { parameters: params, organizationId: ts.orgId, timestampMs: String(Date.now()), type }, 'unusedResult');
    expect(viaSdk.activity.status).toBe('ACTIVITY_STATUS_FAILED');
    expect(viaSdk.activity.failure.message).toBeTypeOf('string');
    const poll = createActivityPoller({ client: ts.http, requestFn: (input: any) => (ts.http as any).request(SUBMIT(op), input) });
    await expect(poll({ type, timestampMs: String(Date.now() + 1), organizationId: ts.orgId, parameters: params } as any))
      .rejects.toMatchObject({ name: 'TurnkeyActivityError', activityStatus: 'ACTIVITY_STATUS_FAILED' });
  });
});

describe('transport', () => {
  it('unknown path is 404 NotFound', async () => {
    for (const p of ['/public/v1/query/nope', '/public/v1/submit/nope', '/public/v2/query/whoami', '/nope', '/public/v1/query/', '/public/v1/submit/sign_raw_payloadz']) {
      checkError(await ts.raw(p, whoBody()), 404, `POST ${p}`);
    }
  });

  it('wrong method is refused (405/404) with the JSON error format, never a redirect', async () => {
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
      const r = await ts.raw(QUERY('whoami'), method === 'GET' ? undefined : whoBody(), { method });
      checkError(r, [404, 405], `${method} whoami`);
    }
  });

  it('malformed JSON is 400 InvalidArgument (stamp valid over those bytes), nothing stored', async () => {
    await expectNothingStored(async () => {
      for (const body of ['{', '{"organizationId":', 'null', '[]', '"x"', '12', 'undefined', '{"a":1}{"b":2}', '\u0000', '']) {
        const r = await ts.raw(SUBMIT('create_user_tag'), body);
        checkError(r, [400, 401], `submit body ${JSON.stringify(body)}`);
        if (r.status === 401 && body !== '') throw new Error(`body ${JSON.stringify(body)} with a valid stamp was answered 401, expected 400 (malformed JSON)`);
      }
      checkError(await ts.raw(QUERY('whoami'), '{"organizationId":"' + ts.orgId), 400, 'truncated query JSON');
    });
  });

  it('a body that is not valid UTF-8 is 400', async () => {
    const bytes = new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]);
    checkError(await ts.raw(QUERY('whoami'), bytes), 400, 'invalid UTF-8');
  });

  it('oversized body (> 1 MiB) is refused with a clear JSON error, nothing stored', async () => {
    await expectNothingStored(async () => {
      const big = submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: 'x'.repeat(1_100_000), userIds: [] });
      const r = await ts.raw(SUBMIT('create_user_tag'), big);
      checkError(r, [413, 400], 'oversized body');
      expect(r.json.message.toLowerCase()).toMatch(/large|size|limit|big/);
    });
    // the server keeps serving
    expect((await ts.raw(QUERY('whoami'), whoBody())).status).toBe(200);
  });

  it('a body just under the limit is not refused for its size', async () => {
    const body = JSON.stringify({ organizationId: ts.orgId, pad: 'x'.repeat(1_000_000) });
    const r = await ts.raw(QUERY('whoami'), body);
    expect(r.status, r.text.slice(0, 300)).toBe(200);
  });

  it('a wrong Content-Type is answered with the JSON error format (or accepted), never a 500', async () => {
    const r = await ts.raw(QUERY('whoami'), whoBody(), { headers: { 'Content-Type': 'text/plain' } });
    if (r.status !== 200) checkError(r, [400, 415], 'text/plain');
  });

  it('CORS preflight names the stamp headers; replies carry Access-Control-Allow-Origin', async () => {
    const pre = await fetch(ts.url + QUERY('whoami'), {
      method: 'OPTIONS',
      headers: { Origin: 'https://app.example.com', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type,x-stamp,x-client-version' },
    });
    expect([200, 204]).toContain(pre.status);
    expect(pre.headers.get('access-control-allow-origin')).toMatch(/^(\*|https:\/\/app\.example\.com)$/);
    expect((pre.headers.get('access-control-allow-methods') ?? '').toUpperCase()).toContain('POST');
    const allowed = (pre.headers.get('access-control-allow-headers') ?? '').toLowerCase();
    for (const h of ['content-type', 'x-stamp', 'x-stamp-webauthn', 'x-client-version']) expect(allowed).toContain(h);
    const r = await ts.raw(QUERY('whoami'), whoBody(), { headers: { Origin: 'https://app.example.com' } });
    expect(r.headers.get('access-control-allow-origin')).toMatch(/^(\*|https:\/\/app\.example\.com)$/);
    const e = await ts.raw(QUERY('whoami'), whoBody(), { key: undefined, headers: { Origin: 'https://app.example.com' } });
    expect(e.status).toBe(401);
    expect(e.headers.get('access-control-allow-origin'), 'CORS header also on errors').toMatch(/^(\*|https:\/\/app\.example\.com)$/);
  });

  it('GET /healthz and /readyz answer 200 without a stamp', async () => {
    for (const p of ['/healthz', '/readyz']) {
      const r = await fetch(ts.url + p);
      expect(r.status, p).toBe(200);
    }
  });
});

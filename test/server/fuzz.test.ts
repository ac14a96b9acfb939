// Property-based fuzzing (fast-check) of bodies and headers against the real server:
// never a 5xx, every non-2xx reply is the JSON error format {code, message, details}, a refused
// request stores nothing, and the server keeps serving. Run counts are bounded (well under a minute).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import fc from 'fast-check';
import { startTestServer, submitBody, stampFor, base64url, enc, newP256Key, newestActivityId, allActivities, type TestServer, type RawReply } from './harness.js';
import { checkErrorBody, validateReply, swagger } from './swagger.js';
import { QUERY, SUBMIT } from './checks.js';

let ts: TestServer;
let activityCountAtStart = 0;
let accepted = 0; // submits the fuzzer legitimately got accepted (200), counted to check the total at the end

beforeAll(async () => {
  ts = await startTestServer();
  await ts.sdk.createUserTag({ userTagName: 'fuzz-seed', userIds: [] });
  activityCountAtStart = (await allActivities(ts)).length;
});
afterAll(async () => { await ts?.stop(); });

const QUERY_OPS = ['whoami', 'get_activity', 'list_activities', 'get_organization', 'get_organization_configs', 'list_users', 'get_user', 'get_api_key', 'get_api_keys', 'list_user_tags', 'list_private_key_tags',
  'list_suborgs', 'list_webhook_endpoints', 'get_authenticator', 'get_authenticators', 'get_oauth_providers', 'list_verified_suborgs',
  'get_ip_allowlist', 'get_smart_contract_interface', 'list_smart_contract_interfaces', 'list_secrets'];
const SUBMIT_OPS = ['create_users', 'delete_users', 'update_user', 'create_api_keys', 'delete_api_keys', 'create_user_tag', 'update_user_tag', 'delete_user_tags', 'create_private_key_tag', 'update_private_key_tag', 'delete_private_key_tags', 'set_organization_feature', 'remove_organization_feature',
  'create_sub_organization', 'delete_sub_organization', 'create_webhook_endpoint', 'update_webhook_endpoint', 'delete_webhook_endpoint', 'create_read_write_session', 'update_root_quorum', 'create_authenticators', 'delete_authenticators', 'update_organization_name', 'delete_wallet_accounts',
  'create_oauth_providers', 'delete_oauth_providers', 'oauth', 'oauth_login', 'stamp_login', 'email_auth', 'init_otp_auth', 'otp_auth', 'init_user_email_recovery', 'recover_user',
  'init_otp', 'verify_otp', 'otp_login', 'set_ip_allowlist', 'remove_ip_allowlist', 'create_smart_contract_interface', 'delete_smart_contract_interface',
  'init_import_secrets', 'import_secrets', 'export_secrets', 'create_api_only_users', 'create_read_only_session', 'create_invitations', 'delete_invitation'];
const PATHS = [...QUERY_OPS.map(QUERY), ...SUBMIT_OPS.map(SUBMIT)];

/** The invariants every reply must satisfy. */
function checkReply(r: RawReply, path: string, what: string) {
  if (r.status >= 500) throw new Error(`${what}: ${path} answered ${r.status}: ${r.text.slice(0, 300)}`);
  if (r.status >= 300) {
    const errs = checkErrorBody(r.json);
    if (errs.length) throw new Error(`${what}: ${path} ${r.status} is not {code,message,details}: ${errs.join('; ')} — ${r.text.slice(0, 300)}`);
    if (/\n\s+at |node:internal/.test(r.text)) throw new Error(`${what}: stack trace in reply: ${r.text.slice(0, 300)}`);
  } else if (path in swagger.paths) {
    const errs = validateReply(path, r.status, r.json);
    if (errs.length) throw new Error(`${what}: ${path} 2xx reply does not match the swagger: ${errs.slice(0, 5).join('; ')}`);
  }
}

async function send(path: string, body: string | Uint8Array, opts: Parameters<TestServer['raw']>[2], what: string) {
  const before = path.includes('/submit/') ? await newestActivityId(ts) : undefined;
  const r = await ts.raw(path, body, opts);
  checkReply(r, path, what);
  if (path.includes('/submit/')) {
    const after = await newestActivityId(ts);
    if (r.status === 200) {
      accepted += after === before ? 0 : 1;
    } else if (after !== before) {
      throw new Error(`${what}: refused submit (${r.status}) stored an activity: ${typeof body === 'string' ? body.slice(0, 300) : '<bytes>'}`);
    }
  }
  return r;
}

const RUNS = 120;
const pathArb = fc.oneof(fc.constantFrom(...PATHS), fc.constantFrom('/public/v1/query/x', '/public/v1/submit/', '/public/v1//submit/whoami', '/public/v1/submit/create_user_tag/extra', '/%00', '/public/v1/query/whoami?x=1'));

/** Raw JSON literals JSON.stringify cannot produce: huge numbers, deep nesting, odd escapes. */
const oddLiteral = fc.constantFrom(
  '1e999', '-1e999', '123456789012345678901234567890', '-0', '0.0000000000000000000001', '9007199254740993',
  '"\\u0000"', '"\\ud800"', '"' + 'é'.repeat(50) + '"', '[' .repeat(200) + ']'.repeat(200), '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}',
  'true', 'null', '""', '[]', '{}', '"' + 'a'.repeat(70_000) + '"',
);

describe('fuzzing the request path', () => {
  it('random JSON bodies with a valid stamp on every path', async () => {
    await fc.assert(fc.asyncProperty(pathArb, fc.json({ maxDepth: 4 }), async (path, body) => {
      await send(path, body, {}, 'random JSON');
    }), { numRuns: RUNS });
  });

  it('random bytes with a valid stamp', async () => {
    await fc.assert(fc.asyncProperty(pathArb, fc.uint8Array({ maxLength: 300 }), async (path, bytes) => {
      await send(path, bytes, {}, 'random bytes');
    }), { numRuns: RUNS });
  });

  it('mutated valid submits (wrong types, huge numbers, missing/extra keys), validly stamped', async () => {
    const fields = ['parameters', 'organizationId', 'timestampMs', 'type', 'parameters.userTagName', 'parameters.userIds', 'parameters.userIds[0]'];
    await fc.assert(fc.asyncProperty(
      fc.constantFrom(...fields), fc.oneof(fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v) ?? 'null'), oddLiteral), fc.boolean(), fc.constantFrom(...SUBMIT_OPS),
      async (field, literal, drop, op) => {
        const ts0 = String(Date.now());
        const placeholders: Record<string, string> = {
          parameters: `{"userTagName":"fz","userIds":[]}`,
          'parameters.userTagName': `"fz-${ts0}"`, 'parameters.userIds': '[]', 'parameters.userIds[0]': '',
          organizationId: JSON.stringify(ts.orgId), timestampMs: JSON.stringify(ts0), type: '"ACTIVITY_TYPE_CREATE_USER_TAG"',
        };
        const v = (f: string) => (f === field ? literal : placeholders[f]);
        const ids = field === 'parameters.userIds[0]' ? `[${literal}]` : v('parameters.userIds');
        const params = field === 'parameters' ? literal : `{"userTagName":${v('parameters.userTagName')},"userIds":${ids}}`;
        const members = [`"parameters":${params}`, `"organizationId":${v('organizationId')}`, `"timestampMs":${v('timestampMs')}`, `"type":${v('type')}`];
        const top = field.includes('.') || field.includes('[') ? 'parameters' : field;
        const kept = drop ? members.filter((m) => !m.startsWith(`"${top}"`)) : members;
        await send(SUBMIT(op), `{${kept.join(',')}}`, {}, `mutated ${field}${drop ? ' (dropped)' : ''}`);
      },
    ), { numRuns: RUNS });
  });

  it('bogus stamps and random headers never get past authentication', async () => {
    const stampArb = fc.oneof(
      fc.string({ maxLength: 200 }).filter((s) => /^[\x20-\x7e]*$/.test(s)),
      fc.base64String({ maxLength: 200 }),
      fc.jsonValue({ maxDepth: 2 }).map((v) => base64url(enc.encode(JSON.stringify(v) ?? 'null'))),
      fc.record({
        publicKey: fc.oneof(fc.constant(ts.rootKey.publicKey), fc.string({ maxLength: 70 }), fc.integer(), fc.constant(null)),
        scheme: fc.oneof(fc.constantFrom('SIGNATURE_SCHEME_TK_API_P256', 'SIGNATURE_SCHEME_TK_API_SECP256K1', 'SIGNATURE_SCHEME_TK_API_SECP256K1_EIP191', 'SIGNATURE_SCHEME_TK_API_ED25519'), fc.string({ maxLength: 20 })),
        signature: fc.oneof(fc.stringMatching(/^[0-9a-f]{0,160}$/), fc.constant('30' + '00'.repeat(70)), fc.integer(), fc.constant([])),
      }).map((o) => base64url(enc.encode(JSON.stringify(o)))),
    );
    const headerArb = fc.dictionary(
      fc.oneof(fc.stringMatching(/^x-fuzz-[a-z]{1,8}$/), fc.constantFrom('x-stamp-webauthn', 'x-client-version', 'accept', 'origin', 'content-type')),
      fc.string({ maxLength: 100 }).filter((s) => /^[\x20-\x7e]*$/.test(s) && s.trim() === s),
      { maxKeys: 4 },
    );
    await fc.assert(fc.asyncProperty(fc.constantFrom(...PATHS), stampArb, headerArb, async (path, stamp, headers) => {
      const body = path.includes('/submit/')
        ? submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: 'never-' + Math.random(), userIds: [] })
        : JSON.stringify({ organizationId: ts.orgId });
      const r = await send(path, body, { stamp, headers }, 'bogus stamp');
      if (r.status < 400) throw new Error(`a bogus stamp was accepted on ${path}: ${stamp}`);
    }), { numRuns: RUNS });
  });

  it('valid stamps by an unknown key or over other bytes are always refused', async () => {
    const stranger = newP256Key();
    await fc.assert(fc.asyncProperty(fc.constantFrom(...PATHS), fc.boolean(), fc.string({ minLength: 1, maxLength: 20 }), async (path, useStranger, suffix) => {
      const body = submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: 'no-' + suffix, userIds: [] });
      const stamp = useStranger ? stampFor(body, stranger) : stampFor(body + suffix, ts.rootKey);
      const r = await send(path, body, { stamp }, useStranger ? 'unknown key' : 'stamp over other bytes');
      if (r.status !== 401) throw new Error(`expected 401, got ${r.status} on ${path}`);
    }), { numRuns: RUNS });
  });

  // Deep fuzz: well-formed envelopes (right org, type and a fresh timestamp) whose fields are
  // drawn from the operation's real field names with random values, so the requests get past
  // authentication and envelope checks into each operation's validation and execution.
  const SUBMIT_TYPES: Record<string, string> = {
    create_users: 'ACTIVITY_TYPE_CREATE_USERS_V4', delete_users: 'ACTIVITY_TYPE_DELETE_USERS', update_user: 'ACTIVITY_TYPE_UPDATE_USER',
    create_api_keys: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2', delete_api_keys: 'ACTIVITY_TYPE_DELETE_API_KEYS', create_user_tag: 'ACTIVITY_TYPE_CREATE_USER_TAG',
    update_user_tag: 'ACTIVITY_TYPE_UPDATE_USER_TAG', delete_user_tags: 'ACTIVITY_TYPE_DELETE_USER_TAGS', create_private_key_tag: 'ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG',
    update_private_key_tag: 'ACTIVITY_TYPE_UPDATE_PRIVATE_KEY_TAG', delete_private_key_tags: 'ACTIVITY_TYPE_DELETE_PRIVATE_KEY_TAGS',
    set_organization_feature: 'ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE', remove_organization_feature: 'ACTIVITY_TYPE_REMOVE_ORGANIZATION_FEATURE',
    create_sub_organization: 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8', delete_sub_organization: 'ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION',
    create_webhook_endpoint: 'ACTIVITY_TYPE_CREATE_WEBHOOK_ENDPOINT', update_webhook_endpoint: 'ACTIVITY_TYPE_UPDATE_WEBHOOK_ENDPOINT',
    delete_webhook_endpoint: 'ACTIVITY_TYPE_DELETE_WEBHOOK_ENDPOINT', create_read_write_session: 'ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2',
    update_root_quorum: 'ACTIVITY_TYPE_UPDATE_ROOT_QUORUM',
    create_authenticators: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2', delete_authenticators: 'ACTIVITY_TYPE_DELETE_AUTHENTICATORS',
    update_organization_name: 'ACTIVITY_TYPE_UPDATE_ORGANIZATION_NAME', delete_wallet_accounts: 'ACTIVITY_TYPE_DELETE_WALLET_ACCOUNTS',
    create_oauth_providers: 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2', delete_oauth_providers: 'ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS',
    oauth: 'ACTIVITY_TYPE_OAUTH', oauth_login: 'ACTIVITY_TYPE_OAUTH_LOGIN', stamp_login: 'ACTIVITY_TYPE_STAMP_LOGIN',
    email_auth: 'ACTIVITY_TYPE_EMAIL_AUTH_V3', init_otp_auth: 'ACTIVITY_TYPE_INIT_OTP_AUTH_V3', otp_auth: 'ACTIVITY_TYPE_OTP_AUTH',
    init_user_email_recovery: 'ACTIVITY_TYPE_INIT_USER_EMAIL_RECOVERY_V2', recover_user: 'ACTIVITY_TYPE_RECOVER_USER',
    init_otp: 'ACTIVITY_TYPE_INIT_OTP_V3', verify_otp: 'ACTIVITY_TYPE_VERIFY_OTP_V2', otp_login: 'ACTIVITY_TYPE_OTP_LOGIN_V2',
    set_ip_allowlist: 'ACTIVITY_TYPE_SET_IP_ALLOWLIST', remove_ip_allowlist: 'ACTIVITY_TYPE_REMOVE_IP_ALLOWLIST',
    create_smart_contract_interface: 'ACTIVITY_TYPE_CREATE_SMART_CONTRACT_INTERFACE', delete_smart_contract_interface: 'ACTIVITY_TYPE_DELETE_SMART_CONTRACT_INTERFACE',
    init_import_secrets: 'ACTIVITY_TYPE_INIT_IMPORT_SECRETS', import_secrets: 'ACTIVITY_TYPE_IMPORT_SECRETS', export_secrets: 'ACTIVITY_TYPE_EXPORT_SECRETS',
    create_api_only_users: 'ACTIVITY_TYPE_CREATE_API_ONLY_USERS', create_read_only_session: 'ACTIVITY_TYPE_CREATE_READ_ONLY_SESSION',
    create_invitations: 'ACTIVITY_TYPE_CREATE_INVITATIONS', delete_invitation: 'ACTIVITY_TYPE_DELETE_INVITATION',
  };
  const FIELD_NAMES = ['users', 'userIds', 'userId', 'userName', 'userEmail', 'userPhoneNumber', 'userTagIds', 'userTags', 'apiKeys', 'apiKeyIds', 'apiKeyName',
    'publicKey', 'curveType', 'expirationSeconds', 'authenticators', 'oauthProviders', 'userTagName', 'userTagId', 'newUserTagName', 'addUserIds', 'removeUserIds',
    'privateKeyTagName', 'privateKeyIds', 'privateKeyTagId', 'newPrivateKeyTagName', 'addPrivateKeyIds', 'removePrivateKeyIds', 'privateKeyTagIds', 'name', 'value',
    'activityId', 'paginationOptions', 'limit', 'before', 'after', 'filterByStatus', 'filterByType',
    'subOrganizationName', 'rootUsers', 'rootQuorumThreshold', 'wallet', 'walletName', 'accounts', 'mnemonicLength', 'disableEmailAuth',
    'verificationToken', 'deleteWithoutExport', 'url', 'subscriptions', 'eventType', 'filtersJson', 'isActive', 'endpointId',
    'targetPublicKey', 'invalidateExisting', 'filterType', 'filterValue', 'threshold',
    'authenticatorIds', 'authenticatorId', 'authenticatorName', 'challenge', 'attestation', 'credentialId', 'clientDataJson', 'attestationObject', 'transports', 'organizationName', 'walletAccountIds',
    'providerName', 'oidcToken', 'oidcClaims', 'iss', 'sub', 'aud', 'providerIds', 'email', 'emailCustomization', 'appName', 'magicLinkTemplate',
    'otpType', 'contact', 'otpLength', 'alphanumeric', 'otpId', 'otpCode', 'authenticator',
    'encryptedOtpBundle', 'verificationToken', 'clientSignature', 'scheme', 'message', 'signature',
    'rules', 'cidr', 'label', 'enabled', 'onEvaluationError', 'smartContractAddress', 'smartContractInterface', 'type', 'notes', 'smartContractInterfaceId',
    'secrets', 'secretPayload', 'encryptionSuite', 'numSecrets', 'staticProperties', 'secretId', 'key', 'apiOnlyUsers',
    'invitations', 'receiverUserName', 'receiverUserEmail', 'receiverUserTags', 'accessType', 'senderUserId', 'invitationId'];
  const plausible = fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    fc.constantFrom('FEATURE_NAME_WEBHOOK', 'FEATURE_NAME_EMAIL_AUTH', 'API_KEY_CURVE_P256', 'API_KEY_CURVE_ED25519', 'ACTIVITY_STATUS_COMPLETED', 'ACTIVITY_TYPE_CREATE_USER_TAG',
      '00000000-0000-4000-8000-000000000000', 'http://127.0.0.1:9/x', 'ACTIVITY_UPDATES', 'EMAIL', '+14155550100', 'a@b.co', '100', '0', '-1', '',
      'OTP_TYPE_EMAIL', 'OTP_TYPE_SMS', 'TRANSPORT_ENCRYPTION_SUITE_ENCLAVE_ENCRYPT_V1', 'SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM', '10.0.0.0/8', 'DENY', 'https://issuer.invalid', 'eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiAiaHR0cHM6Ly9pc3N1ZXIuaW52YWxpZCIsICJzdWIiOiAieCJ9.c2ln'),
    fc.constant('ROOT').map(() => ts.rootUserId),
    fc.constant('KEY').map(() => newP256Key().publicKey),
  );
  const fieldsArb: fc.Arbitrary<Record<string, unknown>> = fc.dictionary(fc.constantFrom(...FIELD_NAMES), fc.oneof(plausible, fc.array(plausible, { maxLength: 3 }),
    fc.array(fc.dictionary(fc.constantFrom(...FIELD_NAMES), plausible, { maxKeys: 5 }), { maxLength: 2 }), fc.dictionary(fc.constantFrom(...FIELD_NAMES), plausible, { maxKeys: 4 })), { maxKeys: 6 });

  it('deep fuzz of submits: well-formed envelopes with random parameters', async () => {
    let n = 0;
    await fc.assert(fc.asyncProperty(fc.constantFrom(...SUBMIT_OPS), fieldsArb, async (op, parameters) => {
      const body = submitBody(SUBMIT_TYPES[op]!, ts.orgId, parameters, String(Date.now() + (n++ % 1000)));
      await send(SUBMIT(op), body, {}, 'deep submit');
    }), { numRuns: 250 });
  });

  it('deep fuzz of queries: the right organization with random fields', async () => {
    await fc.assert(fc.asyncProperty(fc.constantFrom(...QUERY_OPS), fieldsArb, async (op, fields) => {
      await send(QUERY(op), JSON.stringify({ ...fields, organizationId: ts.orgId }), {}, 'deep query');
    }), { numRuns: 200 });
  });

  it('the server still serves, and only the legitimately accepted submits were stored', async () => {
    const who: any = await ts.sdk.getWhoami();
    expect(who.userId).toBe(ts.rootUserId);
    for (const p of ['/healthz', '/readyz']) expect((await fetch(ts.url + p)).status).toBe(200);
    const total = (await allActivities(ts)).length;
    expect(total).toBe(activityCountAtStart + accepted);
  });
});

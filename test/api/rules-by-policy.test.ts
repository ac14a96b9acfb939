// An operation's rules (what the state allows, limits, lock-out, what must exist, what the server
// can send) hold for a user whom a policy or the root quorum admits, not only for root users. A
// non-root user's authorize throws at the permission rule and the policies decide instead
// (activities/consensus.ts): a rule checked after that permission rule was skipped for such a user.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMember, startTestServer, submitBody, uniqueName, type Member, type TestServer } from '../server/harness.js';
import { QUERY, SUBMIT } from '../server/checks.js';
import { encryptSecretToBundle } from '@turnkey/crypto';
import { MAX_ENDPOINTS } from '../../src/activities/handlers/webhookEndpoints.js';
import { erc20Abi } from 'viem';

let ts: TestServer;
let mia: Member;
beforeAll(async () => {
  ts = await startTestServer();
  mia = await createMember(ts, uniqueName('mia'));
  // mia may do whatever a policy can allow
  await ts.sdk.createPolicy({ policyName: uniqueName('mia does anything'), effect: 'EFFECT_ALLOW', notes: '', consensus: `approvers.any(u, u.id == '${mia.id}')`, condition: "activity.type != ''" } as any);
});
afterAll(async () => { await ts?.stop(); });

const SUITE = 'TRANSPORT_ENCRYPTION_SUITE_ENCLAVE_ENCRYPT_V1';
const TOKEN = '0x6B175474E89094C44Da98b954EedeAC495271d0F';
const as = (key: Member['key'] | undefined) => (op: string, type: string, parameters: object) =>
  ts.raw(SUBMIT(op), submitBody(type, ts.orgId, parameters), key ? { key } : {});
const asRoot = as(undefined);
const asMia = (op: string, type: string, parameters: object) => as(mia.key)(op, type, parameters);
const status = (r: { json: any }) => r.json?.activity?.status as string | undefined;
const summary = (r: { status: number; text: string }) => `${r.status} ${r.text.slice(0, 200)}`;
const fields = (r: { json: any }) => (r.json?.details ?? []).flatMap((d: any) => d.fieldViolations ?? []).map((f: any) => f.field);

describe('import_secrets', () => {
  // guards: import_secrets refuses a name the organization already uses, whoever asks (not a 500 from the database)
  it('import_secrets by a user a policy admits refuses a taken name with a 400 naming the field', async () => {
    const signer = ts.server.bootstrap.signerPublicKey!;
    const init = await asRoot('init_import_secrets', 'ACTIVITY_TYPE_INIT_IMPORT_SECRETS', { encryptionSuite: SUITE, numSecrets: 2 });
    const [a, b] = init.json.activity.result.initImportSecretsResult.enclaveTargetMessages as string[];
    const seal = (plaintext: string, ingressTargetBundle: string) => encryptSecretToBundle({ plaintext, ingressTargetBundle, organizationId: ts.orgId, dangerouslyOverrideSignerPublicKey: signer });
    const name = uniqueName('card');
    const one = await seal('one', a!);
    const first = await asRoot('import_secrets', 'ACTIVITY_TYPE_IMPORT_SECRETS', { secrets: [{ name, secretPayload: one.secretPayload, targetPublicKey: one.targetPublicKey, encryptionSuite: SUITE }] });
    expect(status(first), first.text).toBe('ACTIVITY_STATUS_COMPLETED');
    const two = await seal('two', b!);
    const r = await asMia('import_secrets', 'ACTIVITY_TYPE_IMPORT_SECRETS', { secrets: [{ name, secretPayload: two.secretPayload, targetPublicKey: two.targetPublicKey, encryptionSuite: SUITE }] });
    expect(r.status, `mia: ${summary(r)}`).toBe(400);
    expect(fields(r)).toContain('secrets[0].name');
  });
});

describe('create_webhook_endpoint', () => {
  // guards: an organization has at most MAX_ENDPOINTS webhook endpoints, whoever adds one
  it('create_webhook_endpoint by a user a policy admits stops at the endpoint limit', async () => {
    const add = (by: typeof asRoot) => by('create_webhook_endpoint', 'ACTIVITY_TYPE_CREATE_WEBHOOK_ENDPOINT', { url: 'http://127.0.0.1:9/hook', name: uniqueName('hook'), subscriptions: [] });
    for (let i = 0; i < MAX_ENDPOINTS; i++) expect(status(await add(asRoot))).toBe('ACTIVITY_STATUS_COMPLETED');
    const root = await add(asRoot);
    expect(root.status, `a root user: ${summary(root)}`).toBe(400);
    const r = await add(asMia);
    expect(r.status, `mia: ${summary(r)}`).toBe(400);
    const list = await ts.raw(QUERY('list_webhook_endpoints'), JSON.stringify({ organizationId: ts.orgId }));
    expect(list.json.webhookEndpoints).toHaveLength(MAX_ENDPOINTS);
  });
});

describe('IP allowlists', () => {
  // guards: an allowlist that would shut out the request that sets it is refused, whoever sets it
  it('set_ip_allowlist by a user the root quorum admits is refused when it would shut that user out', async () => {
    const ivy = await createMember(ts, uniqueName('ivy'));
    const r = await as(ivy.key)('set_ip_allowlist', 'ACTIVITY_TYPE_SET_IP_ALLOWLIST', { publicKey: ivy.key.publicKey, rules: [{ cidr: '10.0.0.0/8', label: 'elsewhere' }] });
    // only the root quorum can admit it: it approves what it is shown
    if (status(r) === 'ACTIVITY_STATUS_CONSENSUS_NEEDED') await asRoot('approve_activity', 'ACTIVITY_TYPE_APPROVE_ACTIVITY', { fingerprint: r.json.activity.fingerprint });
    const whoami = await ts.raw(QUERY('whoami'), JSON.stringify({ organizationId: ts.orgId }), { key: ivy.key });
    expect(whoami.status, 'ivy is shut out by the allowlist it asked for').toBe(200);
    expect(r.status, `ivy: ${summary(r)}`).toBe(400);
    expect(fields(r)).toContain('rules');
  });

  // guards: remove_ip_allowlist of a list that does not exist is a 404, whoever asks (not an activity that waits for approvals)
  it('remove_ip_allowlist of no list by a non-root user is a 404', async () => {
    const root = await asRoot('remove_ip_allowlist', 'ACTIVITY_TYPE_REMOVE_IP_ALLOWLIST', {});
    expect(root.status, `a root user: ${summary(root)}`).toBe(404);
    const r = await asMia('remove_ip_allowlist', 'ACTIVITY_TYPE_REMOVE_IP_ALLOWLIST', {});
    expect(r.status, `mia: ${summary(r)}`).toBe(404);
  });
});

describe('smart contract interfaces', () => {
  // guards: one interface per contract address, whoever adds it (not a 500 from the database)
  it('create_smart_contract_interface by a user a policy admits refuses a second interface for an address', async () => {
    const params = { smartContractAddress: TOKEN, smartContractInterface: JSON.stringify(erc20Abi), type: 'SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM', label: 'DAI' };
    const first = await asRoot('create_smart_contract_interface', 'ACTIVITY_TYPE_CREATE_SMART_CONTRACT_INTERFACE', params);
    expect(status(first), first.text).toBe('ACTIVITY_STATUS_COMPLETED');
    const root = await asRoot('create_smart_contract_interface', 'ACTIVITY_TYPE_CREATE_SMART_CONTRACT_INTERFACE', params);
    expect(root.status, `a root user: ${summary(root)}`).toBe(409);
    const r = await asMia('create_smart_contract_interface', 'ACTIVITY_TYPE_CREATE_SMART_CONTRACT_INTERFACE', params);
    expect(r.status, `mia: ${summary(r)}`).toBe(409);
    const list = await ts.raw(QUERY('list_smart_contract_interfaces'), JSON.stringify({ organizationId: ts.orgId }));
    expect(list.json.smartContractInterfaces.filter((i: any) => i.smartContractAddress === TOKEN)).toHaveLength(1);
  });

  // guards: deleting an interface that does not exist is a 404, whoever asks (not a completed activity that deleted nothing)
  it('delete_smart_contract_interface of no interface by a user a policy admits is a 404', async () => {
    const params = { smartContractInterfaceId: '00000000-0000-4000-8000-000000000000' };
    const root = await asRoot('delete_smart_contract_interface', 'ACTIVITY_TYPE_DELETE_SMART_CONTRACT_INTERFACE', params);
    expect(root.status, `a root user: ${summary(root)}`).toBe(404);
    const r = await asMia('delete_smart_contract_interface', 'ACTIVITY_TYPE_DELETE_SMART_CONTRACT_INTERFACE', params);
    expect(r.status, `mia: ${summary(r)}`).toBe(404);
  });
});

describe('invitations', () => {
  // guards: an invitation's sender is a user of the organization, whoever invites
  it('create_invitations by a user a policy admits refuses an unknown sender and stores no invitation', async () => {
    const params = { invitations: [{ receiverUserName: 'x', receiverUserEmail: 'x@example.com', receiverUserTags: [], accessType: 'ACCESS_TYPE_API', senderUserId: 'no-such-user' }] };
    const root = await asRoot('create_invitations', 'ACTIVITY_TYPE_CREATE_INVITATIONS', params);
    expect(root.status, `a root user: ${summary(root)}`).toBe(404);
    const r = await asMia('create_invitations', 'ACTIVITY_TYPE_CREATE_INVITATIONS', params);
    expect(r.status, `an invitation from nobody was stored: ${summary(r)}`).toBe(404);
  });

  // guards: deleting an invitation that does not exist is a 404, whoever asks (not a completed activity that deleted nothing)
  it('delete_invitation of no invitation by a user a policy admits is a 404', async () => {
    const root = await asRoot('delete_invitation', 'ACTIVITY_TYPE_DELETE_INVITATION', { invitationId: 'no-such-invitation' });
    expect(root.status, `a root user: ${summary(root)}`).toBe(404);
    const r = await asMia('delete_invitation', 'ACTIVITY_TYPE_DELETE_INVITATION', { invitationId: 'no-such-invitation' });
    expect(r.status, `mia: ${summary(r)}`).toBe(404);
  });
});

describe('authentication flows', () => {
  // guards: init_otp refuses text messages and, on a server that sends no e-mail, e-mail codes, whoever asks
  it('init_otp by a user a policy admits refuses SMS codes, and e-mail codes on a server that sends no e-mail', async () => {
    for (const otpType of ['OTP_TYPE_SMS', 'OTP_TYPE_EMAIL']) {
      const params = { otpType, contact: otpType === 'OTP_TYPE_SMS' ? '+15555550100' : 'someone@example.com', appName: 'W' };
      const root = await asRoot('init_otp', 'ACTIVITY_TYPE_INIT_OTP_V2', params);
      expect(root.status, `${otpType} by a root user: ${summary(root)}`).toBe(400);
      const r = await asMia('init_otp', 'ACTIVITY_TYPE_INIT_OTP_V2', params);
      expect(r.status, `${otpType} by mia: ${summary(r)}`).toBe(400);
    }
  });
});

describe('sub-organizations', () => {
  // guards: a sign-up token that is not this server's, and deleting an organization that has no parent, are refused whoever asks (not a failed activity stored)
  it('create_sub_organization with a bad sign-up token and delete_sub_organization of a top-level organization, by a user a policy admits, are refused as for a root user', async () => {
    for (const [op, type, params] of [
      ['create_sub_organization', 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7', { subOrganizationName: uniqueName('s'), rootQuorumThreshold: 1,
        rootUsers: [{ userName: 'x', apiKeys: [], authenticators: [], oauthProviders: [] }], verificationToken: 'not.a.token' }],
      ['delete_sub_organization', 'ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION', {}],
    ] as const) {
      const root = await asRoot(op, type, params);
      expect(root.status, `${op} by a root user: ${summary(root)}`).toBe(400);
      const r = await asMia(op, type, params);
      expect(r.status, `${op} by mia: ${summary(r)}`).toBe(400);
    }
  });
});

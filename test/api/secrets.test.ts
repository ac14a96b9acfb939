// Organization secrets with the real clients: init_import_secrets (@turnkey/http), the client's
// encryptSecretToBundle (@turnkey/crypto, verifying kmas's signer key), import_secrets /
// export_secrets / list_secrets (@turnkey/sdk-server), decryptSecretBundle back to the same
// text; single-use targets, bad payloads, the secret absent from the SQLite files, and
// `secret.static_properties` in a policy.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { decryptSecretBundle, encryptSecretToBundle, generateP256KeyPair } from '@turnkey/crypto';
import { startTestServer, newP256Key, submitBody, allActivities, uniqueName, type TestServer, type RawKey, onSqlite } from '../server/harness.js';
import { checkAwaitsConsensus, checkError, expectFieldViolation, QUERY, SUBMIT } from '../server/checks.js';

const SUITE = 'TRANSPORT_ENCRYPTION_SUITE_ENCLAVE_ENCRYPT_V1';
let ts: TestServer;
let signer: string;

async function targets(n: number): Promise<string[]> {
  const r: any = await ts.http.initImportSecrets({ type: 'ACTIVITY_TYPE_INIT_IMPORT_SECRETS', organizationId: ts.orgId, timestampMs: String(Date.now()), parameters: { encryptionSuite: SUITE, numSecrets: n } } as any);
  expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
  return r.activity.result.initImportSecretsResult.enclaveTargetMessages;
}

const seal = (plaintext: string, ingressTargetBundle: string) =>
  encryptSecretToBundle({ plaintext, ingressTargetBundle, organizationId: ts.orgId, dangerouslyOverrideSignerPublicKey: signer });

async function exportOne(secretId: string): Promise<string> {
  const kp = generateP256KeyPair();
  const r: any = await ts.sdk.exportSecrets({ secrets: [{ secretId, targetPublicKey: kp.publicKeyUncompressed, encryptionSuite: SUITE }] } as any);
  expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
  return decryptSecretBundle({ secretPayload: r.secretPayloads[0], embeddedPrivateKey: kp.privateKey, organizationId: ts.orgId, dangerouslyOverrideSignerPublicKey: signer });
}

beforeAll(async () => {
  ts = await startTestServer();
  signer = ts.server.bootstrap.signerPublicKey!;
});
afterAll(async () => { await ts?.stop(); });

describe('secrets', () => {
  const card = `4111 1111 1111 1111 · exp 12/30 · ${uniqueName('cvc')}`;
  const note = 'ключ — 秘密 — 🔑 seed phrase backup';
  let cardId: string;
  let noteId: string;

  it('init → encryptSecretToBundle → import → list → export → decryptSecretBundle gives the same text back', async () => {
    const msgs = await targets(2);
    expect(msgs).toHaveLength(2);
    const a = await seal(card, msgs[0]!);
    const b = await seal(note, msgs[1]!);
    expect(a.targetPublicKey).not.toBe(b.targetPublicKey);
    const r: any = await ts.sdk.importSecrets({ secrets: [
      { name: 'visa', secretPayload: a.secretPayload, targetPublicKey: a.targetPublicKey, encryptionSuite: SUITE, staticProperties: [{ key: 'kind', value: 'creditCard' }] },
      { secretPayload: b.secretPayload, targetPublicKey: b.targetPublicKey, encryptionSuite: SUITE, staticProperties: [] },
    ] } as any);
    expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    [cardId, noteId] = r.secretIds;
    const l: any = await ts.sdk.listSecrets({} as any);
    expect(l.secrets.map((s: any) => s.secretId)).toEqual([noteId, cardId]);
    expect(l.secrets[1]).toMatchObject({ secretId: cardId, name: 'visa', staticProperties: [{ key: 'kind', value: 'creditCard' }] });
    expect(Number(l.secrets[1].createdAtUnixMs)).toBeGreaterThan(Date.now() - 60_000);
    // the whole secret text, not a digit run a random UUID can hold
    expect(JSON.stringify(l)).not.toContain('4111 1111');
    expect(JSON.stringify(l)).not.toContain(note);
    const page: any = await ts.sdk.listSecrets({ paginationOptions: { limit: '1', after: noteId } } as any);
    expect(page.secrets.map((s: any) => s.secretId)).toEqual([cardId]);
    expect(await exportOne(cardId)).toBe(card);
    expect(await exportOne(noteId)).toBe(note);
  });

  it('a cursor naming no secret of the organization is a 400 naming the field, as every other list answers it', async () => {
    // list_activities, list_wallet_accounts and list_suborgs answer an unknown cursor so (docs/server.md: bad pagination)
    for (const cursor of ['after', 'before'] as const) {
      const r = await ts.raw(QUERY('list_secrets'), JSON.stringify({ organizationId: ts.orgId, paginationOptions: { [cursor]: 'no-such-secret' } }));
      checkError(r, [400], `list_secrets ${cursor} an unknown id`);
      expect(r.json.code).toBe(3);
      expectFieldViolation(r, `paginationOptions.${cursor}`);
      const activities = await ts.raw(QUERY('list_activities'), JSON.stringify({ organizationId: ts.orgId, paginationOptions: { [cursor]: 'no-such-activity' } }));
      expect([r.status, r.json.code]).toEqual([activities.status, activities.json.code]);
    }
  });

  it.runIf(onSqlite)('the secret is not in the SQLite files (nor in the activity log)', async () => {
    const files = readdirSync(ts.dataDir).filter((f) => f.startsWith('kmas.sqlite'));
    expect(files).toContain('kmas.sqlite-wal');
    for (const f of files) {
      const bytes = readFileSync(join(ts.dataDir, f));
      expect(bytes.includes(Buffer.from(card, 'utf8')), `${f} holds the card`).toBe(false);
      expect(bytes.includes(Buffer.from('4111 1111', 'utf8')), `${f} holds card digits`).toBe(false);
      expect(bytes.includes(Buffer.from(note, 'utf8')), `${f} holds the note`).toBe(false);
      // the scan finds what is there: the secret's name and properties are stored in clear
      expect(bytes.includes(Buffer.from('creditCard', 'utf8')) || f !== 'kmas.sqlite-wal').toBe(true);
    }
  });

  it('a target is used once; a tampered payload, a taken name, a foreign target and an unknown secret are refused, storing nothing', async () => {
    const [msg] = await targets(1);
    const ok = await seal('first', msg!);
    const imp = (secrets: unknown[]) => ts.raw(SUBMIT('import_secrets'), submitBody('ACTIVITY_TYPE_IMPORT_SECRETS', ts.orgId, { secrets }));
    const before = (await allActivities(ts)).length;
    const tampered = JSON.parse(ok.secretPayload);
    tampered.ciphertext = tampered.ciphertext.slice(0, -2) + (tampered.ciphertext.endsWith('00') ? '01' : '00');
    const bad = await imp([{ secretPayload: JSON.stringify(tampered), targetPublicKey: ok.targetPublicKey, encryptionSuite: SUITE }]);
    checkError(bad, 400, 'tampered');
    expectFieldViolation(bad, 'secrets[0].secretPayload');
    const dup = await imp([{ name: 'visa', secretPayload: ok.secretPayload, targetPublicKey: ok.targetPublicKey, encryptionSuite: SUITE }]);
    checkError(dup, 400, 'name taken');
    expectFieldViolation(dup, 'secrets[0].name');
    const foreign = generateP256KeyPair();
    const nope = await imp([{ secretPayload: ok.secretPayload, targetPublicKey: foreign.publicKeyUncompressed, encryptionSuite: SUITE }]);
    checkError(nope, [400], 'unknown target');
    expectFieldViolation(nope, 'secrets[0].targetPublicKey');
    expect((await allActivities(ts)).length).toBe(before);
    // the good one goes in; the same target again is refused
    const first = await imp([{ secretPayload: ok.secretPayload, targetPublicKey: ok.targetPublicKey, encryptionSuite: SUITE }]);
    expect(first.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const again = await seal('second', msg!);
    const reused = await imp([{ secretPayload: again.secretPayload, targetPublicKey: again.targetPublicKey, encryptionSuite: SUITE }]);
    checkError(reused, [400], 'target reused');
    const unknown = await ts.raw(SUBMIT('export_secrets'), submitBody('ACTIVITY_TYPE_EXPORT_SECRETS', ts.orgId, { secrets: [{ secretId: 'no-such-secret', targetPublicKey: foreign.publicKeyUncompressed, encryptionSuite: SUITE }] }));
    checkError(unknown, 404, 'unknown secret');
    const badTarget = await ts.raw(SUBMIT('export_secrets'), submitBody('ACTIVITY_TYPE_EXPORT_SECRETS', ts.orgId, { secrets: [{ secretId: cardId, targetPublicKey: '04abcd', encryptionSuite: SUITE }] }));
    expectFieldViolation(badTarget, 'secrets[0].targetPublicKey');
    const badCount = await ts.raw(SUBMIT('init_import_secrets'), submitBody('ACTIVITY_TYPE_INIT_IMPORT_SECRETS', ts.orgId, { encryptionSuite: SUITE, numSecrets: 0 }));
    expectFieldViolation(badCount, 'numSecrets');
  });

  it('secret.static_properties: a policy lets a user export credit cards and nothing else', async () => {
    const key: RawKey = newP256Key();
    const u: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('payments-agent'), apiKeys: [{ apiKeyName: 'p', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const p: any = await ts.sdk.createPolicy({
      policyName: uniqueName('cards'), effect: 'EFFECT_ALLOW', notes: '',
      consensus: `approvers.any(u, u.id == '${u.userIds[0]}')`,
      condition: "secret.static_properties['kind'] == 'creditCard' && activity.type == 'ACTIVITY_TYPE_EXPORT_SECRETS'",
    });
    const kp = generateP256KeyPair();
    const ex = (secretId: string) => ts.raw(SUBMIT('export_secrets'), submitBody('ACTIVITY_TYPE_EXPORT_SECRETS', ts.orgId, { secrets: [{ secretId, targetPublicKey: kp.publicKeyUncompressed, encryptionSuite: SUITE }] }), { key });
    const ok = await ex(cardId);
    expect(ok.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const text = await decryptSecretBundle({ secretPayload: ok.json.activity.result.exportSecretsResult.secretPayloads[0], embeddedPrivateKey: kp.privateKey, organizationId: ts.orgId, dangerouslyOverrideSignerPublicKey: signer });
    expect(text).toBe(card);
    checkAwaitsConsensus(await ex(noteId), 'a secret without the property');
    const list = await ts.raw(QUERY('list_secrets'), JSON.stringify({ organizationId: ts.orgId }), { key });
    expect(list.status).toBe(200);
    await ts.sdk.deletePolicy({ policyId: p.policyId });
  });
});

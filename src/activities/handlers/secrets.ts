/**
 * Organization secrets, byte-compatible with @turnkey/crypto's encryptSecretToBundle and
 * decryptSecretBundle (TRANSPORT_ENCRYPTION_SUITE_ENCLAVE_ENCRYPT_V1):
 * - init_import_secrets: `numSecrets` single-use target keys (sealed, one hour), each as a signed
 *   envelope {targetPublic, organizationId} (the ServerTargetMsg the client verifies);
 * - import_secrets: each payload (HPKE to one of those targets) is opened and the secret stored
 *   sealed under the master key, with its optional unique name and policy-visible properties;
 * - export_secrets: each secret HPKE-sealed to the caller's targetPublicKey in a signed envelope
 *   {encappedPublic, ciphertext, organizationId} (the ServerSendMsg);
 * - list_secrets: metadata only, newest first, with cursors.
 * Like keys, secrets are imported and exported by root users unless a policy allows others; an
 * export's `secret.static_properties` (one secret per export) is visible to policies.
 */
import { ApiError, Grpc, invalidArgument, notFound } from '../../errors.js';
import { bytesToHex, parseTargetPublicKey } from '../../crypto/index.js';
import { IMPORT_TARGET_TTL_MS, cryptoCall, ctxImportTarget, ctxSecret, toApiError } from '../../domain/keys.js';
import type { Vault } from '../../crypto/index.js';
import type { SecretRow, Tx } from '../../storage/types.js';
import type { PolicyTargets } from '../../policy/scope.js';
import type { ImportTargetRow } from '../../storage/keys.js';
import { keysFor, type QueryOperation, type SubmitOperation } from '../types.js';
import { MAX_NAME, Validator, type Obj } from '../../domain/validate.js';
import { readTargetPublicKey, requireKeyAdmin } from './keyParams.js';
import { readPagination } from './activities.js';

const SUITES = ['TRANSPORT_ENCRYPTION_SUITE_ENCLAVE_ENCRYPT_V1'] as const;
/** Secrets per import / export request, and targets per init_import_secrets. */
export const MAX_SECRETS_PER_REQUEST = 100;
/** The largest secret (bytes of plaintext). */
export const MAX_SECRET_BYTES = 64 * 1024;
/** Import targets are not tied to a user: any caller the organization allows may complete an import. */
const ANY_USER = '';

// ---- init_import_secrets ------------------------------------------------------------------------

export const initImportSecrets: SubmitOperation<{ encryptionSuite: string; numSecrets: number }, { enclaveTargetMessages: string[] }> = {
  kind: 'submit',
  path: 'init_import_secrets',
  types: { ACTIVITY_TYPE_INIT_IMPORT_SECRETS: keysFor('ACTIVITY_TYPE_INIT_IMPORT_SECRETS') },
  validate(params: Obj) {
    const v = new Validator();
    const encryptionSuite = v.enumOf(params, 'encryptionSuite', 'encryptionSuite', SUITES);
    const numSecrets = v.int(params, 'numSecrets', 'numSecrets', 1, MAX_SECRETS_PER_REQUEST);
    v.done();
    return { encryptionSuite: encryptionSuite!, numSecrets: numSecrets! };
  },
  authorize(p) { requireKeyAdmin(p, 'import secrets'); },
  async execute(ctx, intent) {
    const { tx, organization, nowMs } = ctx;
    await tx.keys.importTargets.purgeExpired(nowMs);
    const messages: string[] = [];
    for (let i = 0; i < intent.numSecrets; i++) {
      const id = ctx.newId();
      const t = cryptoCall(() => ctx.services.vault.initImport(ctxImportTarget(organization.id, id), organization.id));
      await tx.keys.importTargets.insert({
        id, organizationId: organization.id, userId: ANY_USER, kind: 'secret', sealed: t.sealed, createdMs: nowMs, expiresMs: nowMs + IMPORT_TARGET_TTL_MS,
      });
      messages.push(t.importBundle);
    }
    return { enclaveTargetMessages: messages };
  },
};

// ---- import_secrets -----------------------------------------------------------------------------

interface ImportSecret { name?: string; secretPayload: string; targetPublicKey: string; encryptionSuite: string; staticProperties: { key: string; value: string }[] }

function readProperties(v: Validator, o: Obj, field: string): { key: string; value: string }[] {
  const list = v.array(o, 'staticProperties', field, { max: 32 }) ?? [];
  const out: { key: string; value: string }[] = [];
  list.forEach((x, i) => {
    const kv = v.object(x, `${field}[${i}]`);
    if (!kv) return;
    const key = v.string(kv, 'key', `${field}[${i}].key`, { required: true, max: MAX_NAME });
    const value = v.string(kv, 'value', `${field}[${i}].value`, { max: 1024 }) ?? '';
    if (key === undefined) return;
    if (out.some((p) => p.key === key)) { v.fail(`${field}[${i}].key`, 'is given twice'); return; }
    out.push({ key, value });
  });
  return out;
}

/**
 * Opens every import payload with the pending secret target whose public key it names, each target
 * once; the secret of payload i is sealed for idOf(i). The pending targets are listed once per
 * request, and a target's public key is computed once, when first compared.
 */
async function openAll(tx: Tx, vault: Vault, organizationId: string, secrets: ImportSecret[], nowMs: number, idOf: (i: number) => string): Promise<{ target: ImportTargetRow; sealed: Uint8Array }[]> {
  const pending = (await tx.keys.importTargets.listValid(organizationId, ANY_USER, 'secret', nowMs))
    .map((t) => ({ t, ctx: ctxImportTarget(organizationId, t.id), publicKey: undefined as string | undefined }));
  const taken = new Set<string>();
  return secrets.map((s, i) => {
    const field = `secrets[${i}]`;
    const want = bytesToHex(parseTargetPublicKey(s.targetPublicKey));
    const hit = pending.find((p) => !taken.has(p.t.id) && (p.publicKey ??= vault.publicKeyOfSealed(p.t.sealed, p.ctx)) === want);
    if (!hit) {
      throw new ApiError(Grpc.INVALID_ARGUMENT, `${field}.targetPublicKey: no pending init_import_secrets target has this public key (targets expire after ${IMPORT_TARGET_TTL_MS / 60000} minutes and are used once)`,
        { turnkeyErrorCode: 'IMPORT_NOT_INITIALIZED', fieldViolations: [{ field: `${field}.targetPublicKey`, description: 'must be the targetPublic of an unused enclaveTargetMessages entry' }] });
    }
    taken.add(hit.t.id);
    try {
      return { target: hit.t, sealed: vault.importSecret(hit.t.sealed, hit.ctx, s.secretPayload, ctxSecret(organizationId, idOf(i)), MAX_SECRET_BYTES, `${field}.secretPayload`) };
    } catch (e) {
      throw toApiError(e, `${field}.secretPayload`);
    }
  });
}

export const importSecrets: SubmitOperation<{ secrets: ImportSecret[] }, { secretIds: string[] }> = {
  kind: 'submit',
  path: 'import_secrets',
  types: { ACTIVITY_TYPE_IMPORT_SECRETS: keysFor('ACTIVITY_TYPE_IMPORT_SECRETS') },
  validate(params: Obj) {
    const v = new Validator();
    const list = v.array(params, 'secrets', 'secrets', { required: true, nonEmpty: true, max: MAX_SECRETS_PER_REQUEST }) ?? [];
    const secrets: ImportSecret[] = [];
    list.forEach((x, i) => {
      const f = `secrets[${i}]`;
      const o = v.object(x, f);
      if (!o) return;
      const name = v.string(o, 'name', `${f}.name`, { max: MAX_NAME }) || undefined;
      const secretPayload = v.string(o, 'secretPayload', `${f}.secretPayload`, { required: true, max: 4 * MAX_SECRET_BYTES });
      const targetPublicKey = readTargetPublicKey(v, o, `${f}.targetPublicKey`);
      const encryptionSuite = v.enumOf(o, 'encryptionSuite', `${f}.encryptionSuite`, SUITES);
      const staticProperties = readProperties(v, o, `${f}.staticProperties`);
      if (name !== undefined && secrets.some((s) => s.name === name)) v.fail(`${f}.name`, 'is given twice');
      if (secretPayload !== undefined && targetPublicKey !== undefined && encryptionSuite !== undefined) {
        secrets.push({ ...(name !== undefined ? { name } : {}), secretPayload, targetPublicKey, encryptionSuite, staticProperties });
      }
    });
    v.done();
    return { secrets };
  },
  // one organization's secrets one request at a time (across nodes): names stay unique
  locks: (_intent, organizationId) => [{ name: 'secrets', key: organizationId }],
  async authorize(p, intent, store, services) {
    await refuseTakenNames(store, p.organization.id, intent.secrets);
    // Dry run: every payload opens under a distinct pending target.
    for (const { sealed } of await openAll(store, services.vault, p.organization.id, intent.secrets, Date.now(), () => 'dry-run')) sealed.fill(0);
    requireKeyAdmin(p, 'import secrets');
  },
  async execute(ctx, intent) {
    const { tx, organization, nowMs } = ctx;
    // again under the lock: another node may have stored one of the names since authorize
    await refuseTakenNames(tx, organization.id, intent.secrets);
    const ids = intent.secrets.map(() => ctx.newId());
    for (const [i, { target, sealed }] of (await openAll(tx, ctx.services.vault, organization.id, intent.secrets, nowMs, (i) => ids[i]!)).entries()) {
      const s = intent.secrets[i]!;
      if (!await tx.keys.importTargets.delete(target.id)) {
        // a concurrent import (another node) used the target first
        throw new ApiError(Grpc.INVALID_ARGUMENT, `secrets[${i}].targetPublicKey: no pending init_import_secrets target has this public key (targets expire after ${IMPORT_TARGET_TTL_MS / 60000} minutes and are used once)`,
          { turnkeyErrorCode: 'IMPORT_NOT_INITIALIZED', fieldViolations: [{ field: `secrets[${i}].targetPublicKey`, description: 'must be the targetPublic of an unused enclaveTargetMessages entry' }] });
      }
      await tx.orgSecrets.insert({ id: ids[i]!, organizationId: organization.id, name: s.name ?? null, staticProperties: s.staticProperties, sealed, createdMs: nowMs });
    }
    return { secretIds: ids };
  },
};

/** A named secret's name is not taken in the organization (400 naming the field). */
async function refuseTakenNames(tx: Tx, organizationId: string, secrets: { name?: string }[]): Promise<void> {
  for (const [i, s] of secrets.entries()) {
    if (s.name !== undefined && await tx.orgSecrets.byName(organizationId, s.name)) {
      throw invalidArgument(`secrets[${i}].name: a secret named ${s.name.slice(0, 100)} exists`, [{ field: `secrets[${i}].name`, description: 'must be unique in the organization' }]);
    }
  }
}

// ---- export_secrets -----------------------------------------------------------------------------

interface ExportSecret { secretId: string; targetPublicKey: string; encryptionSuite: string }

async function requireSecret(tx: Tx, organizationId: string, id: string, field: string): Promise<SecretRow> {
  const s = await tx.orgSecrets.get(organizationId, id);
  if (!s) throw notFound(`${field}: secret ${id.slice(0, 100)} not found in this organization`, 'SECRET_NOT_FOUND');
  return s;
}

export const exportSecrets: SubmitOperation<{ secrets: ExportSecret[] }, { secretPayloads: string[] }> = {
  kind: 'submit',
  path: 'export_secrets',
  types: { ACTIVITY_TYPE_EXPORT_SECRETS: keysFor('ACTIVITY_TYPE_EXPORT_SECRETS') },
  validate(params: Obj) {
    const v = new Validator();
    const list = v.array(params, 'secrets', 'secrets', { required: true, nonEmpty: true, max: MAX_SECRETS_PER_REQUEST }) ?? [];
    const secrets: ExportSecret[] = [];
    list.forEach((x, i) => {
      const f = `secrets[${i}]`;
      const o = v.object(x, f);
      if (!o) return;
      const secretId = v.string(o, 'secretId', `${f}.secretId`, { required: true, max: 100 });
      const targetPublicKey = readTargetPublicKey(v, o, `${f}.targetPublicKey`);
      const encryptionSuite = v.enumOf(o, 'encryptionSuite', `${f}.encryptionSuite`, SUITES);
      if (secretId !== undefined && targetPublicKey !== undefined && encryptionSuite !== undefined) secrets.push({ secretId, targetPublicKey, encryptionSuite });
    });
    v.done();
    return { secrets };
  },
  async authorize(p, intent, store) {
    for (const [i, s] of intent.secrets.entries()) await requireSecret(store, p.organization.id, s.secretId, `secrets[${i}].secretId`);
    requireKeyAdmin(p, 'export secrets');
  },
  async policyTargets(intent, store, organizationId) {
    // every exported secret is a target: `secret` is bound to each in turn (a DENY on any one denies the export)
    const targets: PolicyTargets[] = [];
    for (const s of intent.secrets) {
      const row = await store.orgSecrets.get(organizationId, s.secretId);
      targets.push(row ? { secretProperties: row.staticProperties } : {});
    }
    return targets;
  },
  async execute(ctx, intent) {
    const { tx, organization } = ctx;
    const vault = ctx.services.vault;
    const rows: SecretRow[] = [];
    for (const [i, s] of intent.secrets.entries()) rows.push(await requireSecret(tx, organization.id, s.secretId, `secrets[${i}].secretId`));
    return {
      secretPayloads: intent.secrets.map((s, i) => {
        const row = rows[i]!;
        try {
          return vault.exportKey(row.sealed, ctxSecret(organization.id, row.id), s.targetPublicKey, organization.id);
        } catch (e) {
          throw toApiError(e, `secrets[${i}].targetPublicKey`);
        }
      }),
    };
  },
};

// ---- list_secrets -------------------------------------------------------------------------------

export const listSecrets: QueryOperation<{ page: ReturnType<typeof readPagination> }> = {
  kind: 'query',
  path: 'list_secrets',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body) {
    const v = new Validator();
    const page = readPagination(v, body);
    v.done();
    return { page };
  },
  async execute(ctx, q) {
    const rows = await ctx.tx.orgSecrets.list(ctx.organization.id, { limit: q.page.limit, ...(q.page.before ? { beforeId: q.page.before } : {}), ...(q.page.after ? { afterId: q.page.after } : {}) });
    if (!rows) {
      // as every list answers an unknown cursor (list_activities, list_wallet_accounts, list_suborgs)
      const field = q.page.before !== undefined ? 'paginationOptions.before' : 'paginationOptions.after';
      throw invalidArgument(`${field} names no secret of this organization`, [{ field, description: 'unknown cursor' }]);
    }
    return {
      secrets: rows.map((r) => ({
        secretId: r.id, ...(r.name !== null ? { name: r.name } : {}), staticProperties: r.staticProperties, createdAtUnixMs: String(r.createdMs),
      })),
    };
  },
};

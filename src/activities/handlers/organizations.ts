/** whoami, get_organization, get_organization_configs; update_root_quorum, update_organization_name. */
import { featuresRecord, quorumRecord, tagRecord, userRecords } from '../../domain/records.js';
import { privateKeyRecords, walletRecord } from '../../domain/keys.js';
import { requireRoot } from '../../domain/principal.js';
import { assertRootStillReachable, requireUser, rootCredentialsLock } from '../../domain/apiKeys.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes as utf8 } from '@noble/hashes/utils.js';
import { keysFor, type QueryOperation, type SubmitOperation } from '../types.js';
import { policyRecord } from './policies.js';
import { invitationRecord } from './invitations.js';
import { MAX_NAME, Validator, type Obj } from '../../domain/validate.js';

const noQuery = (_body: Obj) => ({});

export const whoami: QueryOperation<object> = {
  kind: 'query',
  path: 'whoami',
  parentMayRead: false,
  resolvesFromParent: true,
  specWrapper: 'wrap',
  validate: noQuery,
  execute(ctx) {
    const p = ctx.principal;
    return {
      organizationId: p.organization.id,
      organizationName: p.organization.name,
      userId: p.user.id,
      username: p.user.name,
    };
  },
};

export const getOrganization: QueryOperation<object> = {
  kind: 'query',
  path: 'get_organization',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate: noQuery,
  async execute(ctx) {
    const { tx, organization: org } = ctx;
    return {
      organizationData: {
        organizationId: org.id,
        name: org.name,
        users: await userRecords(tx, await tx.users.list(org.id)),
        policies: (await tx.policies.list(org.id)).map(policyRecord),
        privateKeys: await privateKeyRecords(tx, org.id, await tx.keys.privateKeys.list(org.id)),
        invitations: (await tx.invitations.list(org.id)).map(invitationRecord),
        tags: [...await tx.tags.list(org.id, 'TAG_TYPE_USER'), ...await tx.tags.list(org.id, 'TAG_TYPE_PRIVATE_KEY')].map(tagRecord),
        rootQuorum: await quorumRecord(tx, org),
        features: await featuresRecord(tx, org.id),
        wallets: (await tx.keys.wallets.list(org.id)).map(walletRecord),
        // the digest: SHA-256 of the ABI / IDL text as stored [UNCONFIRMED: Turnkey does not say of what]
        smartContractInterfaceReferences: (await tx.contractInterfaces.list(org.id)).map((r) => ({
          smartContractInterfaceId: r.id, smartContractAddress: r.address, digest: bytesToHex(sha256(utf8(r.interface))),
        })),
      },
    };
  },
};

export const getOrganizationConfigs: QueryOperation<object> = {
  kind: 'query',
  path: 'get_organization_configs',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate: noQuery,
  async execute(ctx) {
    return { configs: { features: await featuresRecord(ctx.tx, ctx.organization.id), quorum: await quorumRecord(ctx.tx, ctx.organization) } };
  },
};

/**
 * update_root_quorum: the root users become exactly `userIds`, `threshold` of whom must approve an
 * activity that no policy allows (1 ≤ threshold ≤ their number; above 1, even a root user's own
 * activities wait for approve_activity). A change that would leave no root user holding an API key
 * or a passkey fails (the organization would be locked out).
 */
export const updateRootQuorum: SubmitOperation<{ threshold: number; userIds: string[] }, Record<string, never>> = {
  kind: 'submit',
  path: 'update_root_quorum',
  types: { ACTIVITY_TYPE_UPDATE_ROOT_QUORUM: keysFor('ACTIVITY_TYPE_UPDATE_ROOT_QUORUM') },
  validate(params: Obj) {
    const v = new Validator();
    const userIds = v.stringArray(params, 'userIds', 'userIds', { required: true, nonEmpty: true }) ?? [];
    const threshold = v.int(params, 'threshold', 'threshold', 1, Math.max(userIds.length, 1));
    v.done();
    return { threshold: threshold!, userIds };
  },
  locks: rootCredentialsLock,
  authorize(p) { requireRoot(p, 'change the root quorum'); },
  async execute(ctx, intent) {
    const { tx, organization, nowMs } = ctx;
    for (const id of intent.userIds) await requireUser(tx, organization.id, id);
    const members = new Set(intent.userIds);
    for (const u of await tx.users.list(organization.id)) {
      if (u.isRoot !== members.has(u.id)) await tx.users.update({ ...u, isRoot: members.has(u.id), updatedMs: nowMs });
    }
    await tx.organizations.setRootQuorumThreshold(organization.id, intent.threshold, nowMs);
    await assertRootStillReachable(tx, organization.id, nowMs);
    return {};
  },
};

export const updateOrganizationName: SubmitOperation<{ organizationName: string }, { organizationId: string; organizationName: string }> = {
  kind: 'submit',
  path: 'update_organization_name',
  types: { ACTIVITY_TYPE_UPDATE_ORGANIZATION_NAME: keysFor('ACTIVITY_TYPE_UPDATE_ORGANIZATION_NAME') },
  validate(params: Obj) {
    const v = new Validator();
    const organizationName = v.string(params, 'organizationName', 'organizationName', { required: true, nonEmpty: true, max: MAX_NAME });
    v.done();
    return { organizationName: organizationName! };
  },
  authorize(p) { requireRoot(p, 'rename the organization'); },
  async execute(ctx, intent) {
    await ctx.tx.organizations.rename(ctx.organization.id, intent.organizationName, ctx.nowMs);
    return { organizationId: ctx.organization.id, organizationName: intent.organizationName };
  },
};

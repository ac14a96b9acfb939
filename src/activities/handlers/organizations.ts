/** whoami, get_organization, get_organization_configs. */
import { featuresRecord, quorumRecord, tagRecord, userRecord } from '../../domain/records.js';
import { privateKeyRecord, walletRecord } from '../../domain/keys.js';
import type { QueryOperation } from '../types.js';
import type { Obj } from '../validate.js';

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
  execute(ctx) {
    const { store, organization: org } = ctx;
    return {
      organizationData: {
        organizationId: org.id,
        name: org.name,
        users: store.users.list(org.id).map((u) => userRecord(store, u)),
        policies: [],
        privateKeys: store.keys.privateKeys.list(org.id).map((k) => privateKeyRecord(store, k)),
        invitations: [],
        tags: [...store.tags.list(org.id, 'TAG_TYPE_USER'), ...store.tags.list(org.id, 'TAG_TYPE_PRIVATE_KEY')].map(tagRecord),
        rootQuorum: quorumRecord(store, org),
        features: featuresRecord(store, org.id),
        wallets: store.keys.wallets.list(org.id).map(walletRecord),
        smartContractInterfaceReferences: [],
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
  execute(ctx) {
    return { configs: { features: featuresRecord(ctx.store, ctx.organization.id), quorum: quorumRecord(ctx.store, ctx.organization) } };
  },
};

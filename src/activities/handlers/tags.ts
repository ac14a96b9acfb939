/** User tags and private key tags: create, update, delete, list. */
import { alreadyExists, notFound } from '../../errors.js';
import { requireRoot } from '../../domain/principal.js';
import { requireUser } from '../../domain/apiKeys.js';
import { tagRecord } from '../../domain/records.js';
import type { Tx, TagRow, TagType } from '../../storage/types.js';
import { keysFor, type ExecContext, type QueryOperation, type SubmitOperation } from '../types.js';
import { MAX_NAME, Validator } from '../../domain/validate.js';

/** The two tag families differ only in names and in what their members are. */
interface TagKind {
  type: TagType;
  noun: string;
  requireMember(tx: Tx, organizationId: string, id: string): Promise<void>;
}
const USER: TagKind = {
  type: 'TAG_TYPE_USER', noun: 'user tag',
  requireMember: async (tx, org, id) => { await requireUser(tx, org, id); },
};
const PRIVATE_KEY: TagKind = {
  type: 'TAG_TYPE_PRIVATE_KEY', noun: 'private key tag',
  requireMember: async (tx, org, id) => {
    if (!await tx.privateKeys.exists(org, id)) throw notFound(`private key ${id} not found`, 'PRIVATE_KEY_NOT_FOUND');
  },
};

/** Tag writes of one kind in one organization one at a time (across nodes): a unique name is checked, then written. */
const tagsLock = (kind: TagKind) => (_intent: unknown, organizationId: string) => [{ name: 'tags' as const, key: `${organizationId}/${kind.type}` }];

async function requireTag(tx: Tx, organizationId: string, kind: TagKind, id: string): Promise<TagRow> {
  const t = await tx.tags.get(organizationId, id);
  if (!t || t.type !== kind.type) throw notFound(`${kind.noun} ${id} not found`, 'TAG_NOT_FOUND');
  return t;
}

async function createTag(ctx: ExecContext, kind: TagKind, name: string, members: string[]): Promise<string> {
  const { tx, organization, nowMs } = ctx;
  if (await tx.tags.byName(organization.id, kind.type, name)) throw alreadyExists(`a ${kind.noun} named "${name}" already exists`);
  for (const m of members) await kind.requireMember(tx, organization.id, m);
  const id = ctx.newId();
  await tx.tags.insert({ id, organizationId: organization.id, name, type: kind.type, createdMs: nowMs, updatedMs: nowMs });
  for (const m of members) await tx.tags.attach(id, m);
  return id;
}

async function updateTag(ctx: ExecContext, kind: TagKind, id: string, newName: string | undefined, add: string[], remove: string[]): Promise<void> {
  const { tx, organization, nowMs } = ctx;
  const tag = await requireTag(tx, organization.id, kind, id);
  if (newName !== undefined && newName !== tag.name) {
    if (await tx.tags.byName(organization.id, kind.type, newName)) throw alreadyExists(`a ${kind.noun} named "${newName}" already exists`);
  }
  for (const m of add) await kind.requireMember(tx, organization.id, m);
  for (const m of remove) await tx.tags.detach(id, m);
  for (const m of add) await tx.tags.attach(id, m);
  await tx.tags.update({ ...tag, name: newName ?? tag.name, updatedMs: nowMs });
}

async function deleteTags(ctx: ExecContext, kind: TagKind, ids: string[]): Promise<string[]> {
  const { tx, organization } = ctx;
  for (const id of ids) await requireTag(tx, organization.id, kind, id);
  const members = new Set<string>();
  for (const id of ids) {
    for (const m of await tx.tags.members(id)) members.add(m);
    await tx.tags.delete(organization.id, id);
  }
  return [...members];
}

export const createUserTag: SubmitOperation<{ userTagName: string; userIds: string[] }, { userTagId: string; userIds: string[] }> = {
  kind: 'submit',
  path: 'create_user_tag',
  types: { ACTIVITY_TYPE_CREATE_USER_TAG: keysFor('ACTIVITY_TYPE_CREATE_USER_TAG') },
  validate(params) {
    const v = new Validator();
    const userTagName = v.string(params, 'userTagName', 'userTagName', { required: true, max: MAX_NAME });
    const userIds = v.stringArray(params, 'userIds', 'userIds') ?? [];
    v.done();
    return { userTagName: userTagName!, userIds };
  },
  locks: tagsLock(USER),
  authorize(p) { requireRoot(p, 'manage tags'); },
  execute: async (ctx, i) => ({ userTagId: await createTag(ctx, USER, i.userTagName, i.userIds), userIds: i.userIds }),
};

interface UpdateUserTag { userTagId: string; newUserTagName?: string; addUserIds: string[]; removeUserIds: string[] }
export const updateUserTag: SubmitOperation<UpdateUserTag, { userTagId: string }> = {
  kind: 'submit',
  path: 'update_user_tag',
  types: { ACTIVITY_TYPE_UPDATE_USER_TAG: keysFor('ACTIVITY_TYPE_UPDATE_USER_TAG') },
  validate(params) {
    const v = new Validator();
    const userTagId = v.string(params, 'userTagId', 'userTagId', { required: true, max: 100 });
    const newUserTagName = v.string(params, 'newUserTagName', 'newUserTagName', { max: MAX_NAME }) || undefined;
    const addUserIds = v.stringArray(params, 'addUserIds', 'addUserIds') ?? [];
    const removeUserIds = v.stringArray(params, 'removeUserIds', 'removeUserIds') ?? [];
    const both = addUserIds.filter((x) => removeUserIds.includes(x));
    if (both.length > 0) v.fail('addUserIds', `user ${both[0]} is both added and removed`);
    v.done();
    return { userTagId: userTagId!, ...(newUserTagName !== undefined ? { newUserTagName } : {}), addUserIds, removeUserIds };
  },
  locks: tagsLock(USER),
  authorize(p) { requireRoot(p, 'manage tags'); },
  async execute(ctx, i) {
    await updateTag(ctx, USER, i.userTagId, i.newUserTagName, i.addUserIds, i.removeUserIds);
    return { userTagId: i.userTagId };
  },
};

export const deleteUserTags: SubmitOperation<{ userTagIds: string[] }, { userTagIds: string[]; userIds: string[] }> = {
  kind: 'submit',
  path: 'delete_user_tags',
  types: { ACTIVITY_TYPE_DELETE_USER_TAGS: keysFor('ACTIVITY_TYPE_DELETE_USER_TAGS') },
  validate(params) {
    const v = new Validator();
    const userTagIds = v.stringArray(params, 'userTagIds', 'userTagIds', { required: true, nonEmpty: true });
    v.done();
    return { userTagIds: userTagIds! };
  },
  authorize(p) { requireRoot(p, 'manage tags'); },
  execute: async (ctx, i) => ({ userTagIds: i.userTagIds, userIds: await deleteTags(ctx, USER, i.userTagIds) }),
};

export const createPrivateKeyTag: SubmitOperation<{ privateKeyTagName: string; privateKeyIds: string[] }, { privateKeyTagId: string; privateKeyIds: string[] }> = {
  kind: 'submit',
  path: 'create_private_key_tag',
  types: { ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG: keysFor('ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG') },
  validate(params) {
    const v = new Validator();
    const privateKeyTagName = v.string(params, 'privateKeyTagName', 'privateKeyTagName', { required: true, max: MAX_NAME });
    const privateKeyIds = v.stringArray(params, 'privateKeyIds', 'privateKeyIds') ?? [];
    v.done();
    return { privateKeyTagName: privateKeyTagName!, privateKeyIds };
  },
  locks: tagsLock(PRIVATE_KEY),
  authorize(p) { requireRoot(p, 'manage tags'); },
  execute: async (ctx, i) => ({ privateKeyTagId: await createTag(ctx, PRIVATE_KEY, i.privateKeyTagName, i.privateKeyIds), privateKeyIds: i.privateKeyIds }),
};

interface UpdatePrivateKeyTag { privateKeyTagId: string; newPrivateKeyTagName?: string; addPrivateKeyIds: string[]; removePrivateKeyIds: string[] }
export const updatePrivateKeyTag: SubmitOperation<UpdatePrivateKeyTag, { privateKeyTagId: string }> = {
  kind: 'submit',
  path: 'update_private_key_tag',
  types: { ACTIVITY_TYPE_UPDATE_PRIVATE_KEY_TAG: keysFor('ACTIVITY_TYPE_UPDATE_PRIVATE_KEY_TAG') },
  validate(params) {
    const v = new Validator();
    const privateKeyTagId = v.string(params, 'privateKeyTagId', 'privateKeyTagId', { required: true, max: 100 });
    const newPrivateKeyTagName = v.string(params, 'newPrivateKeyTagName', 'newPrivateKeyTagName', { max: MAX_NAME }) || undefined;
    const addPrivateKeyIds = v.stringArray(params, 'addPrivateKeyIds', 'addPrivateKeyIds') ?? [];
    const removePrivateKeyIds = v.stringArray(params, 'removePrivateKeyIds', 'removePrivateKeyIds') ?? [];
    const both = addPrivateKeyIds.filter((x) => removePrivateKeyIds.includes(x));
    if (both.length > 0) v.fail('addPrivateKeyIds', `private key ${both[0]} is both added and removed`);
    v.done();
    return {
      privateKeyTagId: privateKeyTagId!, ...(newPrivateKeyTagName !== undefined ? { newPrivateKeyTagName } : {}),
      addPrivateKeyIds, removePrivateKeyIds,
    };
  },
  locks: tagsLock(PRIVATE_KEY),
  authorize(p) { requireRoot(p, 'manage tags'); },
  async execute(ctx, i) {
    await updateTag(ctx, PRIVATE_KEY, i.privateKeyTagId, i.newPrivateKeyTagName, i.addPrivateKeyIds, i.removePrivateKeyIds);
    return { privateKeyTagId: i.privateKeyTagId };
  },
};

export const deletePrivateKeyTags: SubmitOperation<{ privateKeyTagIds: string[] }, { privateKeyTagIds: string[]; privateKeyIds: string[] }> = {
  kind: 'submit',
  path: 'delete_private_key_tags',
  types: { ACTIVITY_TYPE_DELETE_PRIVATE_KEY_TAGS: keysFor('ACTIVITY_TYPE_DELETE_PRIVATE_KEY_TAGS') },
  validate(params) {
    const v = new Validator();
    const privateKeyTagIds = v.stringArray(params, 'privateKeyTagIds', 'privateKeyTagIds', { required: true, nonEmpty: true });
    v.done();
    return { privateKeyTagIds: privateKeyTagIds! };
  },
  authorize(p) { requireRoot(p, 'manage tags'); },
  execute: async (ctx, i) => ({ privateKeyTagIds: i.privateKeyTagIds, privateKeyIds: await deleteTags(ctx, PRIVATE_KEY, i.privateKeyTagIds) }),
};

export const listUserTags: QueryOperation<object> = {
  kind: 'query',
  path: 'list_user_tags',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate: () => ({}),
  execute: async (ctx) => ({ userTags: (await ctx.tx.tags.list(ctx.organization.id, 'TAG_TYPE_USER')).map(tagRecord) }),
};

export const listPrivateKeyTags: QueryOperation<object> = {
  kind: 'query',
  path: 'list_private_key_tags',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate: () => ({}),
  execute: async (ctx) => ({ privateKeyTags: (await ctx.tx.tags.list(ctx.organization.id, 'TAG_TYPE_PRIVATE_KEY')).map(tagRecord) }),
};

/**
 * create_invitations, delete_invitation: invitations to join the organization, kept as records
 * (get_organization's organizationData.invitations). Turnkey's public API has no way to accept
 * one (acceptance happens in its dashboard), so kmas sends no e-mail and an invitation stays
 * INVITATION_STATUS_CREATED until it is deleted; create_users adds the user.
 */
import { notFound } from '../../errors.js';
import { requireRoot } from '../../domain/principal.js';
import { timestamp } from '../../domain/records.js';
import type { InvitationRow } from '../../storage/types.js';
import { keysFor, type SubmitOperation } from '../types.js';
import { EMAIL, MAX_NAME, Validator, type Obj } from '../../domain/validate.js';
import { requireTags } from './users.js';

const ACCESS_TYPES = ['ACCESS_TYPE_WEB', 'ACCESS_TYPE_API', 'ACCESS_TYPE_ALL'] as const;

interface NewInvitation { receiverUserName: string; receiverUserEmail: string; receiverUserTags: string[]; accessType: string; senderUserId: string }

export function invitationRecord(r: InvitationRow): Record<string, unknown> {
  return {
    invitationId: r.id, receiverUserName: r.receiverUserName, receiverEmail: r.receiverEmail, receiverUserTags: r.receiverUserTags,
    accessType: r.accessType, status: r.status, createdAt: timestamp(r.createdMs), updatedAt: timestamp(r.updatedMs), senderUserId: r.senderUserId,
  };
}

export const createInvitations: SubmitOperation<{ invitations: NewInvitation[] }, { invitationIds: string[] }> = {
  kind: 'submit',
  path: 'create_invitations',
  types: { ACTIVITY_TYPE_CREATE_INVITATIONS: keysFor('ACTIVITY_TYPE_CREATE_INVITATIONS') },
  validate(params: Obj) {
    const v = new Validator();
    const list = v.array(params, 'invitations', 'invitations', { required: true, nonEmpty: true, max: 100 }) ?? [];
    const invitations: NewInvitation[] = [];
    list.forEach((x, i) => {
      const f = `invitations[${i}]`;
      const o = v.object(x, f);
      if (!o) return;
      const receiverUserName = v.string(o, 'receiverUserName', `${f}.receiverUserName`, { required: true, max: MAX_NAME });
      const receiverUserEmail = v.string(o, 'receiverUserEmail', `${f}.receiverUserEmail`, { required: true, max: 320, pattern: EMAIL, patternDesc: 'must be an e-mail address' });
      const receiverUserTags = v.stringArray(o, 'receiverUserTags', `${f}.receiverUserTags`) ?? [];
      const accessType = v.enumOf(o, 'accessType', `${f}.accessType`, ACCESS_TYPES);
      const senderUserId = v.string(o, 'senderUserId', `${f}.senderUserId`, { required: true, max: 100 });
      if (receiverUserName && receiverUserEmail && accessType && senderUserId) invitations.push({ receiverUserName, receiverUserEmail, receiverUserTags, accessType, senderUserId });
    });
    v.done();
    return { invitations };
  },
  async authorize(p, intent, store) {
    for (const inv of intent.invitations) {
      if (!await store.users.get(p.organization.id, inv.senderUserId)) throw notFound(`senderUserId: user ${inv.senderUserId.slice(0, 100)} not found in this organization`, 'USER_NOT_FOUND');
      await requireTags(store, p.organization.id, inv.receiverUserTags, 'TAG_TYPE_USER');
    }
    requireRoot(p, 'invite users');
  },
  async execute(ctx, intent) {
    const invitationIds: string[] = [];
    for (const inv of intent.invitations) {
      const id = ctx.newId();
      await ctx.tx.invitations.insert({
        id, organizationId: ctx.organization.id, receiverUserName: inv.receiverUserName, receiverEmail: inv.receiverUserEmail,
        receiverUserTags: inv.receiverUserTags, accessType: inv.accessType, status: 'INVITATION_STATUS_CREATED', senderUserId: inv.senderUserId,
        createdMs: ctx.nowMs, updatedMs: ctx.nowMs,
      });
      invitationIds.push(id);
    }
    return { invitationIds };
  },
};

export const deleteInvitation: SubmitOperation<{ invitationId: string }, { invitationId: string }> = {
  kind: 'submit',
  path: 'delete_invitation',
  types: { ACTIVITY_TYPE_DELETE_INVITATION: keysFor('ACTIVITY_TYPE_DELETE_INVITATION') },
  validate(params: Obj) {
    const v = new Validator();
    const invitationId = v.string(params, 'invitationId', 'invitationId', { required: true, max: 100 });
    v.done();
    return { invitationId: invitationId! };
  },
  async authorize(p, intent, store) {
    if (!await store.invitations.get(p.organization.id, intent.invitationId)) throw notFound(`invitation ${intent.invitationId.slice(0, 100)} not found`, 'INVITATION_NOT_FOUND');
    requireRoot(p, 'delete invitations');
  },
  async execute(ctx, intent) {
    await ctx.tx.invitations.delete(ctx.organization.id, intent.invitationId);
    return { invitationId: intent.invitationId };
  },
};

/**
 * create_webhook_endpoint, update_webhook_endpoint, delete_webhook_endpoint;
 * list_webhook_endpoints. Deliveries: src/webhooks.ts (ACTIVITY_UPDATES is the event kmas emits;
 * subscriptions to the balance and transaction events are kept but have nothing to announce).
 * An endpoint deleted, paused or moved takes the events waiting for its old address with it:
 * dropped, or moved to its new address (readdressDeliveries, in the same transaction).
 */
import { failedPrecondition, notFound } from '../../errors.js';
import { requireRoot } from '../../domain/principal.js';
import type { Tx, WebhookEndpointRow, WebhookSubscription } from '../../storage/types.js';
import { keysFor, type QueryOperation, type SubmitOperation } from '../types.js';
import { MAX_NAME, Validator, type Obj } from '../../domain/validate.js';
import { allowedDestination, isHttpUrl } from './features.js';
import { readdressDeliveries } from '../../webhooks.js';

export const EVENT_TYPES = ['ACTIVITY_UPDATES', 'BALANCE_CONFIRMED_UPDATES', 'BALANCE_FINALIZED_UPDATES', 'SEND_TRANSACTION_STATUS_UPDATES'] as const;
/** Endpoints per organization at most. */
export const MAX_ENDPOINTS = 20;

type EndpointRecord = Omit<WebhookEndpointRow, 'id' | 'createdMs' | 'updatedMs'> & { endpointId: string };

function endpointRecord(e: WebhookEndpointRow): EndpointRecord {
  return {
    endpointId: e.id, organizationId: e.organizationId, url: e.url, name: e.name, isActive: e.isActive,
    subscriptions: e.subscriptions.map((s) => ({ ...s })),
  };
}

function readUrl(v: Validator, o: Obj, required: boolean): string | undefined {
  const url = v.string(o, 'url', 'url', { required, max: 2048 });
  if (url !== undefined && !isHttpUrl(url)) { v.fail('url', 'must be an http(s) URL'); return undefined; }
  return url;
}

function readSubscriptions(v: Validator, o: Obj): WebhookSubscription[] {
  const list = v.array(o, 'subscriptions', 'subscriptions', { max: EVENT_TYPES.length }) ?? [];
  const out: WebhookSubscription[] = [];
  list.forEach((item, i) => {
    const f = `subscriptions[${i}]`;
    const s = v.object(item, f);
    if (!s) return;
    const eventType = v.enumOf(s, 'eventType', `${f}.eventType`, EVENT_TYPES);
    if (typeof s.filtersJson === 'string' && s.filtersJson.trim() !== '') {
      v.fail(`${f}.filtersJson`, 'subscription filters are not supported yet; leave it out to receive every event of the type');
    }
    const isActive = v.boolean(s, 'isActive', `${f}.isActive`) ?? true;
    if (!eventType) return;
    if (out.some((x) => x.eventType === eventType)) { v.fail(`${f}.eventType`, 'is subscribed twice'); return; }
    out.push({ eventType, isActive });
  });
  return out;
}

async function requireEndpoint(tx: Tx, organizationId: string, id: string): Promise<WebhookEndpointRow> {
  const e = (await tx.webhooks.endpoints(organizationId)).find((x) => x.id === id);
  if (!e) throw notFound(`webhook endpoint ${id} not found`, 'WEBHOOK_ENDPOINT_NOT_FOUND');
  return e;
}

interface CreateEndpoint { url: string; name: string; subscriptions: WebhookSubscription[] }

export const createWebhookEndpoint: SubmitOperation<CreateEndpoint, { endpointId: string; webhookEndpoint: EndpointRecord }> = {
  kind: 'submit',
  path: 'create_webhook_endpoint',
  types: { ACTIVITY_TYPE_CREATE_WEBHOOK_ENDPOINT: keysFor('ACTIVITY_TYPE_CREATE_WEBHOOK_ENDPOINT') },
  validate(params: Obj) {
    const v = new Validator();
    const url = readUrl(v, params, true);
    const name = v.string(params, 'name', 'name', { required: true, nonEmpty: true, max: MAX_NAME });
    const subscriptions = readSubscriptions(v, params);
    v.done();
    return { url: url!, name: name!, subscriptions };
  },
  // one organization's new endpoints one request at a time (across nodes): the limit holds
  locks: endpointsLock,
  async authorize(p, intent, store, services) {
    allowedDestination(intent.url, services.webhookDestinations, 'url');
    await requireEndpointRoom(store, p.organization.id);
    requireRoot(p, 'manage webhook endpoints');
  },
  async execute(ctx, intent) {
    // again under the lock: another node may have added one since authorize
    await requireEndpointRoom(ctx.tx, ctx.organization.id);
    const row: WebhookEndpointRow = {
      id: ctx.newId(), organizationId: ctx.organization.id, url: intent.url, name: intent.name, isActive: true,
      subscriptions: intent.subscriptions, createdMs: ctx.nowMs, updatedMs: ctx.nowMs,
    };
    await ctx.tx.webhooks.insertEndpoint(row);
    return { endpointId: row.id, webhookEndpoint: endpointRecord(row) };
  },
};

/** One organization's endpoint changes one at a time (across nodes): each reads the endpoint, and the deliveries it moves, as the last change left them. */
function endpointsLock(_intent: unknown, organizationId: string): { name: 'webhook-endpoints'; key: string }[] {
  return [{ name: 'webhook-endpoints', key: organizationId }];
}

async function requireEndpointRoom(tx: Tx, organizationId: string): Promise<void> {
  if ((await tx.webhooks.endpoints(organizationId)).length >= MAX_ENDPOINTS) {
    throw failedPrecondition(`an organization has at most ${MAX_ENDPOINTS} webhook endpoints`);
  }
}

interface UpdateEndpoint { endpointId: string; url?: string; name?: string; isActive?: boolean }

export const updateWebhookEndpoint: SubmitOperation<UpdateEndpoint, { endpointId: string; webhookEndpoint: EndpointRecord }> = {
  kind: 'submit',
  path: 'update_webhook_endpoint',
  types: { ACTIVITY_TYPE_UPDATE_WEBHOOK_ENDPOINT: keysFor('ACTIVITY_TYPE_UPDATE_WEBHOOK_ENDPOINT') },
  validate(params: Obj) {
    const v = new Validator();
    const endpointId = v.string(params, 'endpointId', 'endpointId', { required: true, nonEmpty: true, max: 100 });
    const url = readUrl(v, params, false);
    const name = v.string(params, 'name', 'name', { nonEmpty: true, max: MAX_NAME });
    const isActive = v.boolean(params, 'isActive', 'isActive');
    v.done();
    return {
      endpointId: endpointId!, ...(url !== undefined ? { url } : {}), ...(name !== undefined ? { name } : {}),
      ...(isActive !== undefined ? { isActive } : {}),
    };
  },
  async authorize(p, intent, store, services) {
    allowedDestination(intent.url, services.webhookDestinations, 'url');
    await requireEndpoint(store, p.organization.id, intent.endpointId);
    requireRoot(p, 'manage webhook endpoints');
  },
  locks: endpointsLock,
  async execute(ctx, intent) {
    const e = await requireEndpoint(ctx.tx, ctx.organization.id, intent.endpointId);
    const row: WebhookEndpointRow = {
      ...e, url: intent.url ?? e.url, name: intent.name ?? e.name, isActive: intent.isActive ?? e.isActive, updatedMs: ctx.nowMs,
    };
    await ctx.tx.webhooks.updateEndpoint(row);
    // retries queued for the old address go to the new one, or nowhere once paused
    if (row.url !== e.url || row.isActive !== e.isActive) await readdressDeliveries(ctx.tx, ctx.organization.id, e.url, row.isActive ? row.url : undefined);
    return { endpointId: row.id, webhookEndpoint: endpointRecord(row) };
  },
};

export const deleteWebhookEndpoint: SubmitOperation<{ endpointId: string }, { endpointId: string }> = {
  kind: 'submit',
  path: 'delete_webhook_endpoint',
  types: { ACTIVITY_TYPE_DELETE_WEBHOOK_ENDPOINT: keysFor('ACTIVITY_TYPE_DELETE_WEBHOOK_ENDPOINT') },
  validate(params: Obj) {
    const v = new Validator();
    const endpointId = v.string(params, 'endpointId', 'endpointId', { required: true, nonEmpty: true, max: 100 });
    v.done();
    return { endpointId: endpointId! };
  },
  async authorize(p, intent, store) {
    await requireEndpoint(store, p.organization.id, intent.endpointId);
    requireRoot(p, 'manage webhook endpoints');
  },
  locks: endpointsLock,
  async execute(ctx, intent) {
    const e = await requireEndpoint(ctx.tx, ctx.organization.id, intent.endpointId);
    if (!await ctx.tx.webhooks.deleteEndpoint(ctx.organization.id, intent.endpointId)) {
      throw notFound(`webhook endpoint ${intent.endpointId} not found`, 'WEBHOOK_ENDPOINT_NOT_FOUND');
    }
    // retries queued for its address go nowhere (unless another address of the organization is the same)
    await readdressDeliveries(ctx.tx, ctx.organization.id, e.url);
    return { endpointId: intent.endpointId };
  },
};

export const listWebhookEndpoints: QueryOperation<object> = {
  kind: 'query',
  path: 'list_webhook_endpoints',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate: () => ({}),
  execute: async (ctx) => ({ webhookEndpoints: (await ctx.tx.webhooks.endpoints(ctx.organization.id)).map(endpointRecord) }),
};

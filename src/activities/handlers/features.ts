/**
 * set_organization_feature, remove_organization_feature (result: the whole resulting feature list).
 * A FEATURE_NAME_WEBHOOK changed or removed takes the events waiting for its old address with it
 * (readdressDeliveries, as an endpoint's change does).
 */
import { invalidArgument, notFound } from '../../errors.js';
import { refusedDestination, type WebhookDestinations } from '../../domain/destinations.js';
import { requireRoot } from '../../domain/principal.js';
import { FEATURE_NAMES } from '../../domain/enums.js';
import { featuresRecord } from '../../domain/records.js';
import { keysFor, type SubmitOperation } from '../types.js';
import { Validator } from '../../domain/validate.js';
import { readdressDeliveries, WEBHOOK_FEATURE } from '../../webhooks.js';

type FeatureName = (typeof FEATURE_NAMES)[number];

export function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch { return false; }
}

/**
 * An origin as a browser writes it into clientDataJSON (scheme, lowercase host, port when not the
 * default; no path), or an Android app's (android:apk-key-hash:…): anything else never equals one.
 */
export function isWebauthnOrigin(s: string): boolean {
  if (/^android:apk-key-hash:[A-Za-z0-9_-]+$/.test(s)) return true;
  try {
    const u = new URL(s);
    return (u.protocol === 'https:' || u.protocol === 'http:') && u.origin === s;
  } catch { return false; }
}

/** 400 naming `field` when WEBHOOK_DESTINATIONS rules `url` out (checked before the caller's rights: the same answer for all). */
export function allowedDestination(url: string | undefined, rule: WebhookDestinations, field: string): void {
  const why = url === undefined ? undefined : refusedDestination(url, rule);
  if (why === undefined) return;
  const description = `${why}: this server delivers webhooks to public addresses only (WEBHOOK_DESTINATIONS=public)`;
  throw invalidArgument(`${field}: ${description}`, [{ field, description }]);
}

export const setOrganizationFeature: SubmitOperation<{ name: FeatureName; value: string }, { features: { name: string; value: string }[] }> = {
  kind: 'submit',
  path: 'set_organization_feature',
  types: { ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE: keysFor('ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE') },
  validate(params) {
    const v = new Validator();
    const name = v.enumOf(params, 'name', 'name', FEATURE_NAMES);
    let value = params.value === undefined || params.value === null ? '' : v.string(params, 'value', 'value', { max: 4096 });
    if (name === 'FEATURE_NAME_WEBHOOK' && value !== undefined && !isHttpUrl(value)) {
      v.fail('value', 'FEATURE_NAME_WEBHOOK needs an http(s) URL');
      value = undefined;
    }
    // split as authenticators.ts allowedOrigins splits it: an entry that is no origin would refuse every passkey
    const notOrigin = name === 'FEATURE_NAME_WEBAUTHN_ORIGINS' && value !== undefined ? value.split(/[\s,]+/).find((x) => x !== '' && !isWebauthnOrigin(x)) : undefined;
    if (notOrigin !== undefined) {
      v.fail('value', `FEATURE_NAME_WEBAUTHN_ORIGINS lists origins such as https://wallet.example.com (no path, lowercase host); ${notOrigin.slice(0, 100)} is none`);
      value = undefined;
    }
    v.done();
    return { name: name!, value: value! };
  },
  authorize(p, i, _store, services) {
    if (i.name === 'FEATURE_NAME_WEBHOOK') allowedDestination(i.value, services.webhookDestinations, 'value');
    requireRoot(p, 'change organization features');
  },
  async execute(ctx, i) {
    const before = i.name === WEBHOOK_FEATURE ? await ctx.tx.features.get(ctx.organization.id, i.name) : undefined;
    await ctx.tx.features.set(ctx.organization.id, i.name, i.value);
    // retries queued for the old address go to the new one
    if (before !== undefined && before !== i.value) await readdressDeliveries(ctx.tx, ctx.organization.id, before, i.value);
    await ctx.tx.organizations.touch(ctx.organization.id, ctx.nowMs);
    return { features: await featuresRecord(ctx.tx, ctx.organization.id) };
  },
};

export const removeOrganizationFeature: SubmitOperation<{ name: FeatureName }, { features: { name: string; value: string }[] }> = {
  kind: 'submit',
  path: 'remove_organization_feature',
  types: { ACTIVITY_TYPE_REMOVE_ORGANIZATION_FEATURE: keysFor('ACTIVITY_TYPE_REMOVE_ORGANIZATION_FEATURE') },
  validate(params) {
    const v = new Validator();
    const name = v.enumOf(params, 'name', 'name', FEATURE_NAMES);
    v.done();
    return { name: name! };
  },
  authorize(p) { requireRoot(p, 'change organization features'); },
  async execute(ctx, i) {
    const before = i.name === WEBHOOK_FEATURE ? await ctx.tx.features.get(ctx.organization.id, i.name) : undefined;
    if (!await ctx.tx.features.remove(ctx.organization.id, i.name)) throw notFound(`feature ${i.name} is not set`, 'FEATURE_NOT_FOUND');
    // retries queued for its address go nowhere
    if (before !== undefined) await readdressDeliveries(ctx.tx, ctx.organization.id, before);
    await ctx.tx.organizations.touch(ctx.organization.id, ctx.nowMs);
    return { features: await featuresRecord(ctx.tx, ctx.organization.id) };
  },
};

// Every submit's authorize checks its rules (what the state allows, limits, lock-out, what must
// exist) before its permission rule. authorizeSubmit lets the policies or the root quorum decide
// when the permission rule throws PERMISSION_DENIED: a rule checked after it would be skipped for
// every user they admit (4ba1ce6 and the fixes after it). This walks every registered submit and
// runs its authorize twice on the same recording stand-ins for the store, the services, the
// organization and the intent: as a root user and as a non-root one. Where the non-root run stops
// at the permission rule, the root run must have read nothing the non-root run did not read before
// it: anything more is a check that the policies' users skip. An operation whose rules refuse
// every flavour of stand-in before its permission rule is not judged (it has its rules first, or
// none of its permission rule is reached); the count of those judged keeps the walk honest.
import { describe, expect, it } from 'vitest';
import { defaultRegistry } from '../../src/activities/registry.js';
import { FixedRefusal, type Principal } from '../../src/domain/principal.js';
import { ApiError, Grpc, permissionDenied } from '../../src/errors.js';
import type { OrganizationRow } from '../../src/storage/types.js';
import type { SubmitOperation } from '../../src/activities/types.js';

/**
 * How the stand-ins answer. A rule that refuses the answer ends the run before the permission
 * rule, so each operation runs under every flavour, and is judged in those that reach it:
 * `found` — a look-up finds a row (a stand-in) or finds nothing (undefined);
 * `named` — the intent's fields are stand-ins, or absent (a request that names nothing).
 */
interface Flavour { found: boolean; named: boolean }
const FLAVOURS: Flavour[] = [{ found: true, named: false }, { found: false, named: false }, { found: true, named: true }, { found: false, named: true }];

/**
 * A stand-in that logs every member read and call under `name`. A member is another stand-in (a
 * store, a service, a field); a call answers one, or undefined when `found` is false. It iterates
 * as empty and converts to a string, so a rule runs as far as it can.
 */
function recorder(name: string, log: string[], found: boolean): any {
  return new Proxy(function stand() { /* callable */ }, {
    get(_t, prop) {
      // awaiting a stand-in gives the stand-in
      if (prop === 'then') return undefined;
      if (prop === Symbol.iterator) return function* empty() { /* nothing */ };
      if (prop === Symbol.toPrimitive) return () => name;
      if (typeof prop === 'symbol') return undefined;
      log.push(`${name}.${prop}`);
      return recorder(`${name}.${prop}`, log, found);
    },
    apply() {
      log.push(`${name}()`);
      return found ? recorder(`${name}()`, log, found) : undefined;
    },
  });
}

/** `target` with its field reads logged under `name`; `standIns`: an absent field reads as a stand-in. */
function fieldRecorder<T extends object>(name: string, target: T, log: string[], standIns?: { found: boolean }): T {
  return new Proxy(target, {
    get(t, prop) {
      if (typeof prop !== 'string') return Reflect.get(t, prop) as unknown;
      log.push(`${name}.${prop}`);
      if (standIns && !(prop in t)) return recorder(`${name}.${prop}`, log, standIns.found);
      return Reflect.get(t, prop) as unknown;
    },
  });
}

const ORGANIZATION = { id: 'org', name: 'org', parentId: null, rootQuorumThreshold: 1 } as unknown as OrganizationRow;
const principal = (isRoot: boolean, organization: OrganizationRow): Principal => ({
  organization,
  user: { id: 'user', organizationId: 'org', isRoot } as Principal['user'],
  credential: { id: 'key', organizationId: 'org', userId: 'user', publicKey: '02ab' } as Principal['credential'],
  access: 'member',
  clientAddress: '127.0.0.1',
});

interface Run { log: string[]; error: unknown }

async function run(op: SubmitOperation, isRoot: boolean, { found, named }: Flavour): Promise<Run> {
  const log: string[] = [];
  let error: unknown;
  const organization = fieldRecorder('organization', ORGANIZATION, log);
  const intent = fieldRecorder('intent', {}, log, named ? { found } : undefined);
  try {
    await op.authorize(principal(isRoot, organization), intent, recorder('tx', log, found), recorder('services', log, found), organization);
  } catch (e) {
    error = e;
  }
  return { log, error };
}

// a FixedRefusal is a rule of the operation (no policy lifts it), not its permission rule
const denied = (e: unknown) => e instanceof ApiError && e.code === Grpc.PERMISSION_DENIED && !(e instanceof FixedRefusal);

/**
 * What the root user's authorize read that the non-root user's did not before it was denied, over
 * the flavours in which the non-root run reaches the permission rule (undefined: none does).
 */
async function skippedReads(op: SubmitOperation): Promise<string[] | undefined> {
  let skipped: Set<string> | undefined;
  for (const flavour of FLAVOURS) {
    const member = await run(op, false, flavour);
    if (!denied(member.error)) continue;
    const root = await run(op, true, flavour);
    const seen = new Set(member.log);
    skipped ??= new Set();
    for (const r of root.log) if (!seen.has(r)) skipped.add(r);
  }
  return skipped && [...skipped];
}

describe('rules before the permission rule', () => {
  it('the check sees a rule after the permission rule (a stand-in operation written that way)', async () => {
    const late = {
      authorize: async (p: Principal, intent: { name?: string }, tx: any) => {
        if (!p.user.isRoot) throw permissionDenied('root only');
        if (await tx.things.byName(intent.name)) throw new Error('taken');
      },
    } as unknown as SubmitOperation;
    const first = {
      authorize: async (p: Principal, intent: { name?: string }, tx: any) => {
        if (await tx.things.byName(intent.name)) throw new Error('taken');
        if (!p.user.isRoot) throw permissionDenied('root only');
      },
    } as unknown as SubmitOperation;
    expect((await skippedReads(late))?.sort()).toEqual(['intent.name', 'tx.things', 'tx.things.byName', 'tx.things.byName()']);
    expect(await skippedReads(first)).toEqual([]);
  });

  // guards: no registered submit checks anything after its permission rule
  it('every registered submit checks its rules before its permission rule', async () => {
    const registry = defaultRegistry();
    const late: Record<string, string[]> = {};
    let judged = 0;
    for (const path of registry.submitPaths()) {
      const skipped = await skippedReads(registry.submit(path)!);
      if (skipped === undefined) continue;
      judged++;
      if (skipped.length > 0) late[path] = skipped;
    }
    expect(late, 'checks made after the permission rule (skipped for a user a policy admits)').toEqual({});
    // most submits have a permission rule a non-root user meets: the walk reached them
    expect(judged).toBeGreaterThan(registry.submitPaths().length / 2);
  });
});

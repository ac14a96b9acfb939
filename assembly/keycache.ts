// The verification key cache (public data only, variable time): for CACHE_SLOTS distinct
// (curve, encoded key) pairs, the decoded point and its wNAF tables (a context laid out by
// muldouble.ts), so repeated verifications under one key (API-key stamps) skip decoding and table
// building; on P-256 a key seen twice also gets its 2^128·Q table, which halves the doublings from
// then on. Replacement is CLOCK (second chance): a key verified since the hand last passed is
// kept, so keys in steady use survive a stream of one-off keys. Whether a key is cached is
// observable through timing; it reveals nothing secret.
import { curveId } from './curve';
import { AFF } from './point';
import {
  qctxPrepare_var, qctxUpgrade_var, QCTX_SIZE, QCTX_STATE, QCTX_KEY, QCTX_Q, QCTX_USES, QCTX_HOT, QCTX_REF,
  HOT_TABLE_SIZE, hotBuild_var,
} from './muldouble';
import { decodePoint_var } from './codec';
import { EC_QA as QA } from './layout';

const CACHE_SLOTS: u32 = 64;
const CACHE: usize = memory.data(<i32>(QCTX_SIZE * <usize>CACHE_SLOTS), 16);
let cacheNext: u32 = 0;

// Hot keys: a cached key that has verified HOT_AFTER times gets a full fixed-window table
// (muldouble.ts hotBuild_var, 110 KB; verification then needs no doubling), in one of HOT_SLOTS slots
// taken round-robin. A build costs about 30 verifications, so at most one runs per
// HOT_BUILD_EVERY verifications: keys taking turns can never spend more than a few percent of
// the time rebuilding tables for each other.
const HOT_SLOTS: u32 = 8;
let HOT_AFTER: u32 = 32;
let HOT_BUILD_EVERY: u32 = 512;
const HOT: usize = memory.data(<i32>(HOT_TABLE_SIZE * <usize>HOT_SLOTS), 16);
const HOT_OWNER: usize = memory.data(<i32>(4 * HOT_SLOTS), 16); // context holding each slot (0: free)
let hotNext: u32 = 0;
let sinceBuild: u32 = 512;

/** Sets when keys get a hot table (tests use 1 and 0 to give every key one on its second use). */
export function setHotPolicy(after: u32, buildEvery: u32): void {
  HOT_AFTER = max<u32>(after, 1);
  HOT_BUILD_EVERY = buildEvery;
  sinceBuild = buildEvery;
}

/** The cached context of the SEC1 key at pub on the curve cv, or 0. */
function findContext_var(cv: usize, pub: usize, pubLen: u32): usize {
  let curve = curveId(cv);
  for (let i: u32 = 0; i < CACHE_SLOTS; i++) {
    let c = CACHE + QCTX_SIZE * <usize>i;
    if (load<u32>(c + QCTX_STATE) == 0 || load<u32>(c) != curve || load<u32>(c, 4) != pubLen) continue;
    if (memory.compare(c + QCTX_KEY, pub, pubLen) == 0) return c;
  }
  return 0;
}

/** 0: the SEC1 key at pub is not in the verification cache; 1: cached; 2: cached with a hot table. */
export function keyCacheState_var(cv: usize, pub: usize, pubLen: u32): u32 {
  let c = findContext_var(cv, pub, pubLen);
  if (c == 0) return 0;
  return load<u32>(c + QCTX_HOT) != 0 ? 2 : 1;
}

/** The hot table of context c, or 0. */
// @ts-ignore: decorator
@inline
export function hotTable_var(c: usize): usize {
  let slot = load<u32>(c + QCTX_HOT);
  return slot == 0 ? 0 : HOT + HOT_TABLE_SIZE * <usize>(slot - 1);
}

/** Releases the hot slot of context c, if it has one. */
function dropHot_var(c: usize): void {
  let slot = load<u32>(c + QCTX_HOT);
  if (slot == 0) return;
  store<u32>(HOT_OWNER + 4 * <usize>(slot - 1), 0);
  store<u32>(c + QCTX_HOT, 0);
}

/** Gives context c the next hot slot (its previous holder loses it and starts counting again). */
function makeHot_var(cv: usize, c: usize): void {
  let slot = hotNext;
  hotNext = (hotNext + 1) % HOT_SLOTS;
  let owner = <usize>load<u32>(HOT_OWNER + 4 * <usize>slot);
  if (owner != 0) {
    store<u32>(owner + QCTX_HOT, 0);
    store<u32>(owner + QCTX_USES, 0);
  }
  hotBuild_var(cv, HOT + HOT_TABLE_SIZE * <usize>slot, c + QCTX_Q);
  store<u32>(HOT_OWNER + 4 * <usize>slot, <u32>c);
  store<u32>(c + QCTX_HOT, slot + 1);
  sinceBuild = 0;
}

/** Context for the SEC1 key at pub (cached), or 0 if the key is invalid. Variable time. */
export function keyContext_var(cv: usize, pub: usize, pubLen: u32): usize {
  if (sinceBuild < HOT_BUILD_EVERY) sinceBuild++;
  let c = findContext_var(cv, pub, pubLen);
  if (c != 0) {
    if (load<u32>(c + QCTX_STATE) == 1) qctxUpgrade_var(cv, c);
    store<u32>(c + QCTX_REF, 1);
    let uses = load<u32>(c + QCTX_USES);
    if (uses < HOT_AFTER) store<u32>(c + QCTX_USES, ++uses);
    if (uses >= HOT_AFTER && load<u32>(c + QCTX_HOT) == 0 && sinceBuild >= HOT_BUILD_EVERY) makeHot_var(cv, c);
    return c;
  }
  if (!decodePoint_var(cv, QA, pub, pubLen)) return 0;
  c = CACHE + QCTX_SIZE * <usize>cacheNext;
  while (load<u32>(c + QCTX_STATE) != 0 && load<u32>(c + QCTX_REF) != 0) {
    store<u32>(c + QCTX_REF, 0); // second chance: taken next time round unless verified again
    cacheNext = (cacheNext + 1) % CACHE_SLOTS;
    c = CACHE + QCTX_SIZE * <usize>cacheNext;
  }
  cacheNext = (cacheNext + 1) % CACHE_SLOTS;
  dropHot_var(c);
  store<u32>(c + QCTX_REF, 0);
  store<u32>(c + QCTX_STATE, 0);
  store<u32>(c + QCTX_USES, 1);
  store<u32>(c, curveId(cv));
  store<u32>(c, pubLen, 4);
  memory.copy(c + QCTX_KEY, pub, pubLen);
  memory.copy(c + QCTX_Q, QA, AFF);
  qctxPrepare_var(cv, c);
  return c;
}

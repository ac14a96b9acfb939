// A second, independent oracle for kmas's RFC 6962 Merkle trees (src/tlog/merkle.ts) on random
// trees of 1 to 10,000 leaves: @sigstore/verify (npm, Apache-2.0, the Sigstore project's
// verifier from sigstore-js, which npm and GitHub use for provenance), whose Rekor inclusion check
// recomputes an RFC 6962 root from a leaf, its index and an audit path and compares it with the
// root of a signed C2SP checkpoint. Pinned at 3.1.1, the newest line whose engines include Node 20
// (4.x asks for Node 22); its Merkle check is the same code as 4.x's.
//
// That check (verifyMerkleInclusion, tlog/merkle) and the checkpoint parser are internal to the
// package, so the test reaches them only through its public API: toTrustMaterial (a trusted root
// naming one log and its Ed25519 checkpoint key), toSignedEntity (a bundle whose transparency-log
// entry carries kmas's inclusion proof and a checkpoint signed by kmas's own note code) and
// Verifier.verify. Each proven leaf is therefore a Rekor "hashedrekord" body for a random message
// signed with a test ECDSA key; every other leaf is random bytes. The package verifies no
// consistency proofs and computes no root from a list of leaves: consistency proofs are checked
// against the RFC vectors and the RFC's recursive definition in merkle.test.ts, not here.
//
// Per tree: rootOf and the frontier built by appends agree; the oracle accepts inclusion proofs
// (first leaf, last leaf, random leaves) in the tree and in a random older prefix of it (whose
// root kmas also computed); and the oracle refuses the same proof with one bit flipped in a path
// hash, in the checkpoint's root (re-signed, so only the Merkle check can object), in the leaf,
// and with a neighbouring index, so the test cannot pass vacuously. Seeded: ORACLE_SEED=<n>
// replays a run: its sizes, indexes, random leaves and log key (the seed is printed and named in every
// failure; only the ECDSA key and signatures inside the proven leaves differ from run to run).
import { describe, it, expect } from 'vitest';
import { createHash, generateKeyPairSync, sign as ecdsaSign } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { Verifier, VerificationError, toSignedEntity, toTrustMaterial } from '@sigstore/verify';
import { Frontier, inclusionProof, leafHash, rootOf, type NodeReader } from '../../src/tlog/merkle.js';
import { signCheckpoint } from '../../src/tlog/note.js';

type Bundle = Parameters<typeof toSignedEntity>[0];
type TrustedRoot = Parameters<typeof toTrustMaterial>[0];

const SEED = process.env.ORACLE_SEED ? Number(process.env.ORACLE_SEED) : Math.floor(Math.random() * 2 ** 31);
console.log(`oracle.test.ts: ORACLE_SEED=${SEED}`);

/** splitmix32: a small seeded generator, so that a failing run can be replayed. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 2 ** 32;
  };
}
const rand = prng(SEED);
const below = (n: number): number => Math.floor(rand() * n);
const randomBytes = (n: number): Uint8Array => Uint8Array.from({ length: n }, () => below(256));
const flipBit = (b: Uint8Array): Uint8Array => { const c = Uint8Array.from(b); const i = below(c.length * 8); c[i >> 3]! ^= 1 << (i & 7); return c; };

// Sizes: the edges (1, 2, 3, 2^k - 1, 2^k, 2^k + 1 up to 8193, and 10,000) and random ones.
const EDGE = [1, 2, 3, ...Array.from({ length: 12 }, (_, i) => 2 ** (i + 2)).flatMap((p) => [p - 1, p, p + 1]), 10_000];
const SIZES = [...new Set([...EDGE, ...Array.from({ length: 8 }, () => 1 + below(10_000))])];

// The log: its checkpoints are signed by kmas's note code with an Ed25519 key; the trusted root
// names it by the key's C2SP hash, which is the first 4 bytes of the log id the oracle matches.
const LOG_NAME = 'oracle.kmas.test/log';
const ORIGIN = 'oracle.kmas.test/log';
const logSecret = randomBytes(32);
const logPublic = ed25519.getPublicKey(logSecret);
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const logId = Buffer.from(sha256(new Uint8Array([...new TextEncoder().encode(`${LOG_NAME}\n`), 0x01, ...logPublic])));
const SHA2_256 = 1; // HashAlgorithm.SHA2_256 (sigstore protobuf-specs)
const PKIX_ECDSA_P256_SHA_256 = 5; // PublicKeyDetails
const PKIX_ED25519 = 7;

// The message signer of the proven entries (the oracle checks each Rekor body against its bundle).
const signer = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const SIGNER_HINT = 'oracle-signer';
const trustedRoot = {
  mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1',
  tlogs: [{
    baseUrl: `https://${LOG_NAME}`,
    hashAlgorithm: SHA2_256,
    publicKey: { rawBytes: Buffer.concat([ED25519_SPKI_PREFIX, logPublic]), keyDetails: PKIX_ED25519, validFor: { start: new Date(0), end: undefined } },
    logId: { keyId: logId },
    checkpointKeyId: undefined,
  }],
  certificateAuthorities: [],
  ctlogs: [],
  timestampAuthorities: [],
} as unknown as TrustedRoot;
const trust = toTrustMaterial(trustedRoot, {
  [SIGNER_HINT]: { rawBytes: signer.publicKey.export({ format: 'der', type: 'spki' }), keyDetails: PKIX_ECDSA_P256_SHA_256, validFor: { start: new Date(0), end: undefined } },
} as unknown as Parameters<typeof toTrustMaterial>[1]);
// Timestamps are not what is under test: the entries carry none (integratedTime 0).
const oracle = new Verifier(trust, { tlogThreshold: 1, timestampThreshold: 0 });

/** A signed message and the Rekor hashedrekord body that records it: the leaf data of a proven entry. */
interface Signed { artifact: Buffer; digest: Buffer; signature: Buffer; body: Buffer }
function signedEntry(): Signed {
  const artifact = Buffer.from(randomBytes(1 + below(64)));
  const digest = createHash('sha256').update(artifact).digest();
  const signature = ecdsaSign('sha256', artifact, signer.privateKey);
  const body = Buffer.from(JSON.stringify({
    apiVersion: '0.0.1',
    kind: 'hashedrekord',
    spec: { data: { hash: { algorithm: 'sha256', value: digest.toString('hex') } }, signature: { content: signature.toString('base64') } },
  }));
  return { artifact, digest, signature, body };
}

/** A Sigstore bundle proving `entry` at `index` in the tree of `size` leaves with root `root`. */
function bundle(entry: Signed, body: Buffer, index: number, size: number, root: Uint8Array, path: Uint8Array[]): Bundle {
  const checkpoint = signCheckpoint({ origin: ORIGIN, size, root, extensions: [] }, LOG_NAME, logSecret);
  return {
    mediaType: 'application/vnd.dev.sigstore.bundle.v0.3+json',
    verificationMaterial: {
      content: { $case: 'publicKey', publicKey: { hint: SIGNER_HINT } },
      tlogEntries: [{
        logIndex: String(index),
        logId: { keyId: logId },
        kindVersion: { kind: 'hashedrekord', version: '0.0.1' },
        integratedTime: '0',
        inclusionPromise: undefined,
        inclusionProof: {
          logIndex: String(index),
          rootHash: Buffer.from(root),
          treeSize: String(size),
          hashes: path.map((h) => Buffer.from(h)),
          checkpoint: { envelope: checkpoint },
        },
        canonicalizedBody: body,
      }],
      timestampVerificationData: undefined,
    },
    content: { $case: 'messageSignature', messageSignature: { messageDigest: { algorithm: SHA2_256, digest: entry.digest }, signature: entry.signature } },
  } as unknown as Bundle;
}

/** The oracle's verdict: 'ok', or the code and message of its VerificationError. */
function verdict(b: Bundle, artifact: Buffer): string {
  try {
    oracle.verify(toSignedEntity(b, artifact));
    return 'ok';
  } catch (e) {
    if (e instanceof VerificationError) return `${e.code}: ${e.message}`;
    throw e;
  }
}
const MERKLE_MISMATCH = 'TLOG_INCLUSION_PROOF_ERROR: calculated root hash does not match inclusion proof';

/** A tree of `n` leaves, built by appends, with every completed node kept as a store keeps it. */
function build(data: readonly Uint8Array[], oldSize: number) {
  const nodes = new Map<string, Uint8Array>();
  const frontier = new Frontier();
  let oldFrontierRoot: Uint8Array | undefined;
  for (const d of data) {
    for (const node of frontier.append(leafHash(d))) nodes.set(`${node.level}/${node.index}`, node.hash);
    if (frontier.size === oldSize) oldFrontierRoot = frontier.root();
  }
  const reader: NodeReader = (level, index) => {
    const h = nodes.get(`${level}/${index}`);
    if (!h) throw new Error(`no node ${level}/${index}`);
    return h;
  };
  return { frontier, reader, oldFrontierRoot: oldFrontierRoot! };
}

describe(`kmas's RFC 6962 trees against @sigstore/verify (seed ${SEED})`, () => {
  it(`${SIZES.length} random trees of 1..10,000 leaves: same roots, proofs accepted, one flipped bit refused`, () => {
    let accepted = 0;
    let refused = 0;
    for (const n of SIZES) {
      const where = `seed ${SEED}, size ${n}`;
      const oldSize = 1 + below(n); // a prefix (n itself now and then)
      const proven = [...new Set([0, n - 1, oldSize - 1, below(n), below(n)])];
      const signed = new Map(proven.map((i) => [i, signedEntry()]));
      const data = Array.from({ length: n }, (_, i) => signed.get(i)?.body ?? randomBytes(below(80)));

      const { frontier, reader, oldFrontierRoot } = build(data, oldSize);
      const root = frontier.root();
      expect(Buffer.from(rootOf(data.map(leafHash))).toString('hex'), where).toBe(Buffer.from(root).toString('hex'));
      const oldRoot = rootOf(data.slice(0, oldSize).map(leafHash));
      expect(Buffer.from(oldFrontierRoot).toString('hex'), where).toBe(Buffer.from(oldRoot).toString('hex'));

      // accepted: every proven leaf in the whole tree, and those below oldSize in the prefix
      const cases = [
        ...proven.map((i) => ({ i, size: n, root })),
        ...proven.filter((i) => i < oldSize).map((i) => ({ i, size: oldSize, root: oldRoot })),
      ];
      for (const c of cases) {
        const e = signed.get(c.i)!;
        const path = inclusionProof(c.i, c.size, reader);
        expect(verdict(bundle(e, e.body, c.i, c.size, c.root, path), e.artifact), `${where}: leaf ${c.i} in ${c.size}`).toBe('ok');
        accepted++;
      }

      // refused: one flipped bit, in a random proven leaf's path, the checkpoint root, the leaf; a neighbouring index
      const i = proven[below(proven.length)]!;
      const e = signed.get(i)!;
      const path = inclusionProof(i, n, reader);
      const at = `${where}: leaf ${i}`;
      if (path.length > 0) {
        const k = below(path.length);
        const bad = path.map((h, j) => (j === k ? flipBit(h) : h));
        expect(verdict(bundle(e, e.body, i, n, root, bad), e.artifact), `${at}, path[${k}] flipped`).toBe(MERKLE_MISMATCH);
        refused++;
      }
      expect(verdict(bundle(e, e.body, i, n, flipBit(root), path), e.artifact), `${at}, root flipped`).toBe(MERKLE_MISMATCH);
      expect(verdict(bundle(e, Buffer.from(flipBit(e.body)), i, n, root, path), e.artifact), `${at}, leaf flipped`).toBe(MERKLE_MISMATCH);
      refused += 2;
      if (n > 1) {
        const other = i === n - 1 ? i - 1 : i + 1;
        expect(verdict(bundle(e, e.body, other, n, root, path), e.artifact), `${at} claimed at ${other}`).toMatch(/^TLOG_INCLUSION_PROOF_ERROR: /);
        refused++;
      }
    }
    console.log(`oracle.test.ts: ${SIZES.length} trees (${SIZES.reduce((a, b) => a + b, 0)} leaves), ${accepted} proofs accepted, ${refused} mutations refused`);
  }, 180_000);
});

/**
 * Checkpoints in the C2SP tlog-checkpoint form, as C2SP signed notes with Ed25519 signatures.
 *
 * A checkpoint's text is three lines: the origin (the log's name), the tree size in decimal, the
 * root hash in standard base64; each ends in a newline. The signed note is that text, a blank
 * line, and one line per signature: "— <key name> <base64(key hash ‖ signature)>", where the key
 * hash is the first 4 bytes of SHA-256(key name ‖ "\n" ‖ 0x01 ‖ public key) and the signature is
 * Ed25519 over the text. A verifier key is written "<name>+<key hash hex>+<base64(0x01 ‖ public key)>".
 * Pure code (no Node API): the offline verifier and a browser use it as the server does.
 */
import { bytesToHex } from '@noble/hashes/utils.js';
import { sha256 } from './hash.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { base64 } from '@scure/base';

const enc = new TextEncoder();
const ED25519 = 0x01;
const DASH = '\u2014';

export interface Checkpoint { origin: string; size: number; root: Uint8Array; extensions: string[] }

/** Why `name` cannot name a log or a key, or undefined (non-empty, no whitespace, no '+'). */
function badName(name: string): string | undefined {
  if (name === '' || /[\s+]/u.test(name)) return 'must be non-empty, without spaces or "+"';
  return undefined;
}

function keyHash(name: string, publicKey: Uint8Array): Uint8Array {
  return sha256(new Uint8Array([...enc.encode(`${name}\n`), ED25519, ...publicKey])).subarray(0, 4);
}

const hex = bytesToHex;

/** The verifier key string of an Ed25519 public key. */
export function verifierKey(name: string, publicKey: Uint8Array): string {
  const why = badName(name);
  if (why) throw new Error(`key name ${why}`);
  if (publicKey.length !== 32) throw new Error('an Ed25519 public key is 32 bytes');
  return `${name}+${hex(keyHash(name, publicKey))}+${base64.encode(new Uint8Array([ED25519, ...publicKey]))}`;
}

export interface Verifier { name: string; hash: Uint8Array; publicKey: Uint8Array }

/** Reads a verifier key string (Ed25519 only). */
export function parseVerifierKey(vkey: string): Verifier {
  const m = /^([^+\s]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/=]+)$/.exec(vkey.trim());
  if (!m) throw new Error('a verifier key is <name>+<8 hex digits>+<base64>');
  const raw = base64.decode(m[3]!);
  if (raw.length !== 33 || raw[0] !== ED25519) throw new Error('only Ed25519 verifier keys are supported');
  const publicKey = raw.subarray(1);
  const hash = keyHash(m[1]!, publicKey);
  if (hex(hash) !== m[2]) throw new Error('the verifier key\'s hash does not match its name and key');
  return { name: m[1]!, hash, publicKey };
}

/** The checkpoint text (what is signed). */
export function checkpointText(c: Checkpoint): string {
  if (c.origin === '' || c.origin.includes('\n')) throw new Error('the origin must be one non-empty line');
  if (!Number.isSafeInteger(c.size) || c.size < 0) throw new Error('the tree size must be a non-negative integer');
  if (c.root.length !== 32) throw new Error('the root hash is 32 bytes');
  return `${c.origin}\n${c.size}\n${base64.encode(c.root)}\n${c.extensions.map((e) => `${e}\n`).join('')}`;
}

/** Signs a note's text (one or more lines, each ending in a newline) with an Ed25519 key: the signed note. */
export function signNote(text: string, keyName: string, secretKey: Uint8Array): string {
  return signNoteWith(text, keyName, ed25519.getPublicKey(secretKey), (m) => ed25519.sign(m, secretKey));
}

/**
 * signNote with a signer that keeps its secret key to itself (the server's Vault): `sign` returns
 * the 64-byte Ed25519 signature of the bytes it is given with the key whose public key is `publicKey`.
 */
export function signNoteWith(text: string, keyName: string, publicKey: Uint8Array, sign: (message: Uint8Array) => Uint8Array): string {
  if (!text.endsWith('\n') || text.includes('\n\n')) throw new Error('a note\'s text is lines each ending in a newline, none empty');
  const why = badName(keyName);
  if (why) throw new Error(`key name ${why}`);
  const sig = sign(enc.encode(text));
  return `${text}\n${DASH} ${keyName} ${base64.encode(new Uint8Array([...keyHash(keyName, publicKey), ...sig]))}\n`;
}

/** Signs a checkpoint: the signed note's text. */
export function signCheckpoint(c: Checkpoint, keyName: string, secretKey: Uint8Array): string {
  return signNote(checkpointText(c), keyName, secretKey);
}

export class NoteError extends Error {}

/**
 * Opens a signed note: checks that a signature line of `verifier` verifies over its text and
 * returns the text. Throws NoteError saying what is wrong (malformed, unsigned by this key, forged).
 */
export function openNote(note: string, verifier: Verifier): string {
  const cut = note.lastIndexOf('\n\n');
  if (cut < 0 || !note.endsWith('\n')) throw new NoteError('not a signed note: no blank line before the signatures');
  const text = note.slice(0, cut + 1);
  const lines = note.slice(cut + 2, -1).split('\n');
  let found = false;
  for (const line of lines) {
    const m = new RegExp(`^${DASH} (\\S+) ([A-Za-z0-9+/=]+)$`).exec(line);
    if (!m) throw new NoteError(`not a signature line: ${JSON.stringify(line.slice(0, 80))}`);
    if (m[1] !== verifier.name) continue;
    const raw = base64.decode(m[2]!);
    if (raw.length !== 68 || hex(raw.subarray(0, 4)) !== hex(verifier.hash)) continue;
    found = true;
    if (!ed25519.verify(raw.subarray(4), enc.encode(text), verifier.publicKey)) throw new NoteError(`the signature of ${verifier.name} does not verify: the note was altered or forged`);
  }
  if (!found) throw new NoteError(`the note carries no signature of ${verifier.name}`);
  return text;
}

/** Opens a signed checkpoint (openNote) and parses its text. */
export function openCheckpoint(note: string, verifier: Verifier): Checkpoint {
  const text = openNote(note, verifier);
  const [origin, size, root, ...rest] = text.slice(0, -1).split('\n');
  if (origin === undefined || size === undefined || root === undefined || !/^(0|[1-9]\d*)$/.test(size)) throw new NoteError('the checkpoint text is not origin, size, root hash');
  let rootBytes: Uint8Array;
  try { rootBytes = base64.decode(root); } catch { throw new NoteError('the root hash is not base64'); }
  if (rootBytes.length !== 32) throw new NoteError('the root hash is not 32 bytes');
  const n = Number(size);
  if (!Number.isSafeInteger(n)) throw new NoteError('the tree size is too large');
  // C2SP tlog-checkpoint: extension lines are non-empty
  if (rest.some((line) => line === '')) throw new NoteError('the checkpoint has an empty extension line');
  return { origin, size: n, root: rootBytes, extensions: rest };
}

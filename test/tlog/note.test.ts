// Signed notes and checkpoints (src/tlog/note.ts). The independent truth is the example of Go's
// golang.org/x/mod/sumdb/note (the C2SP signed-note reference): its key, its text and the exact
// signed note Go prints; kmas must produce those bytes and verify them.
import { describe, it, expect } from 'vitest';
import { base64 } from '@scure/base';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { NoteError, openCheckpoint, openNote, parseVerifierKey, signCheckpoint, signNote, verifierKey, type Checkpoint } from '../../src/tlog/note.js';

const GO_SKEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz';
const GO_VKEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const GO_TEXT = 'If you think cryptography is the answer to your problem,\nthen you don\'t know what your problem is.\n';
const GO_NOTE = `${GO_TEXT}\n\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n`;
const goSeed = base64.decode(GO_SKEY.split('+').slice(4).join('+')).subarray(1);

describe('signed notes (C2SP, Go sumdb/note example)', () => {
  it('signs Go\'s example text to Go\'s exact note, derives Go\'s verifier key, and opens the note', () => {
    expect(signNote(GO_TEXT, 'PeterNeumann', goSeed)).toBe(GO_NOTE);
    expect(verifierKey('PeterNeumann', ed25519.getPublicKey(goSeed))).toBe(GO_VKEY);
    expect(openNote(GO_NOTE, parseVerifierKey(GO_VKEY))).toBe(GO_TEXT);
  });

  it('refuses an altered text, an altered signature, another key and a mangled verifier key', () => {
    const v = parseVerifierKey(GO_VKEY);
    expect(() => openNote(GO_NOTE.replace('cryptography', 'cryptographY'), v)).toThrow(NoteError);
    expect(() => openNote(GO_NOTE.replace('x08go', 'x08gp'), v)).toThrow(NoteError);
    const other = ed25519.utils.randomSecretKey();
    expect(() => openNote(signNote(GO_TEXT, 'PeterNeumann', other), v)).toThrow(/no signature of PeterNeumann/);
    expect(() => parseVerifierKey(GO_VKEY.replace('c74f20a3', 'c74f20a4'))).toThrow();
    expect(() => parseVerifierKey(GO_VKEY.slice(0, -2))).toThrow();
  });
});

describe('checkpoints (C2SP tlog-checkpoint)', () => {
  const key = ed25519.utils.randomSecretKey();
  const v = parseVerifierKey(verifierKey('kmas.example/log', ed25519.getPublicKey(key)));
  const cp: Checkpoint = { origin: 'kmas.example/org/4f7a', size: 1234, root: sha256(new Uint8Array([1])), extensions: [] };

  it('the text is origin, size and base64 root, one per line; signed and opened again', () => {
    const note = signCheckpoint(cp, 'kmas.example/log', key);
    expect(note.split('\n').slice(0, 4)).toEqual([cp.origin, '1234', base64.encode(cp.root), '']);
    expect(openCheckpoint(note, v)).toEqual(cp);
  });

  it('a checkpoint with a changed size or root, or signed by a foreign key, is refused', () => {
    const note = signCheckpoint(cp, 'kmas.example/log', key);
    expect(() => openCheckpoint(note.replace('\n1234\n', '\n1235\n'), v)).toThrow(/altered or forged/);
    expect(() => openCheckpoint(note.replace(base64.encode(cp.root), base64.encode(sha256(new Uint8Array([2])))), v)).toThrow(/altered or forged/);
    expect(() => openCheckpoint(signCheckpoint(cp, 'kmas.example/log', ed25519.utils.randomSecretKey()), v)).toThrow(/no signature/);
  });
});

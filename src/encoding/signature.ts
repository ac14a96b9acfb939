/** An ECDSA signature as the formats carry it: what the core makes (crypto/curves.ts) and the chains serialize. */
export interface RecoverableSignature {
  /** 64 bytes r‖s, big-endian (low-s). */
  signature: Uint8Array;
  /** 0 | 1 (2 | 3 only if r ≥ n, astronomically rare). */
  recovery: number;
}

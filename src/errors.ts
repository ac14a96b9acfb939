/**
 * The one error type of the server. Every failure that reaches a client is an ApiError and
 * becomes `{code, message, details}` (grpc-gateway rpcStatus) with the matching HTTP status.
 */

/** gRPC status codes used by the API (google.rpc.Code). */
export const Grpc = {
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;
export type GrpcCode = (typeof Grpc)[keyof typeof Grpc];

const DEFAULT_HTTP: Record<number, number> = {
  3: 400, 4: 504, 5: 404, 6: 409, 7: 403, 8: 429, 9: 400, 12: 501, 13: 500, 14: 503, 16: 401,
};

export interface FieldViolation { field: string; description: string }

export interface ApiErrorOptions {
  /** Overrides the HTTP status derived from the gRPC code (e.g. 413, 405). */
  httpStatus?: number;
  /** Stable machine code, sent as a TurnkeyErrorDetail. */
  turnkeyErrorCode?: string;
  fieldViolations?: FieldViolation[];
  /** Why, in words, for the request's log line only (never sent): a policy id, what was malformed. */
  reason?: string;
}

export class ApiError extends Error {
  readonly code: GrpcCode;
  readonly httpStatus: number;
  readonly turnkeyErrorCode?: string;
  readonly fieldViolations?: FieldViolation[];
  readonly reason?: string;

  constructor(code: GrpcCode, message: string, opts: ApiErrorOptions = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.httpStatus = opts.httpStatus ?? DEFAULT_HTTP[code] ?? 500;
    this.turnkeyErrorCode = opts.turnkeyErrorCode;
    this.fieldViolations = opts.fieldViolations;
    this.reason = opts.reason;
  }

  /** The `details` array of the rpcStatus reply. */
  details(): Record<string, unknown>[] {
    const out: Record<string, unknown>[] = [];
    if (this.turnkeyErrorCode) {
      out.push({ '@type': 'type.googleapis.com/errors.v1.TurnkeyErrorDetail', turnkeyErrorCode: this.turnkeyErrorCode });
    }
    if (this.fieldViolations && this.fieldViolations.length > 0) {
      out.push({ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: this.fieldViolations });
    }
    return out;
  }

  toStatus(): { code: number; message: string; details: Record<string, unknown>[] } {
    return { code: this.code, message: this.message, details: this.details() };
  }
}

/**
 * Turnkey's own messages for the refusals integrators meet (its error reference and its SDKs'
 * tests); kmas sends these texts unchanged, so code that matches on them works against both. The
 * README's refusal table lists every refusal with its source.
 */
export const TurnkeyMessage = {
  DENIED_EXPLICITLY: 'policy engine denied request explicitly',
  NOT_AUTHORIZED: 'request not authorized',
  STAMP_MISSING: 'cannot authenticate public API activity request without a stamp (X-Stamp/X-Stamp-Webauthn header)',
  STAMP_MALFORMED: 'malformed activity stamp',
  API_KEY_SIGNATURE: 'could not verify api key signature',
  WEBAUTHN_SIGNATURE: 'could not verify WebAuthN signature',
  PUBLIC_KEY_NOT_FOUND: 'could not find public key in organization or its parent organization',
  CREDENTIAL_NOT_FOUND: 'credential ID could not be found in organization or its parent organization',
  /** @turnkey/core recognizes an expired session by this text (its `apiKeyExpired` match). */
  API_KEY_EXPIRED: 'Unauthenticated desc = expired api key publicKey',
  ORGANIZATION_NOT_FOUND: 'no organization found with the given ID',
  ORGANIZATION_ID_MALFORMED: 'malformed organization ID provided',
  BAD_BODY: 'bad request body',
  FINGERPRINT_NOT_FOUND: 'No activity found with fingerprint. Consensus activities must target an existing activity by fingerprint',
  INTERNAL: 'internal server error',
} as const;

export const invalidArgument = (message: string, fieldViolations?: FieldViolation[]) =>
  new ApiError(Grpc.INVALID_ARGUMENT, message, { turnkeyErrorCode: 'REQUEST_INVALID', fieldViolations });
export const notFound = (message: string, turnkeyErrorCode = 'NOT_FOUND') =>
  new ApiError(Grpc.NOT_FOUND, message, { turnkeyErrorCode });
export const permissionDenied = (message: string, turnkeyErrorCode = 'REQUEST_NOT_AUTHORIZED') =>
  new ApiError(Grpc.PERMISSION_DENIED, message, { turnkeyErrorCode });
export const unauthenticated = (message: string, turnkeyErrorCode = 'UNAUTHENTICATED', reason?: string) =>
  new ApiError(Grpc.UNAUTHENTICATED, message, { turnkeyErrorCode, reason });
export const alreadyExists = (message: string) =>
  new ApiError(Grpc.ALREADY_EXISTS, message, { turnkeyErrorCode: 'ALREADY_EXISTS' });
export const failedPrecondition = (message: string) =>
  new ApiError(Grpc.FAILED_PRECONDITION, message, { turnkeyErrorCode: 'FAILED_PRECONDITION' });

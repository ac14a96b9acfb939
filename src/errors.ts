/**
 * The one error type of the server. Every failure that reaches a client is an ApiError and
 * becomes `{code, message, details}` (grpc-gateway rpcStatus) with the matching HTTP status.
 */

/** gRPC status codes used by the API (google.rpc.Code). */
export const Grpc = {
  INVALID_ARGUMENT: 3,
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
  3: 400, 5: 404, 6: 409, 7: 403, 8: 429, 9: 400, 12: 501, 13: 500, 14: 503, 16: 401,
};

export interface FieldViolation { field: string; description: string }

export interface ApiErrorOptions {
  /** Overrides the HTTP status derived from the gRPC code (e.g. 413, 405). */
  httpStatus?: number;
  /** Stable machine code, sent as a TurnkeyErrorDetail. */
  turnkeyErrorCode?: string;
  fieldViolations?: FieldViolation[];
}

export class ApiError extends Error {
  readonly code: GrpcCode;
  readonly httpStatus: number;
  readonly turnkeyErrorCode?: string;
  readonly fieldViolations?: FieldViolation[];

  constructor(code: GrpcCode, message: string, opts: ApiErrorOptions = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.httpStatus = opts.httpStatus ?? DEFAULT_HTTP[code] ?? 500;
    this.turnkeyErrorCode = opts.turnkeyErrorCode;
    this.fieldViolations = opts.fieldViolations;
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

export const invalidArgument = (message: string, fieldViolations?: FieldViolation[]) =>
  new ApiError(Grpc.INVALID_ARGUMENT, message, { turnkeyErrorCode: 'REQUEST_INVALID', fieldViolations });
export const notFound = (message: string, turnkeyErrorCode = 'NOT_FOUND') =>
  new ApiError(Grpc.NOT_FOUND, message, { turnkeyErrorCode });
export const permissionDenied = (message: string, turnkeyErrorCode = 'REQUEST_NOT_AUTHORIZED') =>
  new ApiError(Grpc.PERMISSION_DENIED, message, { turnkeyErrorCode });
export const unauthenticated = (message: string, turnkeyErrorCode = 'UNAUTHENTICATED') =>
  new ApiError(Grpc.UNAUTHENTICATED, message, { turnkeyErrorCode });
export const alreadyExists = (message: string) =>
  new ApiError(Grpc.ALREADY_EXISTS, message, { turnkeyErrorCode: 'ALREADY_EXISTS' });
export const failedPrecondition = (message: string) =>
  new ApiError(Grpc.FAILED_PRECONDITION, message, { turnkeyErrorCode: 'FAILED_PRECONDITION' });

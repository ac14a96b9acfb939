/**
 * The database cannot be reached (refused, reset, shut down, no connection to be had in time).
 * What was asked may or may not have happened: the API answers 503 and a client retries with the
 * same body (idempotency returns what was stored, if anything was).
 */
export class StorageUnavailableError extends Error {
  constructor(readonly cause: unknown) {
    super(`the database is not available (${cause instanceof Error ? cause.message.split('\n')[0]!.slice(0, 200) : String(cause)})`);
    this.name = 'StorageUnavailableError';
  }
}

/** The synchronous form of a repository interface (what the SQLite adapter implements over better-sqlite3). */
export type Sync<T> = {
  [K in keyof T]: T[K] extends (...a: infer A) => Promise<infer R> ? (...a: A) => R : Sync<T[K]>;
};

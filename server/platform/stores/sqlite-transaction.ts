import type { DatabaseSync } from 'node:sqlite';

/**
 * How a transaction takes the file's lock: `read` starts deferred, taking a shared lock at its
 * first read; `write` starts IMMEDIATE, taking the write lock at once. A transaction that reads
 * and then writes must be `write`: started deferred, two processes could both read, then both
 * wait to write, and one gets SQLITE_BUSY however long the busy timeout.
 */
export type TransactionMode = 'read' | 'write';

/**
 * `fn` wrapped in one transaction of `db`: committed when it returns, rolled back when it
 * throws (the error goes on). node:sqlite has no helper of its own for this. The functions are
 * synchronous, as node:sqlite is, so nothing else on this connection can run in between.
 */
export function transaction<Args extends unknown[], Result>(db: DatabaseSync, mode: TransactionMode, fn: (...args: Args) => Result): (...args: Args) => Result {
  const begin = db.prepare(mode === 'write' ? 'BEGIN IMMEDIATE' : 'BEGIN');
  const commit = db.prepare('COMMIT');
  const rollback = db.prepare('ROLLBACK');
  return (...args) => {
    begin.run();
    let result: Result;
    try {
      result = fn(...args);
    } catch (error) {
      if (db.isTransaction) rollback.run();
      throw error;
    }
    commit.run();
    return result;
  };
}

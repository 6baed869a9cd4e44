// One `feedsub serve` (or `poll --once`) per data directory: an exclusive SQLite lock on data_dir/feedsub.lock, held
// by a connection of its own for the life of the process. SQLite's locks are POSIX record locks (fcntl), which the kernel
// drops when the process ends in any way, SIGKILL included: a crash never leaves a stale lock, unlike a pid file (racy,
// and PIDs are recycled).
import Database from 'better-sqlite3';
import { join, resolve } from 'node:path';
import { nativeBindingPath } from '../assets.ts';
import { restrictFile } from './open.ts';

/** The lock file, beside the database. It stays empty; only its lock matters, so it may be left in place. */
export const LOCK_FILE = 'feedsub.lock';

/** Another live process holds the data directory's lock: `serve` refuses to start, `poll --once` to poll (the CLI
 *  exits with code 2). */
export class DataDirLockedError extends Error {
  override name = 'DataDirLockedError';
}

export type DataDirLock = {
  readonly file: string;
  /** Gives the lock back (at stop, after the database is closed). Idempotent. */
  release(): void;
};

/** Takes the lock on `dataDir` (which must exist) at once, or throws DataDirLockedError when another process (or another
 *  lock in this one) holds it. `serve` and `poll --once` take it; short commands (keys, backup, config check) do not,
 *  so they work beside `serve`. */
export function lockDataDir(dataDir: string): DataDirLock {
  const file = resolve(join(dataDir, LOCK_FILE));
  restrictFile(file, true);
  const binding = nativeBindingPath();
  // timeout 0: a held lock is refused at once instead of after SQLite's busy wait.
  const db = new Database(file, { timeout: 0, ...(binding ? { nativeBinding: binding } : {}) });
  try {
    // In the default rollback-journal mode, BEGIN EXCLUSIVE takes the file's EXCLUSIVE lock now and keeps it until the
    // transaction ends: no other connection, in any process, can then even read the file, let alone lock it.
    db.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    db.close();
    if ((err as { code?: unknown }).code === 'SQLITE_BUSY')
      throw new DataDirLockedError(
        `db: unable to lock the data directory ${resolve(dataDir)}: another feedsub serve is running on it, or a feedsub poll --once (it holds ${file}); stop it first, or give this one another --data-dir`,
      );
    throw err;
  }
  return {
    file,
    release() {
      if (!db.open) return;
      db.exec('ROLLBACK');
      db.close();
    },
  };
}

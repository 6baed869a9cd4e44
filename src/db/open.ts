// Opens the SQLite database: owner-only files, pragmas once, schema.sql for a new file, migrations by PRAGMA user_version.
import Database from 'better-sqlite3';
import { chmodSync, closeSync, fchmodSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { nativeBindingPath, readSchemaSql } from '../assets.ts';
import { MIGRATIONS, SCHEMA_VERSION } from './migrations.ts';

export type Db = Database.Database;

/** The data directory's mode when feedsub creates it, whatever the umask: the database holds endpoint signing secrets,
 *  feed credentials and key hashes, so only its owner may list or enter it. */
export const DATA_DIR_MODE = 0o700;
/** The mode of the database, its -wal and -shm files and the lock file, whatever the umask. */
export const DATA_FILE_MODE = 0o600;

/** What the WAL file is cut back to whenever SQLite starts it over (a writer does, once the checkpoint thread has
 *  copied it all): it keeps its largest size otherwise, which a big transaction can make hundreds of MiB. Cutting it
 *  there costs a truncate, where a TRUNCATE checkpoint also waits for readers and syncs, on the event loop. */
export const WAL_SIZE_LIMIT_BYTES = 16 * 1024 * 1024;

/** Opens (creating if needed) the database at `file`, or in memory for ':memory:'. Throws when it cannot. */
export function openDatabase(file: string): Db {
  if (file !== ':memory:') {
    ensureDataDir(dirname(file));
    // Before SQLite opens it: created 0600 here, the file never exists with a wider mode, and SQLite gives the -wal and
    // -shm files it creates the database file's mode (os_unix.c, robust_open fchmods them past the umask).
    for (const suffix of ['', '-wal', '-shm']) restrictFile(file + suffix, suffix === '');
  }
  const binding = nativeBindingPath();
  const db = new Database(file, binding ? { nativeBinding: binding } : {});
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
  migrate(db);
  return db;
}

/** Creates `dir` and its missing parents with DATA_DIR_MODE; an existing directory is left as it is (it may be shared
 *  on purpose: the daemon warns when it is open to others). Returns whether it was created and its mode now. */
export function ensureDataDir(dir: string): { created: boolean; mode: number } {
  const existing = modeOf(dir);
  if (existing !== undefined) return { created: false, mode: existing };
  const first = mkdirSync(dir, { recursive: true, mode: DATA_DIR_MODE });
  // mkdir's mode passes through the umask (which may also take the owner's bits): set it exactly, parents included.
  if (first !== undefined) {
    let path = first;
    chmodSync(path, DATA_DIR_MODE);
    for (const part of relative(first, dir).split(sep).filter(Boolean))
      chmodSync((path = join(path, part)), DATA_DIR_MODE);
  }
  return { created: true, mode: DATA_DIR_MODE };
}

/** Makes `file` owner-only: creates it (when `create`) with DATA_FILE_MODE, or tightens an existing one with a wider
 *  mode (a database left by an older version, or restored by hand). A file we may not chmod (another owner's) is left
 *  for SQLite to open or refuse. */
export function restrictFile(file: string, create: boolean): void {
  const mode = modeOf(file);
  if (mode === undefined) {
    if (!create) return;
    const fd = openSync(file, 'a', DATA_FILE_MODE);
    try {
      fchmodSync(fd, DATA_FILE_MODE); // exactly 0600, whatever the umask took away
    } finally {
      closeSync(fd);
    }
    return;
  }
  if (mode === DATA_FILE_MODE) return;
  try {
    chmodSync(file, DATA_FILE_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
  }
}

/** The permission bits of `path`, or undefined when it does not exist. */
function modeOf(path: string): number | undefined {
  try {
    return statSync(path).mode & 0o777;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Brings the schema to the latest version: a new database gets schema.sql (already the latest). */
function migrate(db: Db): void {
  const latest = SCHEMA_VERSION;
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version === 0) {
    db.transaction(() => {
      db.exec(readSchemaSql());
      db.pragma(`user_version = ${latest}`);
    })();
    return;
  }
  if (version > latest)
    throw new Error(
      `db: unable to open a database of schema version ${version}; this feedsub knows up to ${latest}`,
    );
  // A step may rebuild a table that others reference (SQLite's way to change a constraint: create, copy, drop, rename),
  // which needs foreign keys off: enforced, dropping the old table would delete or refuse its children's rows. They are
  // checked before each step commits, and on again after the last.
  db.pragma('foreign_keys = OFF');
  try {
    for (let v = version; v < latest; v++) {
      db.transaction(() => {
        MIGRATIONS[v - 1]!(db);
        const broken = db.pragma('foreign_key_check') as unknown[];
        if (broken.length > 0)
          throw new Error(
            `db: the upgrade to schema version ${v + 1} left ${broken.length} rows without their parent`,
          );
        db.pragma(`user_version = ${v + 1}`);
      })();
    }
  } finally {
    db.pragma('foreign_keys = ON');
  }
}

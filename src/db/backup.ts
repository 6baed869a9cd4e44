// Online backup: a consistent copy of the live database through SQLite's backup API, safe while `serve` writes to it.
import Database from 'better-sqlite3';
import { closeSync, existsSync, linkSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { nativeBindingPath } from '../assets.ts';

export type BackupResult = { file: string; bytes: number; pages: number; durationMs: number };

/** Thrown when the destination exists and `force` was not given; the CLI turns it into a usage error. */
export class BackupExistsError extends Error {
  constructor(file: string) {
    super(`backup: ${file} already exists; pass --force to overwrite it`);
    this.name = 'BackupExistsError';
  }
}

/**
 * Copies the database at `source` to `dest` and returns the copy's size and the time taken. Throws when the source does
 * not exist, when `dest` exists and `force` is false (BackupExistsError), or when the copy fails its quick_check.
 * The copy is written next to `dest` under a temporary name and moved into place only when complete and checked, so
 * `dest` never holds half a backup.
 */
export async function backupDatabase(
  source: string,
  dest: string,
  opts: { force?: boolean; now?: () => number } = {},
): Promise<BackupResult> {
  const now = opts.now ?? (() => performance.now());
  const started = now();
  const target = resolve(dest);
  if (!existsSync(source)) throw new Error(`backup: no database at ${source}`);
  if (existsSync(target) && sameFile(source, target))
    throw new Error(`backup: ${target} is the database itself; choose another file`);
  if (!opts.force && existsSync(target)) throw new BackupExistsError(target);
  const temp = join(dirname(target), `.${basename(target)}.partial-${process.pid}`);
  const binding = nativeBindingPath();
  // No migrations and no schema: a backup copies the file as it is, whatever version wrote it.
  const db = new Database(source, {
    fileMustExist: true,
    ...(binding ? { nativeBinding: binding } : {}),
  });
  try {
    db.pragma('busy_timeout = 5000');
    rmSync(temp, { force: true });
    // Created empty and owner-only first: the database holds endpoint secrets, so the copy must not be world-readable.
    closeSync(openSync(temp, 'wx', 0o600));
    // The first step only measures the source; returning the remaining page count makes the next step copy every
    // page at once under one read transaction. With smaller steps, each write by the running daemon (another
    // connection) would restart the copy, and a busy daemon could keep it from ever finishing. In WAL mode that read
    // transaction does not block the daemon's writes.
    const progress = await db.backup(temp, { progress: ({ remainingPages }) => remainingPages });
    checkCopy(temp, binding);
    place(temp, target, opts.force === true);
    return {
      file: target,
      bytes: statSync(target).size,
      pages: progress.totalPages,
      durationMs: now() - started,
    };
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  } finally {
    db.close();
  }
}

function sameFile(a: string, b: string): boolean {
  const [x, y] = [statSync(a), statSync(b)];
  return x.dev === y.dev && x.ino === y.ino;
}

/** Opens the copy on its own and runs PRAGMA quick_check; throws unless it answers "ok". */
function checkCopy(file: string, binding: string | undefined): void {
  const copy = new Database(file, {
    fileMustExist: true,
    ...(binding ? { nativeBinding: binding } : {}),
  });
  try {
    const result = copy.pragma('quick_check', { simple: true });
    if (result !== 'ok')
      throw new Error(`backup: the copy failed its integrity check: ${String(result)}`);
    // The copy keeps the source's WAL mode; fold any WAL it grew while being checked back into the one file.
    copy.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    copy.close();
  }
  for (const suffix of ['-wal', '-shm']) rmSync(file + suffix, { force: true });
}

/** Moves the finished copy to `target`: a hard link refuses an existing file atomically; with `force`, rename replaces it.
 *  On a file system without hard links it falls back to checking for the file and renaming. */
function place(temp: string, target: string, force: boolean): void {
  if (force) {
    renameSync(temp, target);
    return;
  }
  try {
    linkSync(temp, target);
    rmSync(temp, { force: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST' || existsSync(target))
      throw new BackupExistsError(target);
    renameSync(temp, target);
  }
}

// `feedsub storage copy --to URL`: the configured SQLite database copied into an empty PostgreSQL database (db/copy.ts),
// with progress on stderr, the row counts of every table on stdout, and the switch to make next. The SQLite file is
// opened read-only and read in one transaction: one consistent snapshot, also beside a running serve. The URL's password
// is never printed, nor left in an error message.
import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { nativeBindingPath, readPostgresSchemaSql } from './assets.ts';
import { databaseFile } from './db/connect.ts';
import { isPostgresUrl, redactUrl, withoutPassword, type Config } from './config.ts';
import { copySqliteToPostgres, type CopyProgress } from './db/copy.ts';
import { DataDirLockedError, lockDataDir, type DataDirLock } from './db/lock.ts';
import type { Db } from './db/open.ts';
import { PostgresEngine } from './db/postgres-engine.ts';
import { ConfigError } from './errors.ts';

/** Where the command writes: `stdout` the summary, `stderr` progress and warnings; one line per call. */
export type CopyOutput = { stdout(line: string): void; stderr(line: string): void };

/** A table's progress line at most this often, besides the line at its end. */
const PROGRESS_EVERY_MS = 1000;

/** Copies the database of `config`'s data directory into the empty PostgreSQL database at `toUrl` and resolves with
 *  each table's row count. Throws ConfigError for a URL that is not postgres:// or postgresql:// (or that pg cannot
 *  read), or when there is no database to copy; an Error, whose message never holds the URL's password, when the copy
 *  fails or the target is not empty (nothing is left written but feedsub's empty schema). While no serve runs, it holds
 *  the data directory's lock, so none starts and writes past the snapshot; beside a running serve it warns that later
 *  writes are not copied. */
export async function runStorageCopy(
  config: Config,
  toUrl: string,
  out: CopyOutput,
  opts: { now?: () => number; progressEveryMs?: number } = {},
): Promise<Record<string, number>> {
  const now = opts.now ?? (() => performance.now());
  const every = opts.progressEveryMs ?? PROGRESS_EVERY_MS;
  if (!isPostgresUrl(toUrl))
    throw new ConfigError(
      // The refused value is not quoted: it may hold a password, in a form redactUrl does not know.
      'storage copy: --to must be a postgres:// or postgresql:// URL',
    );
  const file = databaseFile(config);
  if (!existsSync(file))
    throw new ConfigError(
      `storage copy: no database at ${file} (check --data-dir or storage.data_dir)`,
    );
  const shown = redactUrl(toUrl);
  let lock: DataDirLock | undefined;
  try {
    lock = lockDataDir(dirname(file));
  } catch (err) {
    if (!(err instanceof DataDirLockedError)) throw err;
    out.stderr(
      'storage copy: warning: a feedsub serve (or poll --once) is running on this data directory; the copy is a snapshot ' +
        'of this moment, and what it writes later is not copied: stop it and copy again into a new database before switching',
    );
  }
  const started = now();
  out.stderr(`storage copy: copying ${file} to ${shown}`);
  // A line at each table's end, and between two, a line once `every` ms have passed since the last one.
  let shownAt = now();
  const progress = (p: CopyProgress) => {
    if (!p.done && now() - shownAt < every) return;
    shownAt = now();
    out.stderr(`storage copy: ${p.table} ${p.copied}/${p.total} rows${p.done ? ', done' : ''}`);
  };
  let counts: Record<string, number>;
  let db: Db | undefined;
  let target: PostgresEngine | undefined;
  try {
    db = openReadOnly(file);
    target = new PostgresEngine({
      url: toUrl,
      poolSize: 1,
      connectTimeoutMs: 10_000,
      // A statement is one batch of rows: a slow server may take a while, but not forever.
      statementTimeoutMs: 600_000,
      applicationName: 'feedsub storage copy',
    });
    await reach(target, shown);
    counts = await copySqliteToPostgres(db, target, readPostgresSchemaSql(), progress);
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(withoutPassword(err.message, toUrl));
    const message = err instanceof Error ? err.message : String(err);
    throw new Error(`storage copy: ${withoutPassword(message.replace(/^(copy|db): /, ''), toUrl)}`);
  } finally {
    await target?.close().catch(() => {});
    db?.close();
    lock?.release();
  }
  const seconds = ((now() - started) / 1000).toFixed(1);
  const tables = Object.keys(counts);
  const rows = Object.values(counts).reduce((a, b) => a + b, 0);
  const width = Math.max(...tables.map((t) => t.length), 'total'.length);
  const digits = String(rows).length;
  out.stdout(
    `Copied ${file} to ${shown} in ${seconds} s: ${tables.length} tables, ${rows} rows, every table's count checked.`,
  );
  for (const table of tables)
    out.stdout(`  ${table.padEnd(width)}  ${String(counts[table]).padStart(digits)}`);
  out.stdout(`  ${'total'.padEnd(width)}  ${String(rows).padStart(digits)}`);
  out.stdout(
    'Next: with feedsub serve stopped, set storage.database_url in the config (or FEEDSUB_STORAGE_DATABASE_URL) to ' +
      'this URL, then start feedsub serve: it runs on PostgreSQL from then on, and the SQLite file is left as it was.',
  );
  return counts;
}

/** Connects to the target once before anything else, so that a URL pg cannot read or a server it cannot reach is
 *  reported as such. */
async function reach(target: PostgresEngine, shown: string): Promise<void> {
  try {
    await target.value('SELECT 1');
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if ((err as { code?: unknown }).code === 'ERR_INVALID_URL')
      throw new ConfigError(`storage copy: --to is not a valid URL: ${shown}`);
    throw new Error(`copy: unable to connect to ${shown}: ${message}`);
  }
}

/** The database file opened read-only (no schema, no migration: db/copy.ts checks the version), waiting out a write
 *  lock held for a moment by a serve beside it. */
function openReadOnly(file: string): Db {
  const binding = nativeBindingPath();
  const db = new Database(file, {
    readonly: true,
    fileMustExist: true,
    ...(binding ? { nativeBinding: binding } : {}),
  });
  db.pragma('busy_timeout = 5000');
  return db;
}

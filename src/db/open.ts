// Opens the SQLite database: pragmas once, schema.sql for a new file, numbered migrations by PRAGMA user_version.
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { nativeBindingPath, readSchemaSql } from '../assets.ts';
import { MIGRATIONS } from './migrations.ts';

export type Db = Database.Database;

/** Opens (creating if needed) the database at `file`, or in memory for ':memory:'. Throws when it cannot. */
export function openDatabase(file: string): Db {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const binding = nativeBindingPath();
  const db = new Database(file, binding ? { nativeBinding: binding } : {});
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
}

/** Brings the schema to the latest version: a new database gets schema.sql (already the latest). */
function migrate(db: Db): void {
  const latest = MIGRATIONS.length + 1;
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
  for (let v = version; v < latest; v++) {
    db.transaction(() => {
      MIGRATIONS[v - 1]!(db);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}

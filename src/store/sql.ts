// Prepared-statement reuse: preparing costs more than running most of our queries, so each database keeps its statements.
import type { Statement } from 'better-sqlite3';
import type { Db } from '../db/open.ts';

// A memo keyed by the database object itself: it holds no state of its own and dies with the database.
const caches = new WeakMap<Db, Map<string, Statement>>();

/** The prepared statement for `sql` on `db`, prepared once per database. */
export function prepared(db: Db, sql: string): Statement {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map()));
  let stmt = cache.get(sql);
  if (!stmt) cache.set(sql, (stmt = db.prepare(sql)));
  return stmt;
}

// Statement helpers shared by the store's modules.
import type { Sql } from '../db/engine.ts';

/** Column names only ever come from our own code; this guards against one slipping in from elsewhere. */
const COLUMN = /^[a-z_][a-z0-9_]*$/;

/**
 * Runs `UPDATE <table> SET <column> = <value>, … WHERE <column> = <value> AND …` for every key of `set` whose value is
 * not undefined, plus `extra` SET clauses written in SQL (such as `error_count = error_count + 1`). Updates
 * `updated_at` to `now`. Returns the number of rows changed; 0 without running anything when there is nothing to set.
 * Throws on a key that is not a plain column name.
 */
export async function updateRow(
  db: Sql,
  table: string,
  set: Record<string, unknown>,
  where: Record<string, unknown>,
  now: Date,
  extra: string[] = [],
): Promise<number> {
  // updated_at is always `now` (a column may be set once in a statement).
  const columns = Object.keys(set).filter((k) => set[k] !== undefined && k !== 'updated_at');
  if (columns.length === 0 && extra.length === 0) return 0;
  const keys = Object.keys(where);
  for (const name of [table, ...columns, ...keys]) {
    if (!COLUMN.test(name))
      throw new Error(`store: unable to update ${table}: bad column name ${name}`);
  }
  const params: Record<string, unknown> = { updated_at: now.toISOString() };
  for (const c of columns) params[`s_${c}`] = set[c];
  for (const k of keys) params[`w_${k}`] = where[k];
  const sets = [...columns.map((c) => `${c} = @s_${c}`), ...extra, 'updated_at = @updated_at'];
  const sql = `UPDATE ${table} SET ${sets.join(', ')} WHERE ${keys.map((k) => `${k} = @w_${k}`).join(' AND ')}`;
  return db.run(sql, params);
}

/** A subquery of the values in the JSON array that parameter `param` holds (a list passed as one JSON text):
 *  `x IN (${jsonValues(db, '@ids')})`. Its values are text, or `bigint` numbers. */
export function jsonValues(db: Sql, param: string, type: 'text' | 'bigint' = 'text'): string {
  return db.dialect === 'sqlite'
    ? `SELECT value FROM json_each(${param})`
    : `SELECT value${type === 'bigint' ? '::bigint' : ''} FROM json_array_elements_text(${param}::json) AS j(value)`;
}

/** The text at `path` (dot-separated keys) in JSON text column `column`, as `->>` reads it: the expression the JSON
 *  expression indexes are made on, spelled for the engine. */
export function jsonText(db: Sql, column: string, path: string): string {
  const keys = path.split('.');
  if (db.dialect === 'sqlite') return `${column} ->> '$.${path}'`;
  return keys.length === 1
    ? `(${column}::json ->> '${path}')`
    : `(${column}::json #>> '{${keys.join(',')}}')`;
}

/** SQLite's ` INDEXED BY <index>`, which pins a statement's index where its planner would pick a worse one; PostgreSQL
 *  has no such hint (its planner weighs the statistics ANALYZE keeps), so there it is nothing. */
export function indexedBy(db: Sql, index: string): string {
  return db.dialect === 'sqlite' ? ` INDEXED BY ${index}` : '';
}

/** The larger of two values: SQLite's scalar max(a, b), PostgreSQL's greatest(a, b) (both NULL when either is). */
export function larger(db: Sql, a: string, b: string): string {
  return db.dialect === 'sqlite' ? `max(${a}, ${b})` : `greatest(${a}, ${b})`;
}

/** The smaller of two values: SQLite's scalar min(a, b), PostgreSQL's least(a, b) (for values that are not NULL). */
export function smaller(db: Sql, a: string, b: string): string {
  return db.dialect === 'sqlite' ? `min(${a}, ${b})` : `least(${a}, ${b})`;
}

/** Column `column` as an expression SQLite's planner does not seek an index by (unary `+`, SQLite's way to turn an index
 *  off for one term); PostgreSQL's planner needs no such hint, and has no `+` for text. */
export function unindexed(db: Sql, column: string): string {
  return db.dialect === 'sqlite' ? `+${column}` : column;
}

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
  const columns = Object.keys(set).filter((k) => set[k] !== undefined);
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

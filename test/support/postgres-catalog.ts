// The tables of a PostgreSQL database as its catalog has them, in the shape the schema tests compare: columns in
// order, primary key, unique constraints and indexes.
import assert from 'node:assert/strict';
import type pg from 'pg';

/** A table as both catalogs are compared: columns in order, its primary key, its unique constraints and its indexes. */
export type Table = {
  columns: { name: string; type: string; notNull: boolean; default: string | null }[];
  primaryKey: string[];
  unique: string[];
  indexes: string[];
};

/** SQLite's rowid, read by the store where rows keep their insertion order, is a column of that name on PostgreSQL. */
export const ROWID_COLUMNS = ['events.rowid', 'entry_history.rowid'];

/** The tables of the public schema, with the text columns' collation checked to be "C" on the way. */
export async function postgresTables(client: pg.Client): Promise<Map<string, Table>> {
  const tables = new Map<string, Table>();
  const cols = (
    await client.query<{
      table_name: string;
      column_name: string;
      data_type: string;
      is_nullable: string;
      column_default: string | null;
      is_identity: string;
      collation_name: string | null;
    }>(
      `SELECT table_name, column_name, data_type, is_nullable, column_default, is_identity, collation_name
         FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`,
    )
  ).rows;
  const indexes = (
    await client.query<{
      table_name: string;
      index_name: string;
      is_unique: boolean;
      is_primary: boolean;
      partial: boolean;
      constraint_type: string | null;
      columns: string[];
    }>(
      `SELECT t.relname AS table_name, i.relname AS index_name, x.indisunique AS is_unique,
              x.indisprimary AS is_primary, x.indpred IS NOT NULL AS partial,
              (SELECT c.contype::text FROM pg_constraint c WHERE c.conindid = x.indexrelid LIMIT 1) AS constraint_type,
              ARRAY(SELECT COALESCE(a.attname::text, '(expression)')
                      FROM unnest(x.indkey::int2[]) WITH ORDINALITY k(attnum, n)
                      LEFT JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum AND k.attnum > 0
                     ORDER BY k.n) AS columns
         FROM pg_index x
         JOIN pg_class i ON i.oid = x.indexrelid
         JOIN pg_class t ON t.oid = x.indrelid
         JOIN pg_namespace s ON s.oid = t.relnamespace
        WHERE s.nspname = 'public'`,
    )
  ).rows;
  for (const c of cols) {
    if (c.data_type === 'text')
      assert.equal(c.collation_name, 'C', `${c.table_name}.${c.column_name} sorts by bytes`);
    let table = tables.get(c.table_name);
    if (!table)
      tables.set(c.table_name, (table = { columns: [], primaryKey: [], unique: [], indexes: [] }));
    if (ROWID_COLUMNS.includes(`${c.table_name}.${c.column_name}`)) continue;
    table.columns.push({
      name: c.column_name,
      type: c.is_identity === 'YES' ? `${c.data_type} identity` : c.data_type,
      notNull: c.is_nullable === 'NO',
      default: c.column_default?.replace(/::text$/, '') ?? null,
    });
  }
  for (const i of indexes) {
    const table = tables.get(i.table_name)!;
    if (i.columns.length === 1 && ROWID_COLUMNS.includes(`${i.table_name}.${i.columns[0]}`))
      continue;
    if (i.is_primary) table.primaryKey = i.columns;
    else if (i.constraint_type === 'u') table.unique.push(i.columns.join(', '));
    else
      table.indexes.push(
        `${i.index_name}${i.is_unique ? ' unique' : ''}${i.partial ? ' partial' : ''} (${i.columns.join(', ')})`,
      );
  }
  for (const table of tables.values()) {
    table.unique.sort();
    table.indexes.sort();
  }
  return tables;
}

// schema-postgres.sql says in PostgreSQL what schema.sql says in SQLite: the same tables, columns, nullability,
// defaults, primary keys, unique constraints and indexes, read back from each database's catalog.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { openDatabase, type Db } from '../../src/db/open.ts';
import { sharedPostgres } from '../support/postgres.ts';

const PG_SCHEMA = fileURLToPath(new URL('../../schema-postgres.sql', import.meta.url));

/** A table as both catalogs are compared: columns in order, its primary key, its unique constraints and its indexes. */
type Table = {
  columns: { name: string; type: string; notNull: boolean; default: string | null }[];
  primaryKey: string[];
  unique: string[];
  indexes: string[];
};

/** SQLite's rowid, read by the store where rows keep their insertion order, is a column of that name on PostgreSQL. */
const ROWID_COLUMNS = ['events.rowid', 'entry_history.rowid'];

/** Columns as SQLite's catalog shows them: a primary key column counts as NOT NULL (as on PostgreSQL), types map
 *  TEXT → text and INTEGER → bigint, and an INTEGER PRIMARY KEY (a rowid alias) as an identity column. */
function sqliteTables(db: Db): Map<string, Table> {
  const tables = new Map<string, Table>();
  const names = db
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .pluck()
    .all() as string[];
  for (const name of names) {
    const cols = db.prepare(`PRAGMA table_info(${name})`).all() as {
      name: string;
      type: string;
      notnull: number;
      dflt_value: string | null;
      pk: number;
    }[];
    const rowidAlias =
      cols.filter((c) => c.pk > 0).length === 1 &&
      cols.some((c) => c.pk > 0 && c.type === 'INTEGER');
    const indexList = db.prepare(`PRAGMA index_list(${name})`).all() as {
      name: string;
      unique: number;
      origin: string;
      partial: number;
    }[];
    const columnsOf = (index: string) =>
      (db.prepare(`PRAGMA index_info(${index})`).all() as { seqno: number; name: string | null }[])
        .sort((a, b) => a.seqno - b.seqno)
        .map((c) => c.name ?? '(expression)')
        .join(', ');
    tables.set(name, {
      columns: cols.map((c) => ({
        name: c.name,
        type:
          c.pk > 0 && rowidAlias
            ? 'bigint identity'
            : c.type === 'INTEGER'
              ? 'bigint'
              : c.type.toLowerCase(),
        notNull: c.notnull === 1 || c.pk > 0,
        default: c.dflt_value,
      })),
      primaryKey: cols
        .filter((c) => c.pk > 0)
        .sort((a, b) => a.pk - b.pk)
        .map((c) => c.name),
      unique: indexList
        .filter((i) => i.origin === 'u')
        .map((i) => columnsOf(i.name))
        .sort(),
      indexes: indexList
        .filter((i) => i.origin === 'c')
        .map(
          (i) =>
            `${i.name}${i.unique ? ' unique' : ''}${i.partial ? ' partial' : ''} (${columnsOf(i.name)})`,
        )
        .sort(),
    });
  }
  return tables;
}

/** The same from PostgreSQL's catalog, with the text columns' collation checked to be "C" on the way. */
async function postgresTables(client: pg.Client): Promise<Map<string, Table>> {
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

describe('the PostgreSQL schema', () => {
  let client: pg.Client;
  let db: Db;
  before(async () => {
    client = new pg.Client({ connectionString: await (await sharedPostgres()).newDatabase() });
    await client.connect();
    await client.query(readFileSync(PG_SCHEMA, 'utf8'));
    db = openDatabase(':memory:');
  });
  after(async () => {
    db?.close();
    await client?.end();
  });

  it('has the tables of the SQLite schema, with the same columns, keys and indexes', async () => {
    const want = sqliteTables(db);
    const got = await postgresTables(client);
    assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort());
    for (const [name, table] of want) assert.deepEqual(got.get(name), table, name);
  });

  it('keeps each table of a rowid the store reads a unique rowid, numbered in insertion order', async () => {
    const got = await client.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.columns
        WHERE table_schema = 'public' AND column_name = 'rowid' AND is_identity = 'YES' ORDER BY table_name`,
    );
    assert.deepEqual(
      got.rows.map((r) => r.table_name),
      ROWID_COLUMNS.map((c) => c.split('.')[0]).sort(),
    );
  });
});

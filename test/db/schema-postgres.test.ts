// schema-postgres.sql says in PostgreSQL what schema.sql says in SQLite: the same tables, columns, nullability,
// defaults, primary keys, unique constraints and indexes, read back from each database's catalog.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { openDatabase, type Db } from '../../src/db/open.ts';
import { postgresTables, ROWID_COLUMNS, type Table } from '../support/postgres-catalog.ts';
import { sharedPostgres } from '../support/postgres.ts';

const PG_SCHEMA = fileURLToPath(new URL('../../schema-postgres.sql', import.meta.url));

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

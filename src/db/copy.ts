// Copies a SQLite database into an empty PostgreSQL one, every table and row as it is: ids, key hashes, secrets,
// metadata text byte for byte, validators, schedules, entry keys, held entries, history, pending events and sequences,
// and the rowids the store orders by. One read transaction on SQLite (a consistent snapshot, even beside a writer) and
// one write transaction on PostgreSQL (a copy that fails leaves no row behind); the counts of every table are compared
// before it commits, and the tables are analyzed.
import type { Engine, Sql } from './engine.ts';
import { SCHEMA_VERSION } from './migrations.ts';
import type { Db } from './open.ts';
import { preparePostgresSchema } from './postgres-schema.ts';

/** Rows per INSERT at most. */
const BATCH_ROWS = 1000;
/** Characters of text per INSERT at most (about): a table of large rows (event bodies, entry history) is read and sent
 *  a few MiB at a time, never a table at once. */
const BATCH_CHARS = 8 * 1024 * 1024;

/** How far a copy has come: the table, its rows copied so far, its rows in all, and whether the table is done (reported
 *  once for every table, empty ones included, after its count is checked). */
export type CopyProgress = { table: string; copied: number; total: number; done: boolean };

/** A column of a table as PostgreSQL has it: its name and its type as SQL spells it (text, bigint). */
type Column = { name: string; type: string };

/** Copies `db` into the PostgreSQL database of `target`, which must be empty (or hold only feedsub's empty schema);
 *  `schemaSql` is schema-postgres.sql; `db` must have this feedsub's schema version. Reports progress after
 *  each batch and at each table's end; resolves with each table's row count. */
export async function copySqliteToPostgres(
  db: Db,
  target: Engine,
  schemaSql: string,
  progress: (p: CopyProgress) => void = () => {},
): Promise<Record<string, number>> {
  const latest = SCHEMA_VERSION;
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version !== latest)
    throw new Error(
      version < latest
        ? `copy: the SQLite database has schema version ${version}, older than this feedsub's ${latest}: start this feedsub on it once (feedsub keys list upgrades it), then copy`
        : `copy: the SQLite database has schema version ${version}, and this feedsub knows up to ${latest}: copy with the feedsub that wrote it`,
    );
  await preparePostgresSchema(target, schemaSql);
  const tables = tablesInOrder(db);
  const counts: Record<string, number> = {};
  db.prepare('BEGIN').run();
  try {
    await target.write(async (sql) => {
      const columns = await columnsOf(sql, db, tables);
      for (const table of tables) {
        if ((await sql.get(`SELECT 1 AS one FROM ${table} LIMIT 1`)) !== undefined)
          throw new Error(
            `copy: the PostgreSQL database is not empty (${table} has rows): copy into a new, empty database`,
          );
      }
      for (const table of tables) {
        counts[table] = await copyTable(db, sql, table, columns.get(table)!, progress);
        await continueIdentities(sql, table);
      }
      // The planner's statistics, as after a restore: the first queries on the new database are planned from the rows
      // copied, not from empty tables (autovacuum would analyze them only later).
      await sql.exec('ANALYZE');
    });
  } finally {
    db.prepare('COMMIT').run();
  }
  return counts;
}

/** Copies one table's rows, a batch at a time, and checks that PostgreSQL counts as many as SQLite; returns the count. */
async function copyTable(
  db: Db,
  sql: Sql,
  table: string,
  columns: Column[],
  progress: (p: CopyProgress) => void,
): Promise<number> {
  const names = columns.map((c) => c.name).join(', ');
  // One parameter per column, an array of that column's values: one statement text for any number of rows.
  const insert = `INSERT INTO ${table} (${names})
    SELECT * FROM unnest(${columns.map((c, i) => `$${i + 1}::${c.type}[]`).join(', ')})`;
  const total = db.prepare(`SELECT COUNT(*) FROM ${table}`).pluck().get() as number;
  // Integers as BigInt, so that one past 2^53 is copied exactly rather than rounded.
  const rows = db
    .prepare(`SELECT ${names} FROM ${table}`)
    .raw()
    .safeIntegers(true)
    .iterate() as IterableIterator<unknown[]>;
  let copied = 0;
  let batch: unknown[][] = [];
  let chars = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const values = columns.map((_, c) => batch.map((row) => row[c]));
    try {
      await sql.run(insert, values);
    } catch (err) {
      throw new Error(
        `copy: writing rows ${copied + 1} to ${copied + batch.length} of ${table} failed: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    copied += batch.length;
    batch = [];
    chars = 0;
    progress({ table, copied, total, done: false });
  };
  for (const row of rows) {
    batch.push(row);
    for (const value of row) if (typeof value === 'string') chars += value.length;
    if (batch.length === BATCH_ROWS || chars >= BATCH_CHARS) await flush();
  }
  await flush();
  const there = await sql.value<number>(`SELECT COUNT(*) FROM ${table}`);
  if (there !== total)
    throw new Error(`copy: ${table} has ${total} rows in SQLite but ${there} were copied`);
  progress({ table, copied, total, done: true });
  return total;
}

/** Each table's columns as PostgreSQL has them, in order; throws, naming them, when a table or a column is on one side
 *  only (a column SQLite has and PostgreSQL lacks would otherwise be left behind). PostgreSQL's `rowid` column is read
 *  from SQLite's rowid. */
async function columnsOf(sql: Sql, db: Db, tables: string[]): Promise<Map<string, Column[]>> {
  const rows = await sql.all<{ table_name: string; name: string; type: string }>(
    `SELECT c.relname AS table_name, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
        AND c.relname <> 'feedsub_schema'
      ORDER BY c.relname, a.attnum`,
  );
  const columns = new Map<string, Column[]>();
  for (const { table_name: table, name, type } of rows)
    columns.set(table, [...(columns.get(table) ?? []), { name, type }]);
  const differences: string[] = [];
  for (const table of tables) {
    const there = columns.get(table);
    if (!there) {
      differences.push(`table ${table} is missing on PostgreSQL`);
      continue;
    }
    const here = (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map(
      (c) => c.name,
    );
    for (const name of here)
      if (!there.some((c) => c.name === name))
        differences.push(`${table}.${name} is missing on PostgreSQL`);
    for (const { name } of there)
      if (!here.includes(name) && name !== 'rowid')
        differences.push(`${table}.${name} is missing on SQLite`);
  }
  for (const table of columns.keys())
    if (!tables.includes(table) && !NOT_COPIED.includes(table))
      differences.push(`table ${table} is missing on SQLite`);
  if (differences.length > 0)
    throw new Error(
      `copy: the two schemas differ, so a copy would leave data behind: ${differences.join('; ')}`,
    );
  return columns;
}

/** The tables of the processes running on a database, not of its data: the nodes, the roles they hold, and the keys
 *  they sign short-lived tokens with (the first node on the target makes new ones). Copied, a stopped node would show
 *  among the live ones on the target until its row lapsed. */
export const NOT_COPIED = ['nodes', 'node_roles', 'service_keys'];

/** Every table of `db` but NOT_COPIED, each after the tables its foreign keys refer to. */
function tablesInOrder(db: Db): string[] {
  const names = (
    db
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
      )
      .pluck()
      .all() as string[]
  ).filter((name) => !NOT_COPIED.includes(name));
  const parents = new Map(
    names.map((name) => [
      name,
      (db.prepare(`PRAGMA foreign_key_list(${name})`).all() as { table: string }[])
        .map((fk) => fk.table)
        .filter((parent) => parent !== name),
    ]),
  );
  const ordered: string[] = [];
  const visit = (name: string, path: string[]) => {
    if (ordered.includes(name)) return;
    if (path.includes(name))
      throw new Error(`copy: foreign keys form a cycle: ${[...path, name].join(' → ')}`);
    for (const parent of parents.get(name) ?? []) visit(parent, [...path, name]);
    ordered.push(name);
  };
  for (const name of names) visit(name, []);
  return ordered;
}

/** Sets each identity column's next value past the largest one copied, so rows made later continue the numbering. */
async function continueIdentities(sql: Sql, table: string): Promise<void> {
  const identities = await sql.column<string>(
    `SELECT column_name FROM information_schema.columns
      WHERE table_schema = 'public' AND table_name = @table AND is_identity = 'YES'`,
    { table },
  );
  for (const column of identities)
    await sql.get(
      `SELECT setval(pg_get_serial_sequence(@table, @column), COALESCE(MAX(${column}), 0) + 1, false) FROM ${table}`,
      { table, column },
    );
}

// Copies a SQLite database into an empty PostgreSQL one, every table and row as it is: ids, key hashes, secrets,
// metadata text byte for byte, validators, schedules, entry keys, held entries, history, pending events and sequences,
// and the rowids the store orders by. One read transaction on SQLite (a consistent snapshot, even beside a writer) and
// one write transaction on PostgreSQL (a copy that fails leaves no row behind); the counts of every table are compared
// before it commits.
import type { Engine, Sql } from './engine.ts';
import type { Db } from './open.ts';
import { preparePostgresSchema } from './postgres-schema.ts';

/** Rows per INSERT: well under PostgreSQL's 65,535 parameters for the widest table (45 columns). */
const BATCH_ROWS = 500;

/** How far a copy has come: the table, its rows copied so far, and its rows in all. */
export type CopyProgress = { table: string; copied: number; total: number };

/** Copies `db` into the PostgreSQL database of `target`, which must be empty (or hold only feedsub's empty schema);
 *  `schemaSql` is schema-postgres.sql. Reports progress after each batch; resolves with each table's row count. */
export async function copySqliteToPostgres(
  db: Db,
  target: Engine,
  schemaSql: string,
  progress: (p: CopyProgress) => void = () => {},
): Promise<Record<string, number>> {
  await preparePostgresSchema(target, schemaSql);
  const tables = tablesInOrder(db);
  const counts: Record<string, number> = {};
  db.prepare('BEGIN').run();
  try {
    await target.write(async (sql) => {
      for (const table of tables) {
        if ((await sql.get(`SELECT 1 AS one FROM ${table} LIMIT 1`)) !== undefined)
          throw new Error(
            `copy: the PostgreSQL database is not empty (${table} has rows): copy into an empty database`,
          );
      }
      for (const table of tables) {
        const columns = await sql.column<string>(
          `SELECT column_name FROM information_schema.columns
            WHERE table_schema = 'public' AND table_name = @table ORDER BY ordinal_position`,
          { table },
        );
        const total = (db.prepare(`SELECT COUNT(*) FROM ${table}`).pluck().get() as number) ?? 0;
        const rows = db
          .prepare(`SELECT ${columns.join(', ')} FROM ${table}`)
          .raw()
          .iterate() as IterableIterator<unknown[]>;
        let copied = 0;
        let batch: unknown[][] = [];
        const flush = async () => {
          if (batch.length === 0) return;
          const values = batch
            .map(
              (_, r) => `(${columns.map((__, c) => `$${r * columns.length + c + 1}`).join(', ')})`,
            )
            .join(', ');
          await sql.run(
            `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${values}`,
            batch.flat(),
          );
          copied += batch.length;
          batch = [];
          progress({ table, copied, total });
        };
        for (const row of rows) {
          batch.push(row);
          if (batch.length === BATCH_ROWS) await flush();
        }
        await flush();
        await continueIdentities(sql, table);
        const copiedThere = (await sql.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`))!.n;
        if (copiedThere !== total)
          throw new Error(
            `copy: ${table} has ${total} rows in SQLite but ${copiedThere} were copied`,
          );
        counts[table] = total;
      }
    });
  } finally {
    db.prepare('COMMIT').run();
  }
  return counts;
}

/** Every table of `db`, each after the tables its foreign keys refer to. */
function tablesInOrder(db: Db): string[] {
  const names = db
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .pluck()
    .all() as string[];
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

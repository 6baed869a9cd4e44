// The store contract both database engines implement: statements with named parameters, run in a read-write
// transaction or a read. The store's functions take a `Sql` and hold the SQL; an engine only runs it.
// SQLite (sqlite-engine.ts) is the embedded default; PostgreSQL (postgres-engine.ts) is the engine several nodes share.

/** A statement's parameters: by name for `@name` in the text, or by position for `?`. */
export type Params = Readonly<Record<string, unknown>> | readonly unknown[];

/** Which SQL an engine speaks, for the few statements whose text differs (see `dialect`). */
export type Dialect = 'sqlite' | 'postgres';

/** Runs statements inside one transaction or read. Integers come back as numbers, text as strings, NULL as null, on
 *  both engines. */
export interface Sql {
  readonly dialect: Dialect;
  /** Every row the statement returns. */
  all<T>(text: string, params?: Params): Promise<T[]>;
  /** The first row, or undefined when there is none. */
  get<T>(text: string, params?: Params): Promise<T | undefined>;
  /** The first column of every row. */
  column<T>(text: string, params?: Params): Promise<T[]>;
  /** The first column of the first row, or undefined when there is none; the rows after it are not read. */
  value<T>(text: string, params?: Params): Promise<T | undefined>;
  /** Runs a statement that returns no rows; resolves with the number of rows it changed. */
  run(text: string, params?: Params): Promise<number>;
  /** Runs a script of statements without parameters (a schema, a migration step). */
  exec(script: string): Promise<void>;
  /** Runs `fn` in a savepoint of the transaction: what it wrote is undone when it throws, and the transaction goes on.
   *  On an engine itself (outside any transaction) it is a write transaction of its own. */
  savepoint<T>(fn: (sql: Sql) => Promise<T>): Promise<T>;
}

/** One database, behind the store contract. Its own statements (an `Engine` is a `Sql`) run outside any transaction,
 *  each committed on its own: for a single statement, or for reads that need no common view. */
export interface Engine extends Sql {
  /** Runs `fn` in a read-write transaction: committed when it resolves, rolled back when it throws. `fn` may run more
   *  than once (PostgreSQL retries a transaction that lost a race: a serialization failure or a deadlock), so it does
   *  nothing but its statements, and it awaits nothing but them: a transaction never waits on the network. Nor does it
   *  open another transaction or read on the same engine: on SQLite that one would wait for this one's lock forever. */
  write<T>(fn: (sql: Sql) => Promise<T>): Promise<T>;
  /** Runs `fn`'s statements on one consistent view of the database; they may not write. */
  read<T>(fn: (sql: Sql) => Promise<T>): Promise<T>;
  /** Closes the engine once every transaction and read under way has ended. */
  close(): Promise<void>;
}

/** The text for `dialect` where the two differ: `dialect(sql.dialect, { sqlite: '…', postgres: '…' })`. */
export function dialect(which: Dialect, texts: Readonly<Record<Dialect, string>>): string {
  return texts[which];
}

/** `Sql.savepoint` on a transaction's statements `sql`: SAVEPOINT, then RELEASE, or ROLLBACK TO and RELEASE when `fn`
 *  throws (the same statements on both engines). One name serves nested savepoints: on both engines ROLLBACK TO and
 *  RELEASE act on the most recent savepoint of that name. */
export async function savepoint<T>(sql: Sql, fn: (sql: Sql) => Promise<T>): Promise<T> {
  await sql.exec('SAVEPOINT feedsub_savepoint');
  let value: T;
  try {
    value = await fn(sql);
  } catch (err) {
    await sql.exec('ROLLBACK TO feedsub_savepoint; RELEASE feedsub_savepoint');
    throw err;
  }
  await sql.exec('RELEASE feedsub_savepoint');
  return value;
}

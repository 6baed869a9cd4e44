// The benches' PostgreSQL: a server of the bench's own (test/support/postgres.ts: a fresh cluster in a temporary
// directory, on a Unix socket), durable as a production server runs (fsync, synchronous_commit and full_page_writes
// on), an engine on one of its databases as `serve` opens one, the server's WAL position for the bytes it writes, and
// a row naming its version and settings. Without PostgreSQL binaries a bench that asks for it fails, saying why.
import { readPostgresSchemaSql } from '../../src/assets.ts';
import { POSTGRES_CONNECT_TIMEOUT_MS } from '../../src/db/connect.ts';
import type { Sql } from '../../src/db/engine.ts';
import { PostgresEngine } from '../../src/db/postgres-engine.ts';
import { preparePostgresSchema } from '../../src/db/postgres-schema.ts';
import { postgresBin, startPostgres, type Postgres } from '../../test/support/postgres.ts';
import type { Row } from './table.ts';

export type { Postgres };

/** The settings the server row names: those that decide what a commit costs and how much WAL it writes. */
const SETTINGS = [
  'fsync',
  'synchronous_commit',
  'full_page_writes',
  'wal_compression',
  'shared_buffers',
  'max_wal_size',
  'checkpoint_timeout',
];

/** Throws, naming what is missing, when no PostgreSQL server can be started here: called before a bench's first phase,
 *  so a missing installation fails it at once rather than minutes in. */
export function requirePostgres(bench: string): void {
  const found = postgresBin();
  if ('missing' in found)
    throw new Error(`${bench}: the PostgreSQL rows need a PostgreSQL server: ${found.missing}`);
}

/** Starts a durable server; stop it with `stop()` (its process group, by PID). The test support's watchdog also stops
 *  it when the bench process ends in any other way. */
export function startBenchPostgres(): Promise<Postgres> {
  return startPostgres({ durable: true, timeoutMs: 60_000 });
}

/** An engine on `url` with the options `serve` opens one with by default (storage.pool_size 10,
 *  storage.statement_timeout_seconds 30), the schema made as `serve` makes it in an empty database. */
export async function openBenchEngine(url: string): Promise<PostgresEngine> {
  const engine = new PostgresEngine({
    url,
    poolSize: 10,
    connectTimeoutMs: POSTGRES_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: 30_000,
  });
  try {
    await preparePostgresSchema(engine, readPostgresSchemaSql());
  } catch (err) {
    await engine.close();
    throw err;
  }
  return engine;
}

/** The server's current WAL position in bytes (`pg_current_wal_lsn()`): the difference of two is what the whole
 *  server wrote to its WAL between them. */
export async function walPosition(sql: Sql): Promise<number> {
  return (await sql.value<number>("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')"))!;
}

/** The WAL the server writes while `work` runs, after a CHECKPOINT: every page first written after it is written
 *  whole once (full_page_writes), as SQLite's WAL holds every page a commit writes whole. */
export async function walBytes(sql: Sql, work: () => Promise<unknown>): Promise<number> {
  await sql.exec('CHECKPOINT');
  const before = await walPosition(sql);
  await work();
  return (await walPosition(sql)) - before;
}

/** Adds the row naming the server's version and the settings that decide what it writes. */
export async function serverRow(sql: Sql, row: Row): Promise<void> {
  const version = await sql.value<string>('SHOW server_version');
  const settings = await sql.all<{ name: string; value: string }>(
    'SELECT name, current_setting(name) AS value FROM pg_settings WHERE name = ANY(@names) ORDER BY name',
    { names: SETTINGS },
  );
  row(
    'PostgreSQL server',
    String(version),
    `started by the bench on this machine: a new cluster in a temporary directory, a Unix socket; ${settings.map((s) => `${s.name} ${s.value}`).join(', ')}`,
  );
}

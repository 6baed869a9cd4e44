// Opens the database the configuration names, for every command: the SQLite file in storage.data_dir when
// storage.database_url is empty (as feedsub always has), else that PostgreSQL database, made feedsub's when empty
// (postgres-schema.ts) and timed by its server's clock (database-clock.ts). What is shown of it anywhere (a log line,
// an error, `config check`) shows its URL with the password hidden.
import { join, resolve } from 'node:path';
import { readPostgresSchemaSql } from '../assets.ts';
import { systemClock, type Clock } from '../clock.ts';
import { redactUrl, withoutPassword, type Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { databaseClock, type DatabaseClock } from './database-clock.ts';
import type { Dialect, Engine } from './engine.ts';
import { lockDataDir, type DataDirLock } from './lock.ts';
import { ensureDataDir, openDatabase, type Db } from './open.ts';
import { preparePostgresSchema } from './postgres-schema.ts';
import { SqliteEngine } from './sqlite-engine.ts';
import { unavailableDatabase } from './unavailable.ts';

/** How long opening a PostgreSQL connection, or waiting for a free one in the pool, may take: a server that is down
 *  refuses at once, and one out of reach fails a request (503) or a start within this rather than hang it. */
export const POSTGRES_CONNECT_TIMEOUT_MS = 5_000;

/** A database opened for a command. */
export type OpenedDatabase = {
  engine: Engine;
  kind: Dialect;
  /** The SQLite connection, for what only SQLite has (the checkpoint thread); undefined on PostgreSQL. */
  sqlite: Db | undefined;
  /** What logs and messages call the database: its file, or its URL with the password hidden. */
  name: string;
  /** What times the database's work: on PostgreSQL the server's clock (database-clock.ts), else the clock given. */
  clock: Clock;
  /** Closes the database. */
  close(): Promise<void>;
  /** Gives back the data directory's lock when it was taken (SQLite's serve and poll --once), once closed. */
  release(): void;
};

/** The SQLite database file inside the configured data directory. */
export function databaseFile(config: Config): string {
  return resolve(join(config.storage.data_dir, 'feedsub.db'));
}

/** Which engine the configuration chooses: PostgreSQL when storage.database_url is set. */
export function configuredEngine(config: Config): Dialect {
  return config.storage.database_url === '' ? 'sqlite' : 'postgres';
}

/** What logs and messages call the configured database: the SQLite file, or the URL with its password hidden. */
export function databaseName(config: Config): string {
  return configuredEngine(config) === 'sqlite'
    ? databaseFile(config)
    : redactUrl(config.storage.database_url);
}

/** Opens the configured database. On SQLite with `lock` (serve, poll --once), the data directory is made (a warning
 *  when an existing one is open to other users) and locked first: DataDirLockedError while another process holds it.
 *  On PostgreSQL there is no data directory to lock, as several nodes share the database; an unreachable server, a
 *  database that is not feedsub's or a schema this feedsub does not know is an error naming the URL (its password
 *  hidden) and the cause. */
export async function openConfiguredDatabase(
  config: Config,
  logger: Logger,
  opts: { clock?: Clock; lock?: boolean } = {},
): Promise<OpenedDatabase> {
  const clock = opts.clock ?? systemClock;
  if (configuredEngine(config) === 'postgres') return openPostgres(config, logger, clock);
  const { db, lock } = opts.lock
    ? openExclusive(config, logger)
    : { db: openDatabase(databaseFile(config)), lock: undefined };
  return {
    engine: new SqliteEngine(db),
    kind: 'sqlite',
    sqlite: db,
    name: databaseFile(config),
    clock,
    close: async () => {
      db.close(); // the last connection to close checkpoints what is left and removes the WAL
    },
    release: () => lock?.release(),
  };
}

/** The data directory (created owner-only; a warning when an existing one is open to other users), its lock, and the
 *  database. Throws DataDirLockedError while another serve holds it. */
function openExclusive(config: Config, logger: Logger): { db: Db; lock: DataDirLock } {
  const dir = resolve(config.storage.data_dir);
  const made = ensureDataDir(dir);
  if (!made.created && (made.mode & 0o077) !== 0)
    logger.warn('feedsub: the data directory is open to other users; chmod 700 it', {
      data_dir: dir,
      mode: made.mode.toString(8).padStart(4, '0'),
    });
  const lock = lockDataDir(dir);
  let db: Db;
  try {
    db = openDatabase(databaseFile(config));
  } catch (err) {
    lock.release();
    throw err;
  }
  return { db, lock };
}

/** Connects to storage.database_url: one statement to see that the server answers, the schema made or checked, and the
 *  offset to the server's clock measured once (then every minute, until closed). */
async function openPostgres(config: Config, logger: Logger, base: Clock): Promise<OpenedDatabase> {
  const url = config.storage.database_url;
  const name = redactUrl(url);
  // Loaded here: the SQLite commands never load pg.
  const { PostgresEngine } = await import('./postgres-engine.ts');
  const engine = new PostgresEngine({
    url,
    poolSize: config.storage.pool_size,
    connectTimeoutMs: POSTGRES_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: config.storage.statement_timeout_seconds * 1000,
  });
  let clock: DatabaseClock | undefined;
  let answered = false;
  try {
    await engine.value('SELECT 1');
    answered = true;
    const schema = await preparePostgresSchema(engine, readPostgresSchemaSql());
    if (schema.created)
      logger.info("db: made the empty PostgreSQL database feedsub's", {
        database: name,
        schema_version: schema.version,
      });
    else if (schema.from !== undefined)
      logger.info('db: upgraded the PostgreSQL schema', {
        database: name,
        from_version: schema.from,
        schema_version: schema.version,
      });
    clock = databaseClock(engine, base);
    const synced = await clock.sync();
    logger.debug("db: the PostgreSQL server's clock", {
      offset_ms: synced.offsetMs,
      round_trip_ms: synced.roundTripMs,
    });
  } catch (err) {
    clock?.stop();
    await engine.close().catch(() => {});
    // Not connected (or the server went away since), or a database this feedsub may not use (schema errors).
    throw new Error(
      !answered || unavailableDatabase(err)
        ? `db: unable to connect to PostgreSQL at ${name}: ${causeOf(err, url)}`
        : `${causeOf(err, url)} (PostgreSQL at ${name})`,
    );
  }
  const running = clock;
  return {
    engine,
    kind: 'postgres',
    sqlite: undefined,
    name,
    clock: running,
    close: async () => {
      running.stop();
      await engine.close();
    },
    release: () => {},
  };
}

/** An error's message with the URL's password hidden (pg may quote its connection string, say in "Invalid URL"), and
 *  its code when the message does not say it. */
function causeOf(err: unknown, url: string): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown } | null)?.code;
  const text =
    typeof code === 'string' && !message.includes(code) ? `${message} (${code})` : message;
  return withoutPassword(text || 'unknown error', url);
}

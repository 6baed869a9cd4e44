// make bench-scale, the world's database as the bench itself reaches it beside serve, on the engine SCALE_ENGINE names:
// sqlite (the default), the file in the data directory, a connection of the bench's own opened for each look and closed
// (read-only unless it writes: WAL readers never block serve), its bytes written read from /proc/<pid>/io; or postgres,
// a new database of a durable server the bench starts (scripts/bench/postgres.ts) and stops by its PID, which serve and
// poll --once reach through storage.database_url, its bytes written the server's WAL.
import Database from 'better-sqlite3';
import type { Dialect, Engine, Sql } from '../../src/db/engine.ts';
import { openDatabase } from '../../src/db/open.ts';
import { SqliteEngine } from '../../src/db/sqlite-engine.ts';
import {
  openBenchEngine,
  requirePostgres,
  serverRow,
  startBenchPostgres,
  walPosition,
  type Postgres,
} from '../bench/postgres.ts';
import type { Row } from '../bench/table.ts';

export type Store = {
  kind: Dialect;
  /** storage.database_url for the config: empty on SQLite. */
  databaseUrl: string;
  /** An engine for the world's build and fill, in this process; its caller closes it. */
  open(): Promise<Engine>;
  /** Runs `fn` on the database beside serve; its statements may write only with `write`. */
  look<T>(fn: (sql: Sql) => Promise<T>, write?: boolean): Promise<T>;
  /** Bytes written so far: on SQLite `sqlite()` (a process's write_bytes), on PostgreSQL the server's WAL position. */
  written(sqlite: () => number): Promise<number>;
  /** What the notes say the bytes are: where they are read from. */
  bytes: string;
  /** Adds the server's row (PostgreSQL only). */
  describe(row: Row): Promise<void>;
  /** Closes what the bench opened; on PostgreSQL stops the server. */
  close(): Promise<void>;
};

/** The engine SCALE_ENGINE names (sqlite unless it says postgres); throws on any other name, or without PostgreSQL. */
export function scaleEngine(): Dialect {
  const kind = process.env.SCALE_ENGINE ?? 'sqlite';
  if (kind !== 'sqlite' && kind !== 'postgres')
    throw new Error(`bench-scale: SCALE_ENGINE is sqlite or postgres, not ${JSON.stringify(kind)}`);
  if (kind === 'postgres') requirePostgres('bench-scale');
  return kind;
}

/** The SQLite file `file`. */
export function sqliteStore(file: string): Store {
  return {
    kind: 'sqlite',
    databaseUrl: '',
    open: async () => new SqliteEngine(openDatabase(file)),
    async look(fn, write = false) {
      const db = new Database(file, { readonly: !write });
      if (write) db.pragma('busy_timeout = 10000');
      try {
        return await fn(new SqliteEngine(db));
      } finally {
        db.close();
      }
    },
    written: async (sqlite) => sqlite(),
    bytes: 'write_bytes, /proc/<pid>/io',
    describe: async () => {},
    close: async () => {},
  };
}

/** A new database on a durable server, and the bench's own engine on it (made feedsub's). The server is `shared` when
 *  given (close() leaves it running: its starter stops it), else one started now and stopped by close(). */
export async function postgresStore(shared?: Postgres): Promise<Store> {
  const server = shared ?? (await startBenchPostgres());
  const stopServer = () => (shared ? Promise.resolve() : server.stop());
  let own: Engine;
  let url: string;
  try {
    url = await server.newDatabase();
    own = await openBenchEngine(url);
  } catch (err) {
    await stopServer();
    throw err;
  }
  return {
    kind: 'postgres',
    databaseUrl: url,
    open: () => openBenchEngine(url),
    look: (fn) => fn(own),
    written: () => walPosition(own),
    bytes: "the server's WAL, pg_current_wal_lsn()",
    describe: (row) => serverRow(own, row),
    async close() {
      try {
        await own.close();
      } finally {
        await stopServer();
      }
    },
  };
}

// The PostgreSQL engine of the store contract (engine.ts): a pool of `pg` connections.
//
// The store's texts use `@name` (or `?`) parameters, as better-sqlite3 does; each text is rewritten to `$1, $2, …`
// once and runs as a named prepared statement, so each connection parses and plans it once. Integers come back as
// numbers, as on SQLite (pg gives bigint and numeric as strings), which holds for every count and sum feedsub keeps;
// booleans come back as 1 and 0.
// A write runs at READ COMMITTED, where a row an UPDATE waits for is read again once the other transaction commits;
// the guarantees that need more take row locks in their statements. A transaction that loses a race (a serialization
// failure, a deadlock, or a row another inserted first) runs again from the start, a few times. Every error of its
// connections and its server leaves it marked as PostgreSQL's (unavailable.ts), so the server down or restarting is told
// apart from other faults.
import pg from 'pg';
import { savepoint, type Engine, type Params, type Sql } from './engine.ts';
import { markPostgres } from './unavailable.ts';

/** How an engine connects: the URL (postgres://user:password@host:port/database?sslmode=…), how many connections it
 *  keeps at most, how long a caller waits for one, and how long one statement may run before the server cancels it
 *  (and, a few seconds later, this side gives up on an answer that does not come: a server cut off by the network). */
export type PostgresOptions = {
  url: string;
  poolSize: number;
  connectTimeoutMs: number;
  statementTimeoutMs: number;
  /** The server's application_name for this engine's connections (pg_stat_activity shows it). */
  applicationName?: string;
};

/** Attempts of a write that loses a race, counting the first. */
const WRITE_ATTEMPTS = 5;
/** SQLSTATEs of a transaction that may succeed when run again: serialization_failure, deadlock_detected, and
 *  unique_violation: another transaction inserted a row this one looked for, did not find and went to insert (two
 *  subscriptions to one new feed URL at once); run again, this one finds it. */
const RETRYABLE = new Set(['40001', '40P01', '23505']);

/** pg's type parsers with int8 (COUNT, SUM, bigserial) and numeric read as numbers, and booleans (EXISTS, a
 *  comparison) as 1 and 0, as SQLite gives them. */
const TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 || oid === pg.types.builtins.NUMERIC
      ? (value: string) => Number(value)
      : oid === pg.types.builtins.BOOL
        ? (value: string) => (value === 't' ? 1 : 0)
        : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

export class PostgresEngine implements Engine {
  readonly dialect = 'postgres' as const;
  readonly #pool: pg.Pool;
  /** Each text as PostgreSQL reads it, with its statement's name and the parameter names in order. */
  readonly #texts = new Map<string, Translated>();
  /** Statements outside a transaction: each on whichever pooled connection is free, committed on its own. */
  readonly #alone: Sql;

  constructor(options: PostgresOptions) {
    this.#pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize,
      connectionTimeoutMillis: options.connectTimeoutMs,
      statement_timeout: options.statementTimeoutMs,
      query_timeout: options.statementTimeoutMs + 5_000,
      keepAlive: true,
      application_name: options.applicationName ?? 'feedsub',
      types: TYPES,
    });
    // An idle connection the server drops (a restart, a failover) is an error on the pool, not a crash.
    this.#pool.on('error', () => {});
    this.#alone = this.#on(this.#pool);
  }

  all<T>(text: string, params?: Params): Promise<T[]> {
    return this.#alone.all(text, params);
  }

  get<T>(text: string, params?: Params): Promise<T | undefined> {
    return this.#alone.get(text, params);
  }

  column<T>(text: string, params?: Params): Promise<T[]> {
    return this.#alone.column(text, params);
  }

  value<T>(text: string, params?: Params): Promise<T | undefined> {
    return this.#alone.value(text, params);
  }

  run(text: string, params?: Params): Promise<number> {
    return this.#alone.run(text, params);
  }

  exec(script: string): Promise<void> {
    return this.#alone.exec(script);
  }

  savepoint<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return this.write(fn);
  }

  async write<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#transaction('BEGIN', fn);
      } catch (err) {
        if (attempt >= WRITE_ATTEMPTS || !RETRYABLE.has(sqlState(err))) throw err;
      }
    }
  }

  read<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return this.#transaction('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', fn);
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }

  async #transaction<T>(begin: string, fn: (sql: Sql) => Promise<T>): Promise<T> {
    const client = await this.#pool.connect().catch((err: unknown) => {
      throw markPostgres(err);
    });
    let broken = false;
    // The pool listens for errors on idle connections only: one lent out that the server ends (a restart) between two
    // statements emits 'error' with no query to reject, which unheard would end the process. The next statement fails.
    const lost = () => {
      broken = true;
    };
    client.on('error', lost);
    try {
      await client.query(begin).catch((err: unknown) => {
        broken = true; // a connection that cannot begin is not lent again
        throw markPostgres(err);
      });
      try {
        const value = await fn(this.#on(client));
        await client.query('COMMIT').catch((err: unknown) => {
          throw markPostgres(err);
        });
        return value;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {
          broken = true; // the connection is gone or stuck: the pool drops it rather than lend it again
        });
        throw err;
      }
    } finally {
      client.off('error', lost);
      client.release(broken);
    }
  }

  /** The contract's statements on one connection, or on the pool (each statement on a free connection). */
  #on(client: pg.PoolClient | pg.Pool): Sql {
    const engine = this;
    const query = async (text: string, params: Params | undefined) => {
      const t = this.#translate(text);
      const values = valuesOf(t, params);
      return client.query({ name: t.name, text: t.text, values }).catch((err: unknown) => {
        throw markPostgres(err);
      });
    };
    const sql: Sql = {
      dialect: 'postgres',
      async all<T>(text: string, params?: Params) {
        return (await query(text, params)).rows as T[];
      },
      async get<T>(text: string, params?: Params) {
        return (await query(text, params)).rows[0] as T | undefined;
      },
      async column<T>(text: string, params?: Params) {
        const result = await query(text, params);
        const first = result.fields[0]?.name;
        return first === undefined ? [] : result.rows.map((row) => row[first] as T);
      },
      async value<T>(text: string, params?: Params) {
        const result = await query(text, params);
        const first = result.fields[0]?.name;
        return first === undefined ? undefined : (result.rows[0]?.[first] as T | undefined);
      },
      async run(text: string, params?: Params) {
        return (await query(text, params)).rowCount ?? 0;
      },
      async exec(script: string) {
        // No parameters: the simple protocol, which runs several statements.
        await client.query(script).catch((err: unknown) => {
          throw markPostgres(err);
        });
      },
      savepoint<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
        return client instanceof pg.Pool ? engine.write(fn) : savepoint(sql, fn);
      },
    };
    return sql;
  }

  #translate(text: string): Translated {
    let t = this.#texts.get(text);
    if (!t)
      this.#texts.set(text, (t = { ...toPositional(text), name: `feedsub_${this.#texts.size}` }));
    return t;
  }
}

type Translated = { text: string; names: string[] | null; count: number; name: string };

/** Rewrites `@name` and `?` parameters to `$1, $2, …` outside quoted strings, identifiers and comments. `names` lists
 *  each named parameter once, in the order of its number; null when the text uses `?` (`count` of them). A text may
 *  not use both. */
export function toPositional(text: string): {
  text: string;
  names: string[] | null;
  count: number;
} {
  const names: string[] = [];
  let count = 0;
  let out = '';
  for (let i = 0; i < text.length;) {
    const c = text[i]!;
    if (c === "'" || c === '"') {
      const end = text.indexOf(c, i + 1);
      const stop = end < 0 ? text.length : end + 1;
      out += text.slice(i, stop);
      i = stop;
    } else if (c === '-' && text[i + 1] === '-') {
      const end = text.indexOf('\n', i);
      const stop = end < 0 ? text.length : end;
      out += text.slice(i, stop);
      i = stop;
    } else if (c === '?') {
      out += `$${++count}`;
      i++;
    } else if (c === '@' && /[A-Za-z_]/.test(text[i + 1] ?? '')) {
      const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i + 1))![0];
      let n = names.indexOf(name);
      if (n < 0) n = names.push(name) - 1;
      out += `$${n + 1}`;
      i += 1 + name.length;
    } else {
      out += c;
      i++;
    }
  }
  if (count > 0 && names.length > 0)
    throw new Error('store: a statement uses both ? and @name parameters');
  return { text: out, names: count > 0 ? null : names, count: count > 0 ? count : names.length };
}

/** The values for `t`'s `$n` from `params`: by position, or by name (a name missing from the object is an error, as
 *  better-sqlite3 makes it). */
function valuesOf(t: Translated, params: Params | undefined): unknown[] {
  if (params === undefined) return [];
  if (Array.isArray(params)) return (params as unknown[]).map(storable);
  const named = params as Readonly<Record<string, unknown>>;
  return (t.names ?? []).map((name) => {
    if (!(name in named)) throw new Error(`store: missing named parameter @${name}`);
    return storable(named[name]);
  });
}

/** `value` as PostgreSQL's text can hold it: a NUL character, which text may not contain (a receiver's reply or a
 *  feed's title can), becomes U+FFFD, the replacement character, also in an array's strings; anything else as it is. */
export function storable(value: unknown): unknown {
  if (typeof value === 'string')
    return value.includes('\0') ? value.replaceAll('\0', '\uFFFD') : value;
  return Array.isArray(value) ? value.map(storable) : value;
}

/** The SQLSTATE of a PostgreSQL error, or ''. */
function sqlState(err: unknown): string {
  return typeof err === 'object' &&
    err !== null &&
    typeof (err as { code?: unknown }).code === 'string'
    ? (err as { code: string }).code
    : '';
}

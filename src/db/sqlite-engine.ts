// The SQLite engine of the store contract (engine.ts): one better-sqlite3 connection, its statements prepared once.
//
// better-sqlite3 runs each statement synchronously, so the contract's promises resolve at once; but between two
// `await`s of a transaction another caller's continuation may run, and on one connection its statement would join the
// open transaction (and see its uncommitted rows). So every transaction and read holds the engine's lock, callers
// waiting their turn in order; since a transaction awaits nothing but its own statements (engine.ts), the lock is held
// for the statements' time and no longer.
import type { Statement } from 'better-sqlite3';
import type { Engine, Params, Sql } from './engine.ts';
import type { Db } from './open.ts';

export class SqliteEngine implements Engine {
  readonly dialect = 'sqlite' as const;
  readonly #db: Db;
  /** Prepared statements by text, and by text for `column` (a plucking statement is another statement). */
  readonly #rows = new Map<string, Statement>();
  readonly #columns = new Map<string, Statement>();
  /** Whether a transaction or read holds the lock; the callers waiting for it, first come first. */
  #busy = false;
  readonly #waiting: (() => void)[] = [];
  readonly #sql: Sql;

  constructor(db: Db) {
    this.#db = db;
    const engine = this;
    this.#sql = {
      dialect: 'sqlite',
      async all<T>(text: string, params?: Params) {
        return bind(engine.#statement(text), params, 'all') as T[];
      },
      async get<T>(text: string, params?: Params) {
        return bind(engine.#statement(text), params, 'get') as T | undefined;
      },
      async column<T>(text: string, params?: Params) {
        return bind(engine.#column(text), params, 'all') as T[];
      },
      async run(text: string, params?: Params) {
        return (bind(engine.#statement(text), params, 'run') as { changes: number }).changes;
      },
      async exec(script: string) {
        engine.#db.exec(script);
      },
    };
  }

  /** The connection, for what only SQLite has (backups, checkpoints, pragmas); never for the store's statements. */
  get db(): Db {
    return this.#db;
  }

  write<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return this.#exclusive('BEGIN IMMEDIATE', fn);
  }

  read<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return this.#exclusive('BEGIN', fn);
  }

  async close(): Promise<void> {
    await this.#exclusive('', async () => {
      this.#db.close();
    });
  }

  /** Runs `fn` holding the lock, inside `begin`…COMMIT (ROLLBACK when it throws); `begin` empty runs it bare. */
  async #exclusive<T>(begin: string, fn: (sql: Sql) => Promise<T>): Promise<T> {
    if (this.#busy) await new Promise<void>((resume) => this.#waiting.push(resume));
    else this.#busy = true;
    try {
      if (!begin) return await fn(this.#sql);
      this.#statement(begin).run();
      let value: T;
      try {
        value = await fn(this.#sql);
      } catch (err) {
        if (this.#db.inTransaction) this.#statement('ROLLBACK').run();
        throw err;
      }
      try {
        this.#statement('COMMIT').run();
      } catch (err) {
        if (this.#db.inTransaction) this.#statement('ROLLBACK').run();
        throw err;
      }
      return value;
    } finally {
      // The lock passes straight to the next caller, so none can slip in between.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#busy = false;
    }
  }

  #statement(text: string): Statement {
    let stmt = this.#rows.get(text);
    if (!stmt) this.#rows.set(text, (stmt = this.#db.prepare(text)));
    return stmt;
  }

  #column(text: string): Statement {
    let stmt = this.#columns.get(text);
    if (!stmt) this.#columns.set(text, (stmt = this.#db.prepare(text).pluck()));
    return stmt;
  }
}

/** Runs `stmt` with `params`: an array binds `?` by position, an object `@name` by name. */
function bind(stmt: Statement, params: Params | undefined, how: 'all' | 'get' | 'run'): unknown {
  if (params === undefined) return stmt[how]();
  return Array.isArray(params) ? stmt[how](...(params as unknown[])) : stmt[how](params);
}

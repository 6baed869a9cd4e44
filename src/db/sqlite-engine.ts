// The SQLite engine of the store contract (engine.ts): one better-sqlite3 connection, its statements prepared once.
//
// better-sqlite3 runs each statement synchronously, so the contract's promises resolve at once; but between two
// `await`s of a transaction another caller's continuation may run, and on one connection its statement would join the
// open transaction (and see its uncommitted rows). So every transaction and read holds the engine's lock, callers
// waiting their turn in order; since a transaction awaits nothing but its own statements (engine.ts), the lock is held
// for the statements' time and no longer.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Statement } from 'better-sqlite3';
import { savepoint, type Engine, type Params, type Sql } from './engine.ts';
import type { Db } from './open.ts';

/** Tests set FEEDSUB_CHECK_TRANSACTIONS=1 to track which engine's transaction each continuation runs in, and whether
 *  that transaction is still open (see #refuseNested); off otherwise, as async context tracking slows every promise. */
const inside =
  process.env.FEEDSUB_CHECK_TRANSACTIONS === '1'
    ? new AsyncLocalStorage<{ engine: SqliteEngine; open: boolean }>()
    : undefined;

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
      async value<T>(text: string, params?: Params) {
        return bind(engine.#column(text), params, 'get') as T | undefined;
      },
      async run(text: string, params?: Params) {
        return (bind(engine.#statement(text), params, 'run') as { changes: number }).changes;
      },
      async exec(script: string) {
        engine.#db.exec(script);
      },
      async savepoint<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
        return savepoint(engine.#sql, fn);
      },
    };
  }

  all<T>(text: string, params?: Params): Promise<T[]> {
    return this.#alone(() => bind(this.#statement(text), params, 'all') as T[]);
  }

  get<T>(text: string, params?: Params): Promise<T | undefined> {
    return this.#alone(() => bind(this.#statement(text), params, 'get') as T | undefined);
  }

  column<T>(text: string, params?: Params): Promise<T[]> {
    return this.#alone(() => bind(this.#column(text), params, 'all') as T[]);
  }

  value<T>(text: string, params?: Params): Promise<T | undefined> {
    return this.#alone(() => bind(this.#column(text), params, 'get') as T | undefined);
  }

  run(text: string, params?: Params): Promise<number> {
    return this.#alone(
      () => (bind(this.#statement(text), params, 'run') as { changes: number }).changes,
    );
  }

  exec(script: string): Promise<void> {
    return this.#alone(() => {
      this.#db.exec(script);
    });
  }

  savepoint<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return this.write(fn);
  }

  /** The texts of the statements prepared so far, in the order first prepared (test/store/query-plans.test.ts explains
   *  each one's plan). */
  preparedTexts(): string[] {
    return [...new Set([...this.#rows.keys(), ...this.#columns.keys()])];
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

  /** Runs one statement outside a transaction: at once when no transaction or read holds the lock (a statement runs
   *  synchronously, so nothing can slip in while it does), else after them, in turn. */
  async #alone<T>(statement: () => T): Promise<T> {
    this.#refuseNested();
    if (!this.#busy) return statement();
    return this.#exclusive('', async () => statement());
  }

  /** Runs `fn` holding the lock, inside `begin`…COMMIT (ROLLBACK when it throws); `begin` empty runs it bare. */
  async #exclusive<T>(begin: string, fn: (sql: Sql) => Promise<T>): Promise<T> {
    this.#refuseNested();
    if (this.#busy) await new Promise<void>((resume) => this.#waiting.push(resume));
    else this.#busy = true;
    try {
      if (!begin) return await fn(this.#sql);
      this.#statement(begin).run();
      let value: T;
      // Work the transaction starts without awaiting it (a host lookup) keeps its context, and may open a transaction
      // of its own once this one has ended.
      const scope = { engine: this, open: true };
      try {
        value = await (inside ? inside.run(scope, () => fn(this.#sql)) : fn(this.#sql));
      } catch (err) {
        if (this.#db.inTransaction) this.#statement('ROLLBACK').run();
        throw err;
      } finally {
        scope.open = false;
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

  /** With checks on, a transaction or read that runs a statement on the engine itself, or opens another, throws at
   *  once: on one connection it would wait for its own lock forever. */
  #refuseNested(): void {
    const scope = inside?.getStore();
    if (scope?.engine === this && scope.open)
      throw new Error(
        'store: a transaction ran a statement outside itself, or opened another (pass it its own Sql)',
      );
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

/** The SQLite connection under `store`, for what only SQLite has (a write probe, backups, checkpoints); undefined on
 *  another engine. */
export function sqliteConnection(store: Engine): Db | undefined {
  return store instanceof SqliteEngine ? store.db : undefined;
}

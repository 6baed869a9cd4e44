// Group commit: the writes finished in one turn of the event loop share one transaction (a commit costs more than the
// writes of one outcome), and that transaction ends with a tail (the claim of the next work for the slots they free).
import type { Db } from '../db/open.ts';

/** A write's result: its value, or what it threw. */
export type Written<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** Collects items during one turn of the event loop and hands them to `flush` together on the next turn. */
export class TurnBatch<T> {
  readonly #flush: (items: T[]) => void;
  #items: T[] = [];

  constructor(flush: (items: T[]) => void) {
    this.#flush = flush;
  }

  /** Adds an item; the first one of a turn schedules the flush. */
  add(item: T): void {
    this.#items.push(item);
    if (this.#items.length === 1)
      setImmediate(() => {
        const items = this.#items;
        this.#items = [];
        this.#flush(items);
      });
  }
}

/** Runs `writes` and then `tail` in one transaction. When any of them throws, that transaction is rolled back and each
 *  write runs again in a transaction of its own, so only the one that throws fails; the tail is then not run again (it
 *  reports the error). Never throws. */
export function commitTogether<T, U>(
  db: Db,
  writes: readonly (() => T)[],
  tail: () => U,
): { results: Written<T>[]; tail: Written<U> } {
  try {
    // IMMEDIATE: the write lock is taken (waiting up to the busy timeout) before the first read. A deferred transaction
    // that reads first and then writes fails at once with SQLITE_BUSY when another process (a `poll --once` beside
    // `serve`) committed in between: its snapshot is stale, and SQLite does not wait on a busy handler for that.
    const done = db
      .transaction(() => ({ values: writes.map((w) => w()), tail: tail() }))
      .immediate();
    return {
      results: done.values.map((value) => ({ ok: true, value })),
      tail: { ok: true, value: done.tail },
    };
  } catch (error) {
    return { results: writes.map((w) => alone(db, w)), tail: { ok: false, error } };
  }
}

function alone<T>(db: Db, write: () => T): Written<T> {
  try {
    return { ok: true, value: db.transaction(write).immediate() };
  } catch (error) {
    return { ok: false, error };
  }
}

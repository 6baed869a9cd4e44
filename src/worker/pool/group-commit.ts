// Group commit: the writes finished in one turn of the event loop share one transaction (a commit costs more than the
// writes of one outcome), and that transaction ends with a tail (the claim of the next work for the slots they free).
import { performance } from 'node:perf_hooks';
import type { Engine, Sql } from '../../db/engine.ts';

/** A write's result: its value, or what it threw. */
export type Written<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** Lets a batch keep collecting past its first turn: while `hold(items)` says so, and for at most `maxMs(items)` after
 *  its oldest item arrived (both asked of the batch as it stands). */
export type Linger<T> = {
  hold: (items: readonly T[]) => boolean;
  maxMs: (items: readonly T[]) => number;
};

/** Collects items during one turn of the event loop and hands them to `flush` together on the next turn, at most
 *  `budget` of their weight (`weigh`) at a time, but always at least one item; what is left goes in the next turn,
 *  ahead of items added meanwhile, so that a transaction of heavy writes never holds the event loop for all of them.
 *  With a `linger`, a batch under its budget waits while `linger.hold()` is true, up to `linger.maxMs`, so that more
 *  items share one transaction (a pool's throughput layer, whose slots keep working meanwhile: throughput.ts). */
export class TurnBatch<T> {
  readonly #flush: (items: T[]) => void;
  readonly #weigh: (item: T) => number;
  readonly #budget: number;
  readonly #linger: Linger<T> | undefined;
  #items: T[] = [];
  #since = 0;
  /** What is left of a batch over its budget: it goes on the next turn, lingering no more. */
  #leftover = false;
  #scheduled = false;
  #timer: NodeJS.Timeout | undefined;
  #timerAt: number | undefined;

  constructor(
    flush: (items: T[]) => void,
    weigh: (item: T) => number = () => 0,
    budget = Infinity,
    linger?: Linger<T>,
  ) {
    this.#flush = flush;
    this.#weigh = weigh;
    this.#budget = budget;
    this.#linger = linger;
  }

  /** Adds an item; the first one of a turn schedules the flush. */
  add(item: T): void {
    if (this.#items.length === 0) {
      this.#since = performance.now();
      this.#leftover = false;
    }
    this.#items.push(item);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      if (this.#items.length === 0 || this.#lingers()) return;
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#timerAt = undefined;
      let weight = this.#weigh(this.#items[0]!);
      let n = 1;
      while (n < this.#items.length && weight + this.#weigh(this.#items[n]!) <= this.#budget)
        weight += this.#weigh(this.#items[n++]!);
      const items = this.#items.splice(0, n);
      this.#leftover = this.#items.length > 0;
      if (this.#leftover) this.#schedule();
      this.#flush(items);
    });
  }

  /** Whether the batch waits longer: its linger holds, it is under its budget and younger than the linger's maxMs. A
   *  waiting batch is flushed by a timer at maxMs, or by the turn after an add once its linger stops holding. */
  #lingers(): boolean {
    const linger = this.#linger;
    if (linger === undefined || this.#leftover) return false;
    const age = performance.now() - this.#since;
    const maxMs = linger.maxMs(this.#items);
    if (age >= maxMs || !linger.hold(this.#items)) return false;
    let weight = 0;
    for (const item of this.#items) if ((weight += this.#weigh(item)) > this.#budget) return false;
    // A batch's maxMs may shrink as items join (an outcome that may not wait long): the timer follows it.
    if (this.#timerAt !== undefined && this.#timerAt > this.#since + maxMs) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#timer === undefined) {
      this.#timerAt = this.#since + maxMs;
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#timerAt = undefined;
        this.#schedule();
      }, maxMs - age);
    }
    return true;
  }

  /** Asks again, on the next turn, whether a waiting batch still lingers (its `hold()` may have changed). */
  poke(): void {
    if (this.#items.length > 0) this.#schedule();
  }
}

/** Runs `writes` and then `tail` in one transaction. When any of them throws, that transaction is rolled back and each
 *  write runs again in a transaction of its own, so only the one that throws fails; the tail is then not run again (it
 *  reports the error). Never throws. */
export async function commitTogether<T, U>(
  store: Engine,
  writes: readonly ((db: Sql) => Promise<T>)[],
  tail: (db: Sql) => Promise<U>,
): Promise<{ results: Written<T>[]; tail: Written<U> }> {
  try {
    // On SQLite the write lock is taken (waiting up to the busy timeout) before the first read (BEGIN IMMEDIATE): a
    // deferred transaction that reads first and then writes fails at once with SQLITE_BUSY when another process (a
    // `poll --once` beside `serve`) committed in between.
    const done = await store.write(async (db) => {
      const values: T[] = [];
      for (const write of writes) values.push(await write(db));
      return { values, tail: await tail(db) };
    });
    return {
      results: done.values.map((value) => ({ ok: true, value })),
      tail: { ok: true, value: done.tail },
    };
  } catch (error) {
    const results: Written<T>[] = [];
    for (const write of writes) results.push(await alone(store, write));
    return { results, tail: { ok: false, error } };
  }
}

async function alone<T>(store: Engine, write: (db: Sql) => Promise<T>): Promise<Written<T>> {
  try {
    return { ok: true, value: await store.write(write) };
  } catch (error) {
    return { ok: false, error };
  }
}

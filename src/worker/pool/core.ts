// The work pool's core, on which the poller and the deliverer run: slots, per-key caps and the group commit.
//
// States (what a caller can rely on). An item is due (in its table, no live lease) → claimed (leased by spec.claim in a
// write transaction that also takes its slot and keys: never more than `slots` items run, nor more items hold a key
// than its cap) → running (spec.run, no transaction open) → finished (its outcome joins the group commit of the
// event-loop turn it finished in) → recorded (spec.record, in one transaction with the other outcomes of that turn, up
// to COMMIT_WEIGHT of them: their slots and keys freed just before it, the claim for the free slots at its end, and
// the items it claims started at once, with no timer and no batch barrier; then spec.recorded) — or unrecorded (its
// run rejected, or its record threw again alone after its batch rolled back: slot and keys free, lease kept) →
// released (spec.release, in the next transaction that commits) → due. fill() claims for the free slots in a
// transaction of its own (the loop's tick); commits claim only between start() and stop(), and one that leaves slots free
// calls spec.idle(), so the loop looks again when the next item falls due, what it recorded included (fill() never
// does).
// drain() waits for every item in flight to settle. A layer (spec.layer: throughput.ts) may keep claimed items beyond
// the slots and let outcomes wait, at the points spec.ts names.
import { performance } from 'node:perf_hooks';
import type { Engine } from '../../db/engine.ts';
import type { Logger } from '../../log.ts';
import { failureLog } from '../loop.ts';
import { commitTogether, TurnBatch } from './group-commit.ts';
import type { Layer, PoolSpec, Room, Settled } from './spec.ts';

type Finished<I, R, V> = { item: I; result: R; free: () => void; done: (v: V | undefined) => void };

/** The weight (PoolSpec.weightOf) one group commit records at most, beyond its first outcome: about 500 entries of
 *  parsed documents, ~10 ms of the event loop, so that requests never wait for the records of several large documents
 *  at once. */
export const COMMIT_WEIGHT = 500;

/** The longest outcomes wait for a transaction of the pool under way to end, in a pool without a layer's linger: then
 *  they are committed behind it anyway. */
const BEHIND_COMMIT_MS = 1000;

/** Items whose outcome could not be recorded are kept for their lease release up to this many slots' worth; older ones
 *  are forgotten, and their leases simply run out. */
const UNRECORDED_SLOTS = 4;

/** A pool of `spec.slots` slots over `store`. Nothing runs until fill(); commits claim only between start() and stop().
 *  Its transactions (fills and commits) run one at a time, each starting what it claimed before the next begins: a
 *  claim sizes itself by the free slots, which the items of a claim not yet started would still seem to leave free. */
export class Pool<I, R, V> {
  readonly #store: Engine;
  readonly #spec: PoolSpec<I, R, V>;
  readonly #logger: Logger;
  readonly #held = new Map<string, number>();
  readonly #layer: Layer<I, R, V> | undefined;
  readonly #running = new Set<Settled<V>>();
  readonly #commits: TurnBatch<Finished<I, R, V>>;
  readonly #failures: ReturnType<typeof failureLog>;
  #unrecorded: I[] = [];
  #busy = 0;
  #refilling = false;
  #refillQueued = false;
  /** The end of the last transaction asked for (see the class). */
  #serial: Promise<unknown> = Promise.resolve();
  /** Transactions asked for and not ended. */
  #pending = 0;

  constructor(store: Engine, spec: PoolSpec<I, R, V>, logger: Logger) {
    this.#store = store;
    this.#spec = spec;
    this.#logger = logger;
    this.#layer = spec.layer?.({
      size: spec.slots,
      free: () => this.free,
      busy: () => this.#busy,
      keysOf: (item) => spec.keysOf(item),
      fits: (keys) => keys.every((k) => this.#heldBy(k) < spec.capOf(k)),
      start: (item) => this.#start(item),
      drop: (item) => this.#keepUnrecorded([item]),
    });
    const weightOf = spec.weightOf;
    const linger = this.#layer?.linger;
    this.#commits = new TurnBatch<Finished<I, R, V>>(
      (batch) => void this.#commit(batch),
      weightOf ? (f) => weightOf(f.result) : undefined,
      COMMIT_WEIGHT,
      {
        // Outcomes that finish while a transaction of the pool runs wait for its end and then share one commit, as a
        // database's own group commit does, rather than queue a transaction each behind it: on PostgreSQL a commit
        // is a round trip and a flush of the log, and outcomes come in one at a time meanwhile. A layer's outcomes
        // also wait while its linger holds, and only while the loop still claims.
        hold: (batch) =>
          this.#pending > 0 || (linger !== undefined && this.#refilling && linger.hold(batch)),
        maxMs: (batch) => (linger ? linger.maxMs(batch) : BEHIND_COMMIT_MS),
      },
    );
    this.#failures = failureLog(logger, {
      failed: `${spec.name}: unable to record outcomes`,
      recovered: `${spec.name}: recording outcomes again`,
    });
  }

  /** Slots in use. */
  get busy(): number {
    return this.#busy;
  }

  /** Slots free. */
  get free(): number {
    return this.#spec.slots - this.#busy;
  }

  /** Every key an item in flight holds, with how many hold it. */
  get heldKeys(): ReadonlyMap<string, number> {
    return this.#held;
  }

  /** From now on each commit claims for the slots it frees (the loop is running). */
  start(): void {
    this.#refilling = true;
  }

  /** No more refills; items in flight still run and are recorded (drain() waits for them). Items a layer kept are not
   *  started: their leases are released by the next commit, if any (else they run out, or the next start releases
   *  them). */
  stop(): void {
    this.#refilling = false;
    if (this.#layer) this.#keepUnrecorded(this.#layer.drop());
    this.#commits.poke();
  }

  /** Claims what fits in the free slots, in a transaction of its own, and starts it; each promise settles once that
   *  item's outcome is committed. Rejects when the claim cannot be written (the loop backs off). */
  fill(): Promise<Settled<V>[]> {
    return this.#inTurn(async () => {
      const started = this.#layer?.refill() ?? [];
      const want = this.#wanted();
      if (want <= 0) return started;
      const releasing = this.#unrecorded.splice(0);
      let items: I[];
      try {
        items = await this.#store.write(async (db) => {
          if (releasing.length > 0) await this.#spec.release(releasing, db);
          return this.#spec.claim(want, this.#room(), db);
        });
      } catch (err) {
        this.#keepUnrecorded(releasing);
        throw err;
      }
      return [...started, ...this.#take(items)];
    });
  }

  /** Runs `fn` once the pool's transactions asked for before it have ended (see the class). */
  #inTurn<T>(fn: () => Promise<T>): Promise<T> {
    this.#pending++;
    const turn = this.#serial.then(fn).finally(() => {
      // The outcomes that waited for it go in the next transaction.
      if (--this.#pending === 0) this.#commits.poke();
    });
    this.#serial = turn.catch(() => {});
    return turn;
  }

  /** Resolves true once every item in flight has settled, false when `timeoutMs` passed first. */
  async drain(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      while (this.#running.size > 0)
        if ((await Promise.race([Promise.allSettled([...this.#running]), late])) === false)
          return false;
      return true;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Items in flight holding `key`. */
  #heldBy(key: string): number {
    return this.#held.get(key) ?? 0;
  }

  /** How many items a claim asks for: the free slots, and what a layer adds. */
  #wanted(): number {
    return Math.max(0, this.free) + (this.#layer?.extra() ?? 0);
  }

  /** Starts freshly claimed items (a layer starts what fits and keeps the rest). */
  #take(items: readonly I[]): Settled<V>[] {
    return this.#layer ? this.#layer.take(items) : items.map((item) => this.#start(item));
  }

  /** A claim's view of the slots: what runs holds its keys; what a layer keeps holds them too, each key then taking
   *  its cap as many times as the layer says. */
  #room(): Room {
    const picked = new Map<string, number>(); // what this claim picked, and what a layer keeps
    const take = (keys: readonly string[]) => {
      for (const k of keys) picked.set(k, (picked.get(k) ?? 0) + 1);
    };
    const scale = this.#layer?.hold(take) ?? 1;
    const held = (key: string) => this.#heldBy(key) + (picked.get(key) ?? 0);
    return {
      held,
      fits: (keys) => keys.every((k) => held(k) < this.#spec.capOf(k) * scale),
      take,
    };
  }

  /** Takes the item's slot and keys and runs it; its outcome joins the group commit of the turn it finishes in. */
  #start(item: I): Settled<V> {
    const keys = this.#spec.keysOf(item);
    this.#busy += 1;
    for (const k of keys) this.#held.set(k, this.#heldBy(k) + 1);
    let held = true;
    const began = performance.now();
    const free = () => {
      if (!held) return;
      held = false;
      this.#busy -= 1;
      for (const k of keys) {
        const left = this.#heldBy(k) - 1;
        if (left > 0) this.#held.set(k, left);
        else this.#held.delete(k);
      }
    };
    const settled = new Promise<V | undefined>((done) => {
      this.#spec.run(item).then(
        (result) => {
          this.#layer?.ran(performance.now() - began, free);
          this.#commits.add({ item, result, free, done });
          if (this.#layer?.claimsAlone(result) === true) this.#refillSoon();
        },
        (err: unknown) => {
          this.#logger.error(`${this.#spec.name}: unable to finish work`, {
            error: messageOf(err),
          });
          this.#keepUnrecorded([item]);
          free();
          done(undefined);
          this.#refillSoon();
          this.#commits.poke(); // a slot stands free: outcomes waiting for it are committed
        },
      );
    });
    this.#running.add(settled);
    void settled.then(() => this.#running.delete(settled));
    return settled;
  }

  /** One group commit: frees the finished items' slots (so the claim sees them), records every outcome, releases the
   *  leases of earlier unrecorded items and claims for the free slots in one transaction, then starts what it claimed.
   *  Never rejects. */
  #commit(batch: Finished<I, R, V>[]): Promise<void> {
    return this.#inTurn(async () => {
      for (const f of batch) f.free();
      this.#layer?.refill(); // what a layer kept starts in the freed slots (or is dropped) before the claim
      const refill = this.#refilling;
      const releasing = this.#unrecorded.splice(0);
      const { results, tail } = await commitTogether(
        this.#store,
        batch.map((f) => (db) => this.#spec.record(f.item, f.result, db)),
        async (db) => {
          if (releasing.length > 0) await this.#spec.release(releasing, db);
          const want = refill ? this.#wanted() : 0;
          return want > 0 ? this.#spec.claim(want, this.#room(), db) : [];
        },
      );
      if (!tail.ok) this.#keepUnrecorded(releasing);
      batch.forEach((f, i) => {
        const written = results[i]!;
        if (written.ok) {
          this.#failures.succeeded();
          this.#report(f, written.value);
          f.done(written.value);
        } else {
          // The lease stays until a later commit releases it: at-least-once even when recording failed.
          this.#failures.failed(written.error);
          this.#keepUnrecorded([f.item]);
          f.done(undefined);
        }
      });
      if (!tail.ok) return this.#refillSoon();
      this.#take(tail.value);
      // With slots free, the loop looks again: what this commit recorded (a feed's next poll, an event's retry) may
      // fall due before the wake the loop planned, and nothing else would tell it while what runs holds its slots.
      if (refill && this.free > 0) this.#spec.idle();
    }).catch((err: unknown) => {
      this.#logger.error(`${this.#spec.name}: unable to record outcomes`, {
        error: messageOf(err),
      });
    });
  }

  /** Measures and logs a recorded outcome; a throwing report must not keep the rest of the batch from settling. */
  #report(f: Finished<I, R, V>, value: V): void {
    try {
      this.#spec.recorded(f.item, f.result, value);
    } catch (err) {
      this.#logger.error(`${this.#spec.name}: unable to report an outcome`, {
        error: messageOf(err),
      });
    }
  }

  #keepUnrecorded(items: readonly I[]): void {
    if (items.length === 0) return;
    this.#unrecorded.push(...items);
    const max = this.#spec.slots * UNRECORDED_SLOTS;
    if (this.#unrecorded.length > max) this.#unrecorded.splice(0, this.#unrecorded.length - max);
  }

  /** After an item that recorded nothing, a commit whose claim failed, or when a layer asks: on the next turn, fills
   *  the free slots, or hands over to the loop (idle) when nothing fits or the claim cannot be written, so a failing
   *  database is retried on the loop's backoff rather than here. */
  #refillSoon(): void {
    if (!this.#refilling || this.#refillQueued) return;
    this.#refillQueued = true;
    setImmediate(() => {
      this.#refillQueued = false;
      if (!this.#refilling) return;
      void this.fill().then(
        (started) => this.#afterRefill(started.length),
        // the loop's tick claims again, and logs the error once per message
        () => this.#afterRefill(0),
      );
    });
  }

  #afterRefill(started: number): void {
    if (started === 0 && this.free > 0) this.#spec.idle();
    this.#commits.poke(); // outcomes a layer let wait while the slots worked are committed once none does
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

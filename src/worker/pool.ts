// The work pool the poller and the deliverer run on: fixed slots and per-key caps, each freed slot refilled at once by a
// claim in the transaction that records the outcomes (group commit), with no batch barrier. States: docs/ARCHITECTURE.md.
import { performance } from 'node:perf_hooks';
import type { Db } from '../db/open.ts';
import type { Logger } from '../log.ts';
import { commitTogether, TurnBatch } from './pool/group-commit.ts';
import { failureLog } from './loop.ts';

/** What a claim sees of the slots: how many items hold a key (in flight, plus those this claim picked so far), whether
 *  an item with these keys still fits under every cap, and taking the keys of an item it picks. */
export type Room = {
  held(key: string): number;
  fits(keys: readonly string[]): boolean;
  take(keys: readonly string[]): void;
};

/** One kind of work. `I` is a claimed item, `R` what its I/O gives, `V` what recording it returns. */
export type PoolSpec<I, R, V> = {
  /** In log lines: 'poll', 'deliver'. */
  name: string;
  slots: number;
  /** The keys an item holds while it is in a slot (a host and its addresses; an endpoint and its application). */
  keysOf(item: I): readonly string[];
  /** The cap of a key, asked at each claim (it may change: an endpoint whose attempts time out is capped at 1). */
  capOf(key: string): number;
  /** Leases up to `free` due items that fit `room`, taking their keys in it; synchronous, inside a write transaction. */
  claim(free: number, room: Room): I[];
  /** The item's I/O, outside any transaction: what to record. A rejection is logged and nothing is recorded. */
  run(item: I): Promise<R>;
  /** Records one outcome; inside the group commit's transaction. */
  record(item: I, result: R): V;
  /** Claimed items kept beyond the slots, each started as a slot frees (0 or absent: none). With a reserve, a finished
   *  item's slot is refilled from it at once, and outcomes wait for their group commit while the slots keep working
   *  (up to LINGER_MS, and while no slot stands idle): fewer, larger transactions. A queued item counts against its
   *  keys' caps at claim time (a key may have as many queued as its cap allows running, for each slot-full of
   *  reserve); it starts only within them. When items run fast, the reserve grows to what the slots start within
   *  RESERVE_MS at their mean run time, up to RESERVE_SLOTS slot-fulls: fewer, larger claims, no longer a wait. */
  reserve?: number;
  /** With a reserve, the longest an outcome waits for its group commit (default LINGER_MS). */
  lingerMs?: number;
  /** With a reserve: whether this outcome may wait for its commit up to DEFER_MS while the pool works on (nothing
   *  waits for it: a 304, a failed fetch). While every outcome waiting is such, a slot that stands idle is refilled by
   *  a claim of its own instead of committing them, so up to DEFER_MAX of them share one transaction. */
  deferrable?(result: R): boolean;
  /** With a reserve, the longest a queued item waits for a slot: an older one is dropped and its lease released by
   *  the next commit, so a lease never runs out on an item that has yet to start (default: no limit). */
  queueMs?: number;
  /** How heavy recording this outcome is (a parsed document: its entries); a group commit takes outcomes up to
   *  COMMIT_WEIGHT of it, and the rest in the next turns. Absent: weightless. */
  weightOf?(result: R): number;
  /** After the commit: measure and log. */
  recorded(item: I, result: R, value: V): void;
  /** Ends the leases of items whose outcome could not be recorded; inside the next transaction that commits. */
  release(items: readonly I[]): void;
  /** Slots are free and nothing that fits was due: the loop works out when to look again. */
  idle(): void;
};

/** An item's end: the value its record returned, once committed; undefined when nothing could be recorded. */
export type Settled<V> = Promise<V | undefined>;

type Finished<I, R, V> = { item: I; result: R; free: () => void; done: (v: V | undefined) => void };

/** The weight (PoolSpec.weightOf) one group commit records at most, beyond its first outcome: about 500 entries of
 *  parsed documents, ~10 ms of the event loop. Recording 2-3 documents of 550 entries in one transaction held it for
 *  20-35 ms while 10 such feeds were polled every 2 s (the API's p99 followed). */
export const COMMIT_WEIGHT = 500;

/** The longest an outcome waits for its group commit in a pool with a reserve (PoolSpec.reserve). */
export const LINGER_MS = 50;

/** A reserve grows to what the slots are expected to start within this time (PoolSpec.reserve)… */
export const RESERVE_MS = 50;
/** …up to this many slot-fulls. */
export const RESERVE_SLOTS = 8;

/** The longest a deferrable outcome (PoolSpec.deferrable) waits for its group commit while the pool works on. */
export const DEFER_MS = 1000;

/** Deferrable outcomes one group commit takes at most: a bound on how long one commit of quiet records holds the event
 *  loop. */
export const DEFER_MAX = 256;

/** Items whose outcome could not be recorded are kept for their lease release up to this many slots' worth; older ones
 *  are forgotten, and their leases simply run out. */
const UNRECORDED_SLOTS = 4;

/** A pool of `spec.slots` slots over `db`. Nothing runs until fill(); commits claim only between start() and stop(). */
export class Pool<I, R, V> {
  readonly #db: Db;
  readonly #spec: PoolSpec<I, R, V>;
  readonly #logger: Logger;
  readonly #held = new Map<string, number>();
  /** Claimed, not started (PoolSpec.reserve), oldest first, with when each was claimed. */
  readonly #queue: { item: I; at: number }[] = [];
  readonly #reserve: number;
  readonly #running = new Set<Settled<V>>();
  readonly #commits: TurnBatch<Finished<I, R, V>>;
  readonly #failures: ReturnType<typeof failureLog>;
  #unrecorded: I[] = [];
  /** Mean run time of the items so far (moving average), when a reserve grows with it. */
  #runMs: number | undefined;
  #busy = 0;
  #refilling = false;
  #refillQueued = false;

  constructor(db: Db, spec: PoolSpec<I, R, V>, logger: Logger) {
    this.#db = db;
    this.#spec = spec;
    this.#logger = logger;
    const weightOf = spec.weightOf;
    this.#reserve = Math.max(0, spec.reserve ?? 0);
    const lingerMs = spec.lingerMs ?? LINGER_MS;
    this.#commits = new TurnBatch(
      (batch) => this.#commit(batch),
      weightOf ? (f) => weightOf(f.result) : undefined,
      COMMIT_WEIGHT,
      // Outcomes wait while every slot is working (the queue refills them) and the loop still claims; deferrable ones
      // also while a slot stands idle and others still work (claims of their own refill the slots meanwhile).
      this.#reserve > 0
        ? {
            hold: (batch) =>
              this.#refilling &&
              (this.free <= 0 || (this.#defers(batch) && this.#busy + this.#queue.length > 0)),
            maxMs: (batch) => (this.#defers(batch) ? DEFER_MS : lingerMs),
          }
        : undefined,
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

  /** Claimed items waiting for a slot (PoolSpec.reserve). */
  get queued(): number {
    return this.#queue.length;
  }

  /** Items in flight holding `key`. */
  held(key: string): number {
    return this.#held.get(key) ?? 0;
  }

  /** Every key an item in flight holds, with how many hold it. */
  get heldKeys(): ReadonlyMap<string, number> {
    return this.#held;
  }

  /** From now on each commit claims for the slots it frees (the loop is running). */
  start(): void {
    this.#refilling = true;
  }

  /** No more refills; items in flight still run and are recorded (drain() waits for them). Queued items are not
   *  started: their leases are released by the next commit, if any (else they run out, or the next start releases
   *  them). */
  stop(): void {
    this.#refilling = false;
    this.#keepUnrecorded(this.#queue.splice(0).map((q) => q.item));
    this.#commits.poke();
  }

  /** Claims what fits in the free slots, in a transaction of its own, and starts it; each promise settles once that
   *  item's outcome is committed. Throws when the claim cannot be written (the loop backs off). */
  fill(): Settled<V>[] {
    const started = this.#startQueued();
    const want = this.#wanted();
    if (want <= 0) return started;
    const releasing = this.#unrecorded.splice(0);
    let items: I[];
    try {
      // IMMEDIATE, as the group commit (group-commit.ts): a claim reads the due window before it leases.
      items = this.#db
        .transaction(() => {
          if (releasing.length > 0) this.#spec.release(releasing);
          return this.#spec.claim(want, this.#room());
        })
        .immediate();
    } catch (err) {
      this.#keepUnrecorded(releasing);
      throw err;
    }
    return [...started, ...this.#take(items)];
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

  /** Whether every outcome of `batch` may wait for its commit (PoolSpec.deferrable), and it is under DEFER_MAX. */
  #defers(batch: readonly Finished<I, R, V>[]): boolean {
    const deferrable = this.#spec.deferrable;
    return (
      deferrable !== undefined &&
      batch.length < DEFER_MAX &&
      batch.every((f) => deferrable(f.result))
    );
  }

  /** How many items a claim asks for: the free slots, and what the reserve lacks. */
  #wanted(): number {
    return Math.max(0, this.free) + Math.max(0, this.#reserveNow() - this.#queue.length);
  }

  /** The reserve as it stands: the spec's, grown to what the slots start within RESERVE_MS at the mean run time, up to
   *  RESERVE_SLOTS slot-fulls (make bench-scale, 304s: a claim, a transaction of its own, every ~20 polls before). */
  #reserveNow(): number {
    const runMs = this.#runMs;
    if (this.#reserve === 0 || runMs === undefined) return this.#reserve;
    const slots = this.#spec.slots;
    const within = Math.floor((slots * RESERVE_MS) / Math.max(runMs, 0.1));
    return Math.min(slots * RESERVE_SLOTS, Math.max(this.#reserve, within));
  }

  /** Starts what fits of freshly claimed items and queues the rest (in claim order). */
  #take(items: readonly I[]): Settled<V>[] {
    const at = performance.now();
    for (const item of items) this.#queue.push({ item, at });
    return this.#startQueued();
  }

  /** Starts queued items, oldest first among those whose keys are under their caps, while slots are free; drops
   *  those that waited longer than the spec's queueMs, free slots or not, so no claim meets a lease that ended while
   *  its item waited (their leases go with the next commit). */
  #startQueued(): Settled<V>[] {
    const started: Settled<V>[] = [];
    const stale = performance.now() - (this.#spec.queueMs ?? Infinity);
    for (let i = 0; i < this.#queue.length;) {
      const { item, at } = this.#queue[i]!;
      const keys = this.#spec.keysOf(item);
      const dropped = at < stale;
      if (!dropped && (this.free <= 0 || !keys.every((k) => this.held(k) < this.#spec.capOf(k)))) {
        i++;
        continue;
      }
      this.#queue.splice(i, 1);
      if (dropped) this.#keepUnrecorded([item]);
      else started.push(this.#start(item));
    }
    return started;
  }

  /** A claim's view of the slots: what runs and what is queued holds its keys; with a reserve, a key may have as many
   *  items queued as its cap lets run for each slot-full of reserve. */
  #room(): Room {
    const picked = new Map<string, number>(); // what this claim picked, and what the queue holds (a reserve's worth)
    for (const { item } of this.#queue)
      for (const k of this.#spec.keysOf(item)) picked.set(k, (picked.get(k) ?? 0) + 1);
    const scale = 1 + Math.ceil(this.#reserveNow() / Math.max(1, this.#spec.slots));
    const held = (key: string) => this.held(key) + (picked.get(key) ?? 0);
    return {
      held,
      fits: (keys) => keys.every((k) => held(k) < this.#spec.capOf(k) * scale),
      take: (keys) => {
        for (const k of keys) picked.set(k, (picked.get(k) ?? 0) + 1);
      },
    };
  }

  /** Takes the item's slot and keys and runs it; its outcome joins the group commit of the turn it finishes in. */
  #start(item: I): Settled<V> {
    const keys = this.#spec.keysOf(item);
    this.#busy += 1;
    for (const k of keys) this.#held.set(k, this.held(k) + 1);
    let held = true;
    const began = performance.now();
    const free = () => {
      if (!held) return;
      held = false;
      this.#busy -= 1;
      for (const k of keys) {
        const left = this.held(k) - 1;
        if (left > 0) this.#held.set(k, left);
        else this.#held.delete(k);
      }
    };
    const settled = new Promise<V | undefined>((done) => {
      this.#spec.run(item).then(
        (result) => {
          if (this.#reserve > 0) {
            const ms = performance.now() - began;
            this.#runMs = this.#runMs === undefined ? ms : this.#runMs * 0.95 + ms * 0.05;
            free(); // its slot goes to the next queued item now; the outcome waits for its commit
            this.#startQueued();
          }
          this.#commits.add({ item, result, free, done });
          // A slot the queue could not refill: claimed for by the commit, or on its own while deferred outcomes wait.
          if (this.#reserve > 0 && this.free > 0 && this.#spec.deferrable?.(result) === true)
            this.#refillSoon();
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
   *  leases of earlier unrecorded items and claims for the free slots in one transaction, then starts what it claimed. */
  #commit(batch: Finished<I, R, V>[]): void {
    for (const f of batch) f.free();
    this.#startQueued(); // with a reserve: queued items past queueMs dropped before the claim, free slots filled
    const refill = this.#refilling;
    const releasing = this.#unrecorded.splice(0);
    const { results, tail } = commitTogether(
      this.#db,
      batch.map((f) => () => this.#spec.record(f.item, f.result)),
      () => {
        if (releasing.length > 0) this.#spec.release(releasing);
        const want = refill ? this.#wanted() : 0;
        return want > 0 ? this.#spec.claim(want, this.#room()) : [];
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
    if (refill && tail.value.length === 0 && this.free > 0) this.#spec.idle();
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

  /** After an item that recorded nothing, or a commit whose claim failed: on the next turn, fills the free slots, or
   *  hands over to the loop (idle) when nothing fits or the claim cannot be written, so a failing database is retried
   *  on the loop's backoff rather than here. */
  #refillSoon(): void {
    if (!this.#refilling || this.#refillQueued) return;
    this.#refillQueued = true;
    setImmediate(() => {
      this.#refillQueued = false;
      if (!this.#refilling) return;
      let started = 0;
      try {
        started = this.fill().length;
      } catch {
        // the loop's tick claims again, and logs the error once per message
      }
      if (started === 0 && this.free > 0) this.#spec.idle();
      this.#commits.poke(); // outcomes deferred while the slots worked are committed once none does
    });
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

// The work pool's throughput layer, opt-in by a pool's spec: a reserve of claimed items, and outcomes that wait.
//
// States (what a caller can rely on), on top of the core's (core.ts; the poller uses this layer, the deliverer does
// not): fewer, larger transactions for a bounded wait. Each claim asks for the free slots and what the
// reserve lacks; the items it leases beyond the free slots are queued: not started, yet counted against their keys at
// claim time (a key takes at most its cap again of queued items for each slot-full of reserve). A queued item starts,
// oldest first among those whose keys are under their caps, as soon as a slot frees — before the outcome that freed it
// is committed; one that waited longer than queueMs, or that stop() finds, is dropped, and the next commit releases its
// lease (it is claimed afresh). A finished item's slot is free at once; its outcome waits for the group commit while
// every slot works, up to lingerMs (LINGER_MS), unless it is urgent (someone waits for it: it lingers for nothing).
// While every waiting outcome is deferrable (and they are fewer than DEFER_MAX) they also wait while any slot works or
// anything is queued, up to DEFER_MS, and a slot that stands idle meanwhile is refilled by a claim in a transaction of
// its own; a non-deferrable outcome joining them brings the batch back to the linger. Otherwise a slot that stands
// idle (nothing queued fits it) commits the batch at once, with the claim that refills the slots and the reserve. The
// reserve starts at the spec's and, while items run fast, grows to what the slots start within RESERVE_MS at the mean
// run time so far, up to RESERVE_SLOTS slot-fulls.
import { performance } from 'node:perf_hooks';
import type { Layer, Settled, Slots } from './spec.ts';

/** What the layer is given (PoolSpec.layer = throughput(…)). */
export type ThroughputSpec<R> = {
  /** Claimed items kept beyond the slots, at least one (the poller: a slot-full). */
  reserve: number;
  /** The longest an outcome waits for its group commit while every slot works (default LINGER_MS). */
  lingerMs?: number;
  /** Whether this outcome may wait for its commit up to DEFER_MS while the pool works on (nothing waits for it: a 304,
   *  a failed fetch). Absent: none may. */
  deferrable?(result: R): boolean;
  /** Whether someone waits for this outcome's commit (a parsed document's events): a batch holding one lingers for
   *  nothing, and commits as soon as no transaction of the pool is under way. Absent: none is. */
  urgent?(result: R): boolean;
  /** The longest a queued item waits for a slot: an older one is dropped and its lease released by the next commit, so
   *  a lease never runs out on an item that has yet to start (default: no limit). */
  queueMs?: number;
};

/** The longest an outcome waits for its group commit while every slot works (ThroughputSpec.lingerMs). */
export const LINGER_MS = 50;

/** The reserve grows to what the slots are expected to start within this time… */
export const RESERVE_MS = 50;
/** …up to this many slot-fulls. */
export const RESERVE_SLOTS = 8;

/** The longest a deferrable outcome (ThroughputSpec.deferrable) waits for its group commit while the pool works on. */
export const DEFER_MS = 1000;

/** Deferrable outcomes one group commit takes at most: a bound on how long one commit of quiet records holds the event
 *  loop. */
export const DEFER_MAX = 256;

/** The throughput layer for a pool's spec (PoolSpec.layer): each pool it is given to gets a reserve of its own. */
export function throughput<I, R, V>(
  spec: ThroughputSpec<R>,
): (slots: Slots<I, V>) => Layer<I, R, V> {
  return (slots) => new Throughput(spec, slots);
}

class Throughput<I, R, V> implements Layer<I, R, V> {
  readonly #spec: ThroughputSpec<R>;
  readonly #slots: Slots<I, V>;
  readonly #reserve: number;
  readonly #lingerMs: number;
  /** Claimed, not started, oldest first, with when each was claimed. */
  readonly #queue: { item: I; at: number }[] = [];
  /** Mean run time of the items so far (moving average): the reserve grows with it. */
  #runMs: number | undefined;

  constructor(spec: ThroughputSpec<R>, slots: Slots<I, V>) {
    this.#spec = spec;
    this.#slots = slots;
    this.#reserve = Math.max(1, spec.reserve);
    this.#lingerMs = spec.lingerMs ?? LINGER_MS;
  }

  // Outcomes wait while every slot is working (the queue refills them); deferrable ones also while a slot stands idle
  // and others still work (claims of their own refill the slots meanwhile); a batch with an urgent one does not wait.
  readonly linger = {
    hold: (batch: readonly { readonly result: R }[]): boolean =>
      !this.#urgent(batch) &&
      (this.#slots.free() <= 0 ||
        (this.#defers(batch) && this.#slots.busy() + this.#queue.length > 0)),
    maxMs: (batch: readonly { readonly result: R }[]): number =>
      this.#defers(batch) ? DEFER_MS : this.#lingerMs,
  };

  extra(): number {
    return Math.max(0, this.#reserveNow() - this.#queue.length);
  }

  /** A key may have as many items queued as its cap lets run for each slot-full of reserve. */
  hold(take: (keys: readonly string[]) => void): number {
    for (const { item } of this.#queue) take(this.#slots.keysOf(item));
    return 1 + Math.ceil(this.#reserveNow() / Math.max(1, this.#slots.size));
  }

  take(items: readonly I[]): Settled<V>[] {
    const at = performance.now();
    for (const item of items) this.#queue.push({ item, at });
    return this.refill();
  }

  /** Starts queued items, oldest first among those whose keys are under their caps, while slots are free; drops those
   *  that waited longer than queueMs, free slots or not, so no claim meets a lease that ended while its item waited. */
  refill(): Settled<V>[] {
    const started: Settled<V>[] = [];
    const stale = performance.now() - (this.#spec.queueMs ?? Infinity);
    for (let i = 0; i < this.#queue.length;) {
      const { item, at } = this.#queue[i]!;
      const dropped = at < stale;
      if (!dropped && (this.#slots.free() <= 0 || !this.#slots.fits(this.#slots.keysOf(item)))) {
        i++;
        continue;
      }
      this.#queue.splice(i, 1);
      if (dropped) this.#slots.drop(item);
      else started.push(this.#slots.start(item));
    }
    return started;
  }

  ran(ms: number, free: () => void): void {
    this.#runMs = this.#runMs === undefined ? ms : this.#runMs * 0.95 + ms * 0.05;
    free(); // its slot goes to the next queued item now; the outcome waits for its commit
    this.refill();
  }

  /** A slot the queue could not refill while a deferrable outcome waits: a claim of its own refills it. */
  claimsAlone(result: R): boolean {
    return this.#slots.free() > 0 && this.#spec.deferrable?.(result) === true;
  }

  drop(): I[] {
    return this.#queue.splice(0).map((q) => q.item);
  }

  /** Whether someone waits for an outcome of `batch` (ThroughputSpec.urgent). */
  #urgent(batch: readonly { readonly result: R }[]): boolean {
    const urgent = this.#spec.urgent;
    return urgent !== undefined && batch.some((f) => urgent(f.result));
  }

  /** Whether every outcome of `batch` may wait for its commit (ThroughputSpec.deferrable), fewer than DEFER_MAX. */
  #defers(batch: readonly { readonly result: R }[]): boolean {
    const deferrable = this.#spec.deferrable;
    return (
      deferrable !== undefined &&
      batch.length < DEFER_MAX &&
      batch.every((f) => deferrable(f.result))
    );
  }

  /** The reserve as it stands: the spec's, grown to what the slots start within RESERVE_MS at the mean run time, up to
   *  RESERVE_SLOTS slot-fulls, so that claims (each a transaction of its own while outcomes are deferred) come less
   *  often when items run fast, without a queued item waiting longer. */
  #reserveNow(): number {
    const runMs = this.#runMs;
    if (runMs === undefined) return this.#reserve;
    const size = this.#slots.size;
    const within = Math.floor((size * RESERVE_MS) / Math.max(runMs, 0.1));
    return Math.min(size * RESERVE_SLOTS, Math.max(this.#reserve, within));
  }
}

// What a work pool is given: one kind of work's spec, the claim's room, and the two sides of a layer on the core
// (throughput.ts): what it sees of the slots, and what it adds to them.
import type { Sql } from '../../db/engine.ts';
import type { Linger } from './group-commit.ts';

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
  /** Leases up to `free` due items that fit `room`, taking their keys in it; inside a write transaction (`db`). */
  claim(free: number, room: Room, db: Sql): Promise<I[]>;
  /** The item's I/O, outside any transaction: what to record. A rejection is logged and nothing is recorded. */
  run(item: I): Promise<R>;
  /** Records one outcome; inside the group commit's transaction (`db`). */
  record(item: I, result: R, db: Sql): Promise<V>;
  /** How heavy recording this outcome is (a parsed document: its entries); a group commit takes outcomes up to
   *  COMMIT_WEIGHT of it, and the rest in the next turns. Absent: weightless. */
  weightOf?(result: R): number;
  /** After the commit: measure and log. */
  recorded(item: I, result: R, value: V): void;
  /** Ends the leases of items whose outcome could not be recorded; inside the next transaction that commits (`db`). */
  release(items: readonly I[], db: Sql): Promise<void>;
  /** Slots are free and nothing that fits was due: the loop works out when to look again. */
  idle(): void;
  /** A layer on the core, made for each pool (throughput.ts's `throughput()`); absent: the core alone. */
  layer?: (slots: Slots<I, V>) => Layer<I, R, V>;
};

/** An item's end: the value its record returned, once committed; undefined when nothing could be recorded. */
export type Settled<V> = Promise<V | undefined>;

/** The slots as a layer sees them. */
export type Slots<I, V> = {
  /** How many there are (PoolSpec.slots). */
  readonly size: number;
  free(): number;
  busy(): number;
  keysOf(item: I): readonly string[];
  /** Whether an item with these keys may start now: every key under its cap. */
  fits(keys: readonly string[]): boolean;
  /** Takes a free slot and the item's keys, and runs the item. */
  start(item: I): Settled<V>;
  /** A claimed item that will not run: its lease is released by the next commit. */
  drop(item: I): void;
};

/** What a layer adds to the core: claimed items it keeps beyond the free slots, and outcomes it lets wait for a larger
 *  group commit. The core calls it at these points only. */
export type Layer<I, R, V> = {
  /** Items a claim asks for beyond the free slots. */
  extra(): number;
  /** Counts the items it keeps in a claim's room (`take` their keys); returns how many times its cap each key may hold
   *  there. */
  hold(take: (keys: readonly string[]) => void): number;
  /** Claimed items: starts those that fit in the free slots, keeps the rest. */
  take(items: readonly I[]): Settled<V>[];
  /** Starts kept items in the free slots; called by fill() and by each commit before its claim. */
  refill(): Settled<V>[];
  /** An item's run resolved after `ms`; `free` frees its slot before its outcome is committed. */
  ran(ms: number, free: () => void): void;
  /** Once `result` waits for its commit: whether a slot stands idle that a claim of its own should refill now. */
  claimsAlone(result: R): boolean;
  /** Whether a batch of outcomes waits for more, and for how long at most (asked only while the pool refills). */
  linger: Linger<{ readonly result: R }>;
  /** On stop(): the items it keeps, which will not run. */
  drop(): I[];
};

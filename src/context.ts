// What every action receives: the database, the clock, the config, and hooks into the running loops.
import type { Clock } from './clock.ts';
import type { Config } from './config.ts';
import type { Engine, Sql } from './db/engine.ts';
import { createFilterCache, type FilterCache } from './feed/filter/cache.ts';
import { createIdGenerator } from './ids.ts';

export type Ctx = {
  /** The database engine: its transactions (`transaction` below) and reads. */
  store: Engine;
  /** Where this context's statements run: the engine itself (each statement commits on its own), or, in the context a
   *  transaction hands its work (`transaction`), that transaction. */
  db: Sql;
  clock: Clock;
  config: Config;
  /** This process among the nodes on the database (worker/nodes.ts). */
  node: NodeShare;
  /** Wakes the poller (a new feed should be fetched within a second). */
  nudgePoller: () => void;
  /** Wakes the deliverer (events are waiting). */
  nudgeDeliverer: () => void;
  /** Wakes the backfill loop (a backfill is ready to queue: actions/backfills.ts). */
  nudgeBackfiller: () => void;
  /** Uses seen by authenticated requests and not yet written (see LastUses). */
  lastUses: LastUses;
  /** The chart's poll counts noted by polls and not yet written (actions/poll-counts.ts). */
  pollCounts: PollCounts;
  /** Subscriptions' filters compiled, kept between polls (feed/filter/cache.ts). */
  filters: FilterCache;
  /** Entries subscriptions' filters kept from being sent since the process started, by why: a block rule matched, or
   *  no keep rule did (/metrics' feedsub_entries_filtered_total). Noted in the transaction that judged them. */
  filtered: FilteredCounts;
};

/** Entries filtered out, by why. */
export type FilteredCounts = { blocked: number; not_kept: number };

/** A node: its id (the nodes table's), its part of a cap that holds for all nodes together, such as the attempts one
 *  endpoint may have in flight (worker/nodes.ts shareOf), and, for a node with a heartbeat (serve), how long its leases
 *  last between the renewals of its heartbeat: a process without one (a CLI command, a test) leases work for the work's
 *  deadline and a margin. */
export type NodeShare = { id: string; share: (cap: number) => number; leaseMs?: number };

/** A process that works alone (CLI commands, tests, SQLite): every cap is wholly its own. */
export function soloNode(): NodeShare {
  return { id: createIdGenerator()(), share: (cap) => cap };
}

/** The last use of each API key (id) and dashboard session (hash) since the last flush, as ISO times: a request only
 *  notes it here, and a timer writes them (actions/keys.ts flushLastUses), so reading never writes to the database. */
export type LastUses = { keys: Map<string, string>; sessions: Map<string, string> };

/** No use noted yet. */
export function newLastUses(): LastUses {
  return { keys: new Map(), sessions: new Map() };
}

/** The chart's poll counts noted by polls: not yet written (`noted`, by `${hour} ${feedId}`), and taken by a write
 *  that has not committed them yet (`writing`); `full` asks for a write early (actions/poll-counts.ts). */
export type PollCounts = {
  noted: Map<string, PollCount>;
  writing: Map<string, PollCount>;
  full: () => void;
};
/** Polls of one feed in one UTC hour ('YYYY-MM-DDTHH'), as feed_poll_hours adds them up. */
export type PollCount = {
  hour: string;
  feed_id: string;
  ok: number;
  failed: number;
  throttled: number;
  new_entries: number;
};

/** Nothing noted; `full` does nothing until the daemon wires it to its writer. */
export function newPollCounts(): PollCounts {
  return { noted: new Map(), writing: new Map(), full: () => {} };
}

/** Runs `fn` in a read-write transaction of `ctx`'s engine, handing it a context whose statements run in that
 *  transaction. The engine's rules hold (engine.ts): `fn` may run more than once, awaits nothing but its statements, and
 *  opens no other transaction. */
export function transaction<T>(ctx: Ctx, fn: (tx: Ctx) => Promise<T>): Promise<T> {
  return ctx.store.write((sql) => fn(within(ctx, sql)));
}

/** `ctx` with its statements run in the transaction `sql`. */
export function within(ctx: Ctx, sql: Sql): Ctx {
  return { ...ctx, db: sql };
}

/** A context with no loops attached (CLI commands, tests). */
export function quietCtx(store: Engine, clock: Clock, config: Config): Ctx {
  return {
    store,
    db: store,
    clock,
    config,
    node: soloNode(),
    nudgePoller: () => {},
    nudgeDeliverer: () => {},
    nudgeBackfiller: () => {},
    lastUses: newLastUses(),
    pollCounts: newPollCounts(),
    filters: createFilterCache(),
    filtered: { blocked: 0, not_kept: 0 },
  };
}

// What every action receives: the database, the clock, the config, and hooks into the running loops.
import type { Clock } from './clock.ts';
import type { Config } from './config.ts';
import type { Db } from './db/open.ts';

export type Ctx = {
  db: Db;
  clock: Clock;
  config: Config;
  /** Wakes the poller (a new feed should be fetched within a second). */
  nudgePoller: () => void;
  /** Wakes the deliverer (events are waiting). */
  nudgeDeliverer: () => void;
};

/** A context with no loops attached (CLI commands, tests). */
export function quietCtx(db: Db, clock: Clock, config: Config): Ctx {
  return { db, clock, config, nudgePoller: () => {}, nudgeDeliverer: () => {} };
}

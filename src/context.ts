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
  /** Stores a WebSub content delivery whose signature was checked (worker/websub-apply.ts receivePush, wired by
   *  app.ts); absent where no loop runs. Never rejects for a bad body. */
  receivePush?: (push: {
    feedId: string;
    body: Uint8Array;
    contentType: string | null;
  }) => Promise<void>;
  /** Uses seen by authenticated requests and not yet written (see LastUses). */
  lastUses: LastUses;
};

/** The last use of each API key (id) and dashboard session (hash) since the last flush, as ISO times: a request only
 *  notes it here, and a timer writes them (actions/keys.ts flushLastUses), so reading never writes to the database. */
export type LastUses = { keys: Map<string, string>; sessions: Map<string, string> };

/** No use noted yet. */
export function newLastUses(): LastUses {
  return { keys: new Map(), sessions: new Map() };
}

/** A context with no loops attached (CLI commands, tests). */
export function quietCtx(db: Db, clock: Clock, config: Config): Ctx {
  return {
    db,
    clock,
    config,
    nudgePoller: () => {},
    nudgeDeliverer: () => {},
    lastUses: newLastUses(),
  };
}

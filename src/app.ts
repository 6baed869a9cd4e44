// The only wiring: lock the data dir → open the database → HTTP server → loops; stop HTTP → loops → database → lock.
import type { ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { databaseFile } from './commands.ts';
import { quietCtx, type Ctx } from './context.ts';
import { systemClock, type Clock } from './clock.ts';
import type { Config } from './config.ts';
import { flushLastUses } from './actions/keys.ts';
import { writePollCounts } from './actions/poll-counts.ts';
import { startCheckpointer } from './db/checkpointer.ts';
import { retryWhileBusy } from './db/busy.ts';
import { DataDirLockedError, lockDataDir, type DataDirLock } from './db/lock.ts';
import { ensureDataDir, openDatabase, type Db } from './db/open.ts';
import { SqliteEngine } from './db/sqlite-engine.ts';
import type { Engine } from './db/engine.ts';
import { listenHttp } from './http/listen.ts';
import { createHttpApp } from './http/server.ts';
import type { Logger } from './log.ts';
import { releaseAllEventLeases } from './store/events-claim.ts';
import { countWaitingEvents } from './store/events.ts';
import { releaseAllFeedLeases } from './store/feeds-poll.ts';
import { backfillTick, createBackfiller } from './worker/backfiller.ts';
import { deliverTick } from './worker/deliver/deliverer.ts';
import { createWorkers, type Workers } from './worker/index.ts';
import { createLoop } from './worker/loop.ts';
import { createMetrics } from './worker/metrics.ts';
import { pollTick } from './worker/poll/round.ts';

export type RunningApp = {
  url: string;
  dbFile: string;
  ctx: Ctx;
  workers: Workers;
  stop(): Promise<void>;
};

/** How often the checkpoint thread copies the WAL into the database file. */
export const CHECKPOINT_INTERVAL_MS = 200;
/** How often the uses of keys and sessions noted by requests are written (actions/keys.ts flushLastUses). */
export const LAST_USE_FLUSH_MS = 60_000;
/** How often the chart's poll counts noted by polls are written (actions/poll-counts.ts), unless enough are noted first. */
export const POLL_COUNT_WRITE_MS = 60_000;

/** Starts the daemon: lock and database, its checkpoint thread, HTTP server, poller, deliverer, WebSub, backfill and
 *  maintenance loops. Throws DataDirLockedError while another serve runs on the same data directory. */
export async function startApp(
  config: Config,
  logger: Logger,
  clock: Clock = systemClock,
): Promise<RunningApp> {
  const dbFile = databaseFile(config);
  const { db, lock } = openExclusive(config, logger);
  const ctx: Ctx = { ...quietCtx(new SqliteEngine(db), clock, config) };
  await releaseStaleLeases(ctx.store, logger);
  const metrics = createMetrics(ctx);
  const checkpointer = startCheckpointer(db, {
    intervalMs: CHECKPOINT_INTERVAL_MS,
    logger: logger.child({ loop: 'checkpoint' }),
    telemetry: metrics.telemetry,
  });
  const workers = createWorkers(ctx, logger, metrics.telemetry);
  ctx.nudgePoller = workers.poller.nudge;
  ctx.nudgeDeliverer = workers.deliverer.nudge;
  const backfiller = createBackfiller(ctx, logger);
  ctx.nudgeBackfiller = backfiller.nudge;
  const lastUses = createLoop('last-use', async () => void (await flushLastUses(ctx)), {
    idleMs: LAST_USE_FLUSH_MS,
    logger,
  });
  const pollCounts = createLoop('poll-counts', async () => void (await writePollCounts(ctx)), {
    idleMs: POLL_COUNT_WRITE_MS,
    logger,
  });
  ctx.pollCounts.full = pollCounts.nudge;
  const app = createHttpApp(ctx, logger, {
    registry: metrics.registry,
    read: async (doc, deadline) => workers.parsePool.read(doc, deadline),
  });
  let server: ServerType;
  try {
    server = await listenHttp(app.fetch, {
      hostname: config.server.host,
      port: config.server.port,
      logger,
    });
  } catch (err) {
    await workers.close();
    await checkpointer.stop();
    db.close();
    lock.release();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  const host = config.server.host.includes(':') ? `[${config.server.host}]` : config.server.host;
  const url = `http://${host}:${port}`;
  workers.start();
  backfiller.start(); // a backfill a stopped daemon left half queued goes on now
  lastUses.start();
  pollCounts.start();
  logger.info('feedsub: listening', { url, database: dbFile });
  let stopping: Promise<void> | undefined;
  // One budget for the whole stop: the loops keep working while HTTP drains, so in-flight work shares the deadline.
  const stop = () =>
    (stopping ??= (async () => {
      const started = Date.now();
      const deadline = started + config.server.shutdown_timeout_seconds * 1000;
      const left = () => Math.max(0, deadline - Date.now());
      await closeServer(server, left());
      await lastUses.stop(left());
      await lastUses.runOnce(); // the uses the last requests noted (a failure is logged by the loop)
      await backfiller.stop(left()); // what it has not queued is queued at the next start
      await workers.stop(left());
      await pollCounts.stop(left());
      await pollCounts.runOnce(); // the counts of the last polls (a failure is logged by the loop)
      // Closing an HTTP agent waits for its open requests; past the deadline those were abandoned, so do not wait for them.
      if (!(await settlesWithin(workers.close(), left() + CLOSE_GRACE_MS)))
        logger.warn('feedsub: abandoned open connections at shutdown', {});
      await checkpointer.stop();
      db.close(); // the last connection to close checkpoints what is left and removes the WAL
      lock.release();
      logger.info('feedsub: stopped', { duration_ms: Date.now() - started });
    })());
  return { url, dbFile, ctx, workers, stop };
}

/** The data directory (created owner-only; a warning when an existing one is open to other users), its lock, and the
 *  database, with the leases a dead predecessor left released. Throws DataDirLockedError while another serve holds it. */
function openExclusive(config: Config, logger: Logger): { db: Db; lock: DataDirLock } {
  const dir = resolve(config.storage.data_dir);
  const made = ensureDataDir(dir);
  if (!made.created && (made.mode & 0o077) !== 0)
    logger.warn('feedsub: the data directory is open to other users; chmod 700 it', {
      data_dir: dir,
      mode: made.mode.toString(8).padStart(4, '0'),
    });
  const lock = lockDataDir(dir);
  let db: Db;
  try {
    db = openDatabase(databaseFile(config));
  } catch (err) {
    lock.release();
    throw err;
  }
  return { db, lock };
}

/** Releases every lease in the database: called with the data directory's lock held, when no other serve or poll runs,
 *  so each lease belongs to a process that is gone; its feeds and deliveries resume now, not when the leases run out
 *  (up to minutes). */
async function releaseStaleLeases(store: Engine, logger: Logger): Promise<void> {
  try {
    const released = await store.write(async (db) => ({
      feeds: await releaseAllFeedLeases(db),
      events: await releaseAllEventLeases(db),
    }));
    if (released.feeds + released.events > 0)
      logger.info('feedsub: released the leases of a stopped instance', released);
  } catch (err) {
    logger.warn(
      'feedsub: unable to release the leases of a stopped instance; they run out on their own',
      { error: err instanceof Error ? err.message : String(err) },
    );
  }
}

const CLOSE_GRACE_MS = 1000;

/** True when `promise` settles within `ms`; false (leaving it running) otherwise. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<false>((resolvePromise) => {
    timer = setTimeout(() => resolvePromise(false), ms);
  });
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      limit,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Stops accepting connections, lets in-flight requests finish, then drops idle keep-alive sockets. */
function closeServer(server: ServerType, timeoutMs: number): Promise<void> {
  return new Promise((resolvePromise) => {
    const force = setTimeout(() => {
      (server as { closeAllConnections?: () => void }).closeAllConnections?.();
    }, timeoutMs);
    server.close(() => {
      clearTimeout(force);
      resolvePromise();
    });
    (server as { closeIdleConnections?: () => void }).closeIdleConnections?.();
  });
}

/** Fetches every active feed once regardless of schedule (through the work pool, a chunk of feeds at a time, each
 *  leased as it starts), queues events and every ready backfill, then delivers until no due event is left: each round
 *  claims what is sendable now (the next event of each subscription as the one before it is delivered; a failed one
 *  again once its retry is due). The summary says how many events are still waiting (failed ones wait for their
 *  retry: serve sends them).
 *  Like serve, it holds the data directory's lock meanwhile (and so releases the leases a dead process left): throws
 *  DataDirLockedError while a serve or another poll holds it, unless `force`. Stopping drains the pools before
 *  anything else, and closes the database before the HTTP agents, so a fetch or an attempt cut short by the stop can
 *  never be recorded as a failure. */
export async function runPollOnce(
  config: Config,
  logger: Logger,
  opts: { force: boolean } = { force: false },
): Promise<string> {
  const { db, lock } = opts.force
    ? { db: openDatabase(databaseFile(config)), lock: undefined }
    : openForPoll(config, logger);
  const ctx = quietCtx(new SqliteEngine(db), systemClock, config);
  if (lock) await releaseStaleLeases(ctx.store, logger);
  const workers = createWorkers(ctx, logger);
  try {
    const { summary: p } = await pollTick(ctx, workers.pollerDeps, { all: true });
    // The backfills ready (those this poll's baselines made ready among them), whole, before the deliveries.
    await backfillTick(ctx, { after: '' }, logger, Number.POSITIVE_INFINITY);
    const d = await deliverAllDue(ctx, workers);
    return (
      `feeds fetched ${p.fetched}, not modified ${p.notModified}, failed ${p.failed}, new entries ${p.newEntries}, ` +
      `events delivered ${d.delivered}, events failed ${d.failed}, events waiting ${await countWaitingEvents(ctx.db)}`
    );
  } finally {
    const timeoutMs = config.server.shutdown_timeout_seconds * 1000;
    await workers.stop(timeoutMs); // the loops never started: this drains the pools' work in flight
    db.close(); // before the agents: an outcome that arrives after this is not recorded, and its lease runs out
    if (!(await settlesWithin(workers.close(), CLOSE_GRACE_MS)))
      logger.warn('feedsub: abandoned open connections at exit', {});
    lock?.release();
  }
}

/** The lock and the database for poll --once. A poll writes what the daemon's poller owns (each feed's schedule,
 *  validators, error counts, health events), so beside a live serve it would move that daemon's feeds under it. */
function openForPoll(config: Config, logger: Logger): { db: Db; lock: DataDirLock } {
  try {
    return openExclusive(config, logger);
  } catch (err) {
    if (!(err instanceof DataDirLockedError)) throw err;
    throw new DataDirLockedError(
      `poll: unable to lock the data directory ${resolve(config.storage.data_dir)}: a feedsub serve (or another poll) is running on it, and a serve polls every feed on its own schedule (POST /v1/feeds/{id}/refresh fetches one now); stop it first, or pass --force to poll beside it`,
    );
  }
}

/** Delivery rounds until one claims nothing: every event due now, and those that fall due meanwhile, get an attempt. */
async function deliverAllDue(
  ctx: Ctx,
  workers: Workers,
): Promise<{ delivered: number; failed: number }> {
  let delivered = 0;
  let failed = 0;
  for (;;) {
    // Beside a running serve (--force) a claim can find the write lock taken past the busy timeout: wait it out.
    const { summary, started } = await retryWhileBusy(() =>
      deliverTick(ctx, workers.delivererDeps),
    );
    if (started === 0) return { delivered, failed };
    delivered += summary.delivered;
    failed += summary.failed + summary.dead;
  }
}

// The only wiring: lock the data dir → open the database → HTTP server → loops; stop HTTP → loops → database → lock.
// On PostgreSQL (storage.database_url) there is no data directory to lock and no checkpoint thread.
import type { ServerType } from '@hono/node-server';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { quietCtx, type Ctx } from './context.ts';
import { systemClock, type Clock } from './clock.ts';
import type { Config } from './config.ts';
import { flushLastUses } from './actions/keys.ts';
import { writePollCounts } from './actions/poll-counts.ts';
import { startCheckpointer, type Checkpointer } from './db/checkpointer.ts';
import { retryWhileBusy } from './db/busy.ts';
import { openConfiguredDatabase, type OpenedDatabase } from './db/connect.ts';
import { startNudges, type NudgeKind, type Nudges } from './db/nudges.ts';
import { DataDirLockedError } from './db/lock.ts';
import type { Engine } from './db/engine.ts';
import { listenHttp } from './http/listen.ts';
import { createHttpApp } from './http/server.ts';
import type { Logger } from './log.ts';
import { releaseAllEventLeases } from './store/events-claim.ts';
import { countWaitingEvents } from './store/events.ts';
import { releaseAllFeedLeases } from './store/feeds-poll.ts';
import { serviceKey } from './store/service-keys.ts';
import { backfillTick, createBackfiller } from './worker/backfiller.ts';
import { deliverTick } from './worker/deliver/deliverer.ts';
import { createWorkers, type Workers } from './worker/index.ts';
import { createLoop } from './worker/loop.ts';
import { createMetrics } from './worker/metrics.ts';
import { createHeartbeat } from './worker/nodes.ts';
import { pollTick } from './worker/poll/round.ts';

export type RunningApp = {
  url: string;
  /** The database file, or on PostgreSQL its URL with the password hidden. */
  database: string;
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
 *  maintenance loops. Throws DataDirLockedError while another serve runs on the same data directory. On PostgreSQL the
 *  times follow the server's clock (db/database-clock.ts) rather than `clock`. */
export async function startApp(
  config: Config,
  logger: Logger,
  clock: Clock = systemClock,
): Promise<RunningApp> {
  const database = await openConfiguredDatabase(config, logger, { clock, lock: true });
  const ctx: Ctx = { ...quietCtx(database.engine, database.clock, config) };
  if (database.kind === 'sqlite') await releaseStaleLeases(ctx.store, logger);
  // What the node holds is read from the pools, which exist by its first beat.
  const holds = () => ({
    polls: workers.pollerDeps.pool.busy,
    deliveries: workers.delivererDeps.pool.busy,
  });
  const heartbeat = createHeartbeat(ctx, {
    name: config.cluster.node_name,
    holds,
    // A node gone: the feeds and events it leased can be claimed now, and nothing else would wake the loops for them.
    gone: () => {
      workers.poller.nudge();
      workers.deliverer.nudge();
    },
    logger: logger.child({ loop: 'heartbeat' }),
  });
  ctx.node = heartbeat.node; // before the loops: their caps are this node's share
  const metrics = createMetrics(ctx, { nodes: heartbeat.live });
  const checkpointer: Checkpointer | undefined = database.sqlite
    ? startCheckpointer(database.sqlite, {
        intervalMs: CHECKPOINT_INTERVAL_MS,
        logger: logger.child({ loop: 'checkpoint' }),
        telemetry: metrics.telemetry,
      })
    : undefined;
  const workers = createWorkers(ctx, logger, metrics.telemetry);
  const backfiller = createBackfiller(ctx, logger);
  // A nudge wakes this node's loop and, on PostgreSQL, the other nodes' (db/nudges.ts).
  const local: Record<NudgeKind, () => void> = {
    poll: workers.poller.nudge,
    deliver: workers.deliverer.nudge,
    backfill: backfiller.nudge,
  };
  const nudges: Nudges | undefined =
    database.kind === 'postgres'
      ? await startNudges({
          url: config.storage.database_url,
          node: ctx.node.id,
          notify: (channel, payload) =>
            ctx.store.write((db) => db.get('SELECT pg_notify(?, ?) AS sent', [channel, payload])),
          receive: (kind) => local[kind](),
          logger: logger.child({ loop: 'nudges' }),
        })
      : undefined;
  const nudge = (kind: NudgeKind) => () => {
    local[kind]();
    nudges?.send(kind);
  };
  ctx.nudgePoller = nudge('poll');
  ctx.nudgeDeliverer = nudge('deliver');
  ctx.nudgeBackfiller = nudge('backfill');
  const lastUses = createLoop('last-use', async () => void (await flushLastUses(ctx)), {
    idleMs: LAST_USE_FLUSH_MS,
    logger,
  });
  const pollCounts = createLoop('poll-counts', async () => void (await writePollCounts(ctx)), {
    idleMs: POLL_COUNT_WRITE_MS,
    logger,
  });
  ctx.pollCounts.full = pollCounts.nudge;
  try {
    await heartbeat.beat();
  } catch (err) {
    logger.warn('feedsub: unable to register this node; the heartbeat tries again', {
      error: err instanceof Error ? err.message : String(err),
    });
  }
  // Every node signs the dashboard's sign-in tokens with one key, so a form one node served may be posted to another.
  const loginKey = await ctx.store.write((db) =>
    serviceKey(db, 'dashboard-login', randomBytes(32).toString('base64url')),
  );
  const app = createHttpApp(ctx, logger, {
    loginKey: Buffer.from(loginKey, 'base64url'),
    nodes: heartbeat.live,
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
    await nudges?.close();
    await heartbeat.leave().catch(() => {});
    await workers.close();
    await checkpointer?.stop();
    await database.close();
    database.release();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  const host = config.server.host.includes(':') ? `[${config.server.host}]` : config.server.host;
  const url = `http://${host}:${port}`;
  workers.start();
  heartbeat.loop.start();
  backfiller.start(); // a backfill a stopped daemon left half queued goes on now
  lastUses.start();
  pollCounts.start();
  logger.info('feedsub: listening', { url, database: database.name });
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
      await heartbeat.loop.stop(left());
      await heartbeat.leave().catch((err: unknown) =>
        logger.warn('feedsub: unable to remove this node; its row lapses on its own', {
          error: err instanceof Error ? err.message : String(err),
        }),
      );
      await nudges?.close();
      // Closing an HTTP agent waits for its open requests; past the deadline those were abandoned, so do not wait for them.
      if (!(await settlesWithin(workers.close(), left() + CLOSE_GRACE_MS)))
        logger.warn('feedsub: abandoned open connections at shutdown', {});
      await checkpointer?.stop();
      await database.close();
      database.release();
      logger.info('feedsub: stopped', { duration_ms: Date.now() - started });
    })());
  return { url, database: database.name, ctx, workers, stop };
}

/** Releases every lease in the database: called with the data directory's lock held, when no other serve or poll runs,
 *  so each lease belongs to a process that is gone; its feeds and deliveries resume now, not when the leases run out
 *  (up to minutes). SQLite only: several nodes may share a PostgreSQL database, and the leases there may be theirs, so
 *  the leases a stopped node left run out on their own. */
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
 *  Like serve on SQLite, it holds the data directory's lock meanwhile (and so releases the leases a dead process
 *  left): throws DataDirLockedError while a serve or another poll holds it, unless `force`. Stopping drains the pools
 *  before anything else, and closes the database before the HTTP agents, so a fetch or an attempt cut short by the stop
 *  can never be recorded as a failure. */
export async function runPollOnce(
  config: Config,
  logger: Logger,
  opts: { force: boolean } = { force: false },
): Promise<string> {
  const database = await openForPoll(config, logger, !opts.force);
  const ctx = quietCtx(database.engine, database.clock, config);
  if (database.kind === 'sqlite' && !opts.force) await releaseStaleLeases(ctx.store, logger);
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
    // Before the agents: an outcome that arrives after this is not recorded, and its lease runs out.
    await database.close();
    if (!(await settlesWithin(workers.close(), CLOSE_GRACE_MS)))
      logger.warn('feedsub: abandoned open connections at exit', {});
    database.release();
  }
}

/** The database for poll --once, and on SQLite the data directory's lock unless `lock` is false (--force). A poll writes
 *  what the daemon's poller owns (each feed's schedule, validators, error counts, health events), so beside a live
 *  serve it would move that daemon's feeds under it. On PostgreSQL nothing tells a running node apart from a stopped
 *  one (several share the database), so the poll runs beside them; each feed's lease keeps two nodes from fetching it
 *  at once. */
async function openForPoll(config: Config, logger: Logger, lock: boolean): Promise<OpenedDatabase> {
  try {
    return await openConfiguredDatabase(config, logger, { lock });
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

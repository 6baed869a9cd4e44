// The bench's feedsub, wired as app.ts wires the daemon, with one subscription per origin feed and a delivery count:
// on SQLite (a file and its checkpoint thread) or on a new database of a bench-started PostgreSQL server.
import { join } from 'node:path';
import { request } from 'undici';
import { createEndpoint } from '../../src/actions/endpoints.ts';
import { createKey } from '../../src/actions/keys.ts';
import { createSubscription } from '../../src/actions/subscriptions.ts';
import { CHECKPOINT_INTERVAL_MS } from '../../src/app.ts';
import { systemClock } from '../../src/clock.ts';
import { defaultConfig, withConfig } from '../../src/config.ts';
import type { Config } from '../../src/config.ts';
import { quietCtx } from '../../src/context.ts';
import type { Ctx } from '../../src/context.ts';
import { startCheckpointer } from '../../src/db/checkpointer.ts';
import type { Checkpointer } from '../../src/db/checkpointer.ts';
import type { Engine } from '../../src/db/engine.ts';
import { openDatabase } from '../../src/db/open.ts';
import { SqliteEngine } from '../../src/db/sqlite-engine.ts';
import { createLogger, silentLogger } from '../../src/log.ts';
import type { Telemetry } from '../../src/telemetry.ts';
import { createWorkers } from '../../src/worker/index.ts';
import type { Workers } from '../../src/worker/index.ts';
import { createMetrics } from '../../src/worker/metrics.ts';
import { openBenchEngine, type Postgres } from './postgres.ts';
import { CONCURRENCY, FEEDS, PARSE_WORKERS } from './settings.ts';
import type { Row } from './table.ts';

/** Delivered attempts, counted as the deliverer records them. */
export type DeliveryCount = {
  readonly count: number;
  /** Resolves once `count` reaches `n`; replaces the previous waiter. */
  reaches: (n: number) => Promise<void>;
};

/** Where the bench's feedsub keeps its store: a SQLite file in the bench's directory, or a new database on `server`. */
export type BenchEngine = { kind: 'sqlite' } | { kind: 'postgres'; server: Postgres };

/** What every measured phase works on. */
export type Bench = {
  base: string;
  config: Config;
  ctx: Ctx;
  /** SQLite's checkpoint thread; PostgreSQL has none (its server checkpoints). */
  checkpointer: Checkpointer | undefined;
  workers: Workers;
  deliveries: DeliveryCount;
  row: Row;
  /** Starts a new round at the origin (see bench-origin.ts for the query). */
  round: (query: string) => Promise<unknown>;
  /** When each feed's last poll that made events was recorded (Date.now() at the poller's report, which follows the
   *  commit), by feed id. */
  recordedAt: Map<string, number>;
  /** How long that poll's fetch took (the report's duration_ms: the request until the body was read), by feed id. */
  fetchMs: Map<string, number>;
};

/** Opens a database in `dir` and starts the checkpoint thread, or on PostgreSQL a new database of the server, its schema
 *  made; then subscribes to every feed of the origin at `base`. */
export async function setUp(
  base: string,
  dir: string,
  row: Row,
  engine: BenchEngine = { kind: 'sqlite' },
): Promise<Bench> {
  const config = withConfig(defaultConfig(), {
    storage: { data_dir: dir },
    network: { allow_private: true },
    poll: {
      concurrency: CONCURRENCY,
      per_host_concurrency: CONCURRENCY,
      parse_workers: PARSE_WORKERS,
    },
    delivery: { concurrency: 32, per_endpoint_concurrency: 32 },
    // One bench application subscribes to every feed at once: the abuse quotas would stop it at 300 new feed URLs.
    quotas: {
      new_feed_urls_per_hour: 0,
      subscriptions_per_application: 0,
      api_requests_per_second: 0,
    },
  });
  const { store, checkpointer } = await openStore(engine, dir);
  // On PostgreSQL `serve` times its work by the server's clock, which is this machine's here.
  const ctx = quietCtx(store, systemClock, config);
  // As the daemon runs: Prometheus metrics, and a log line per attempt at the default level (info, JSON), written to
  // nowhere instead of stderr. Delivered attempts are also counted here, for the clocks of the delivery phases.
  const metrics = createMetrics(ctx);
  const counter = countDeliveries();
  const telemetry: Telemetry = {
    ...metrics.telemetry,
    attempted: (outcome, durationMs, latencyMs, endpointId) => {
      metrics.telemetry.attempted(outcome, durationMs, latencyMs, endpointId);
      if (outcome === 'delivered') counter.delivered();
    },
  };
  // The log goes nowhere; the poller's report of a poll that made events, written once its record committed, gives
  // the time the latency rows count "recorded" from.
  const recordedAt = new Map<string, number>();
  const fetchMs = new Map<string, number>();
  const logger = createLogger({
    level: 'info',
    format: 'json',
    write: (line) => {
      if (!line.includes('"poll: feed polled"')) return;
      const fields = JSON.parse(line) as { feed_id: string; events: number; duration_ms: number };
      if (fields.events === 0) return;
      recordedAt.set(fields.feed_id, Date.now());
      fetchMs.set(fields.feed_id, fields.duration_ms);
    },
  });
  const workers = createWorkers(ctx, logger, telemetry);
  ctx.nudgeDeliverer = workers.deliverer.nudge; // as app.ts wires it
  await subscribeAll(ctx, base);
  const round = (query: string) =>
    request(`${base}/_round?${query}`, { method: 'POST' }).then((r) => r.body.json());
  return {
    base,
    config,
    ctx,
    checkpointer,
    workers,
    deliveries: counter.count,
    row,
    round,
    recordedAt,
    fetchMs,
  };
}

/** Closes the workers, the checkpoint thread and the database, in that order. */
export async function tearDown(b: Bench): Promise<void> {
  await b.workers.close();
  await b.checkpointer?.stop();
  await b.ctx.store.close();
}

/** The store `engine` names, and SQLite's checkpoint thread (started as app.ts starts it). */
async function openStore(
  engine: BenchEngine,
  dir: string,
): Promise<{ store: Engine; checkpointer: Checkpointer | undefined }> {
  if (engine.kind === 'postgres')
    return {
      store: await openBenchEngine(await engine.server.newDatabase()),
      checkpointer: undefined,
    };
  const db = openDatabase(join(dir, 'feedsub.db'));
  const checkpointer = startCheckpointer(db, {
    intervalMs: CHECKPOINT_INTERVAL_MS,
    logger: silentLogger,
  });
  await checkpointer.ready();
  return { store: new SqliteEngine(db), checkpointer };
}

/** One application, one endpoint (the origin's /hook), and a subscription to each of the origin's feeds. */
async function subscribeAll(ctx: Ctx, base: string): Promise<void> {
  const app = (await createKey(ctx, 'bench', null)).application.id;
  const endpoint = await createEndpoint(ctx, app, { title: 'bench', url: `${base}/hook` });
  for (let i = 0; i < FEEDS; i++)
    await createSubscription(ctx, app, {
      endpoint: endpoint.id,
      url: `${base}/feeds/${i}.xml`,
      metadata: { feed: i },
    });
}

// Deliveries are counted as the deliverer records them, so a clock stops at the last one, not at the next poll.
function countDeliveries(): { count: DeliveryCount; delivered: () => void } {
  let delivered = 0;
  let onDelivered = () => {};
  return {
    count: {
      get count() {
        return delivered;
      },
      reaches: (n) =>
        new Promise<void>((resolve) => {
          onDelivered = () => {
            if (delivered >= n) resolve();
          };
          onDelivered();
        }),
    },
    delivered: () => {
      delivered++;
      onDelivered();
    },
  };
}

// Prometheus metrics: a private registry per app, counters and histograms fed through Telemetry, gauges read from the
// database at scrape time.
import type { FilteredCounts } from '../context.ts';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Clock } from '../clock.ts';
import type { Sql } from '../db/engine.ts';
import { existingEndpointIds } from '../store/endpoints.ts';
import { countEventsByStatus, countWaitingEvents, oldestSendableEventAt } from '../store/events.ts';
import {
  countFeedStatusPage,
  FEED_STATUSES,
  zeroCounts,
  type PolledFeedStatus,
} from '../store/feeds.ts';
import type { NodeRow } from '../store/nodes.ts';
import { FEEDSUB_VERSION } from '../version.ts';
import type { Telemetry } from '../telemetry.ts';

export type Metrics = { registry: Registry; telemetry: Telemetry };

const POLL_OUTCOMES = ['parsed', 'unchanged', 'gone', 'throttled', 'error'] as const;
const ATTEMPT_OUTCOMES = ['delivered', 'retry', 'dead'] as const;
// Feed fetches are bounded by poll.timeout_seconds (30 s by default, at most 600 s).
const FETCH_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
// Receivers answer in milliseconds to seconds; delivery.timeout_seconds is 15 s by default.
const ATTEMPT_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60];
// Event created → delivered spans the first try (sub-second) to the end of the retry schedule (about 28 h by default,
// up to 33 h with its jitter).
const LATENCY_BUCKETS = [0.1, 0.5, 1, 5, 15, 60, 300, 1800, 7200, 21_600, 86_400, 172_800];
// Per endpoint, fewer buckets: every endpoint costs 3 + 10 series (docs/operations.md › Metrics).
const ENDPOINT_ATTEMPT_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 15];

/** Builds a new registry (never prom-client's global one, so several apps can live in one process) with every metric;
 *  with `nodes` (the node heartbeat's live nodes), the nodes' gauges too. */
export function createMetrics(
  source: { db: Sql; clock: Clock; filtered: FilteredCounts },
  opts: { nodes?: () => readonly NodeRow[] } = {},
): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  registerDatabaseGauges(registry, source);
  registerFilterCounter(registry, source.filtered);
  if (opts.nodes) registerNodeGauges(registry, opts.nodes);
  const endpoints = registerEndpointMetrics(registry, source.db);
  new Gauge({
    name: 'feedsub_build_info',
    help: 'Always 1; the version label says which feedsub runs.',
    labelNames: ['version'],
    registers: [registry],
  }).set({ version: FEEDSUB_VERSION }, 1);
  return { registry, telemetry: registerTelemetry(registry, endpoints) };
}

/** Entries subscriptions' filters kept back since the process started, by why, read from what the transactions that
 *  judged them noted (Ctx.filtered). One series per reason, never per subscription: with a million subscriptions a
 *  label per subscription would be a million series; each subscription's own count is `entries_filtered` in the API
 *  and on its dashboard page. */
function registerFilterCounter(registry: Registry, counts: FilteredCounts): void {
  new Counter({
    name: 'feedsub_entries_filtered_total',
    help: "Entries subscriptions' filters kept from being sent, by reason (blocked: a block rule matched; not_kept: no keep rule did), each counted once per subscription.",
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const reason of ['blocked', 'not_kept'] as const) this.inc({ reason }, counts[reason]);
    },
  });
}

/** Counters and histograms moved by the poller and the deliverer, the checkpoint thread's gauges and the maintenance
 *  pass's; registered in this order, which is the order of the exposition. */
function registerTelemetry(registry: Registry, endpoints: EndpointMetrics): Telemetry {
  const registers = [registry];
  return {
    ...pollTelemetry(registers),
    ...attemptTelemetry(registers, endpoints),
    ...checkpointTelemetry(registers),
    ...retentionTelemetry(registers),
  };
}

function pollTelemetry(registers: Registry[]): Pick<Telemetry, 'polled'> {
  const polls = new Counter({
    name: 'feedsub_polls_total',
    help: 'Feed refreshes by outcome (parsed, unchanged, gone, throttled, error).',
    labelNames: ['outcome'],
    registers,
  });
  const fetchSeconds = new Histogram({
    name: 'feedsub_fetch_duration_seconds',
    help: 'Time to fetch a feed (request to end of body), every outcome.',
    buckets: FETCH_BUCKETS,
    registers,
  });
  // Every label value starts at 0 so rate() and increase() see the series from the first scrape.
  for (const outcome of POLL_OUTCOMES) polls.inc({ outcome }, 0);
  return {
    polled(outcome, durationMs) {
      polls.inc({ outcome });
      fetchSeconds.observe(durationMs / 1000);
    },
  };
}

function attemptTelemetry(
  registers: Registry[],
  endpoints: EndpointMetrics,
): Pick<Telemetry, 'attempted'> {
  const attempts = new Counter({
    name: 'feedsub_delivery_attempts_total',
    help: 'Webhook delivery attempts by outcome (delivered, retry, dead).',
    labelNames: ['outcome'],
    registers,
  });
  const attemptSeconds = new Histogram({
    name: 'feedsub_delivery_attempt_duration_seconds',
    help: 'Time of one webhook HTTP attempt, every outcome.',
    buckets: ATTEMPT_BUCKETS,
    registers,
  });
  const latencySeconds = new Histogram({
    name: 'feedsub_delivery_latency_seconds',
    help: "Time from an event's creation to its successful delivery.",
    buckets: LATENCY_BUCKETS,
    registers,
  });
  // One child per outcome, made once: inc() with a label object hashes the labels on every attempt.
  const attemptsBy = Object.fromEntries(
    ATTEMPT_OUTCOMES.map((outcome) => [outcome, attempts.labels({ outcome })]),
  ) as Record<(typeof ATTEMPT_OUTCOMES)[number], ReturnType<typeof attempts.labels>>;
  for (const outcome of ATTEMPT_OUTCOMES) attemptsBy[outcome].inc(0); // every series from the first scrape
  return {
    attempted(outcome, durationMs, latencyMs, endpointId) {
      attemptsBy[outcome].inc();
      attemptSeconds.observe(durationMs / 1000);
      endpoints.attempted(endpointId, outcome, durationMs);
      if (latencyMs !== null) latencySeconds.observe(Math.max(0, latencyMs) / 1000);
    },
  };
}

function checkpointTelemetry(registers: Registry[]): Pick<Telemetry, 'checkpointed'> {
  const walFrames = new Gauge({
    name: 'feedsub_wal_frames',
    help: "Pages in the SQLite write-ahead log at the checkpoint thread's last pass.",
    registers,
  });
  const walCheckpointed = new Gauge({
    name: 'feedsub_wal_checkpointed_frames',
    help: 'Of those pages, how many were copied into the database file.',
    registers,
  });
  return {
    checkpointed(wal, checkpointed) {
      walFrames.set(wal);
      walCheckpointed.set(checkpointed);
    },
  };
}

type EndpointMetrics = {
  attempted(endpointId: string, outcome: (typeof ATTEMPT_OUTCOMES)[number], ms: number): void;
};

/** Attempts by outcome and their duration per endpoint, labelled with the endpoint's id (never its URL, which may carry
 *  a token, nor its title, which is neither unique nor stable). Endpoints are bounded by
 *  quotas.endpoints_per_application; a deleted endpoint's series are dropped at the next scrape, so the series follow
 *  the endpoints that exist. An endpoint's series appear with its first attempt since the process started. */
function registerEndpointMetrics(registry: Registry, db: Sql): EndpointMetrics {
  // The children of each endpoint seen, made once: labels() hashes the label object on every call.
  type Children = {
    outcomes: Record<string, ReturnType<Counter['labels']>>;
    seconds: ReturnType<Histogram['labels']>;
  };
  const seen = new Map<string, Children>();
  const labelNames = ['endpoint'];
  // A scrape collects every metric at once, so both metrics wait for the one pruning of the scrape: each loses a
  // deleted endpoint's series before either is written out.
  let pruning: Promise<void> | undefined;
  const prune = (): Promise<void> =>
    (pruning ??= (async () => {
      const alive = await existingEndpointIds(db, [...seen.keys()]);
      for (const endpoint of seen.keys()) {
        if (alive.has(endpoint)) continue;
        for (const outcome of ATTEMPT_OUTCOMES) attempts.remove({ endpoint, outcome });
        seconds.remove({ endpoint });
        seen.delete(endpoint);
      }
    })().finally(() => (pruning = undefined)));
  const attempts = new Counter({
    name: 'feedsub_endpoint_attempts_total',
    help: 'Webhook delivery attempts per endpoint (its id) by outcome (delivered, retry, dead).',
    labelNames: [...labelNames, 'outcome'],
    registers: [registry],
    collect: prune,
  });
  const seconds = new Histogram({
    name: 'feedsub_endpoint_attempt_duration_seconds',
    help: "Time of one webhook HTTP attempt per endpoint (its id): the receiver's response time.",
    labelNames,
    buckets: ENDPOINT_ATTEMPT_BUCKETS,
    registers: [registry],
    collect: prune,
  });
  const childrenOf = (endpoint: string): Children => {
    const known = seen.get(endpoint);
    if (known) return known;
    const outcomes = Object.fromEntries(
      ATTEMPT_OUTCOMES.map((outcome) => [outcome, attempts.labels({ endpoint, outcome })]),
    );
    for (const c of Object.values(outcomes)) c.inc(0); // the endpoint's success ratio reads 0 of n, not nothing
    const children = { outcomes, seconds: seconds.labels({ endpoint }) };
    seen.set(endpoint, children);
    return children;
  };
  return {
    attempted(endpoint, outcome, ms) {
      const children = childrenOf(endpoint);
      children.outcomes[outcome]!.inc();
      children.seconds.observe(ms / 1000);
    },
  };
}

/** The bounded tables' sizes, as the last complete maintenance pass counted them: counting every entry key at each
 *  scrape would read the whole table. */
function retentionTelemetry(registers: Registry[]): Pick<Telemetry, 'retained'> {
  const gauge = (name: string, help: string) => new Gauge({ name, help, registers });
  const keys = gauge(
    'feedsub_entry_keys',
    'Entry keys stored (what marks an entry as already sent), at the last maintenance pass.',
  );
  const held = gauge(
    'feedsub_held_entries',
    'Entries held back by the churn guard, at the last maintenance pass.',
  );
  const orphaned = gauge(
    'feedsub_orphaned_feeds',
    'Feeds no subscription uses (deleted after retention.orphaned_feed_days), at the last maintenance pass.',
  );
  return {
    retained(counts) {
      keys.set(counts.entryKeys);
      held.set(counts.heldEntries);
      orphaned.set(counts.orphanedFeeds);
    },
  };
}

// Feeds counted per statement by the feeds gauge: ~5 ms of the event loop at 100,000 feeds × 10 subscriptions.
const FEED_COUNT_PAGE = 5000;
// The count in progress, which a scrape arriving meanwhile shares rather than walking the feeds a second time.
const feedCounts = new WeakMap<Sql, Promise<Record<PolledFeedStatus, number>>>();

/** Feeds by status (feeds without an active subscription as idle), counted in pages of FEED_COUNT_PAGE with a turn of
 *  the event loop between them, so a scrape at 100,000 feeds does not hold the API for the whole walk. A feed changing
 *  status during the walk may be counted in both or neither: a gauge's tolerance. */
export function countFeeds(
  db: Sql,
  pageSize = FEED_COUNT_PAGE,
): Promise<Record<PolledFeedStatus, number>> {
  const running = feedCounts.get(db);
  if (running) return running;
  const counting = (async () => {
    const out = zeroCounts<PolledFeedStatus>([...FEED_STATUSES, 'idle']);
    for (const status of FEED_STATUSES) {
      for (let after = ''; ;) {
        const page = await countFeedStatusPage(db, status, after, pageSize);
        out[status] += page.used;
        out.idle += page.n - page.used;
        if (page.last === null || page.n < pageSize) break;
        after = page.last;
        await nextTurn();
      }
    }
    return out;
  })().finally(() => feedCounts.delete(db));
  feedCounts.set(db, counting);
  return counting;
}

/** Gauges whose value is the database's state, read by SQL in src/store when Prometheus scrapes. */
/** The live nodes as this node's heartbeat last read them (no query at scrape time): one series per node and gauge,
 *  labelled by the node's name, so a node that leaves drops out at the next scrape. */
function registerNodeGauges(registry: Registry, nodes: () => readonly NodeRow[]): void {
  const registers = [registry];
  new Gauge({
    name: 'feedsub_nodes',
    help: 'Live nodes on the database (serve processes seen within their last three heartbeats).',
    registers,
    collect() {
      this.set(nodes().length);
    },
  });
  const perNode = (name: string, help: string, value: (n: NodeRow) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['node'],
      registers,
      collect() {
        this.reset();
        for (const n of nodes()) this.set({ node: n.name }, value(n));
      },
    });
  perNode(
    'feedsub_node_last_seen_timestamp_seconds',
    'When each live node last beat (Unix time).',
    (n) => Date.parse(n.seen_at) / 1000,
  );
  perNode(
    'feedsub_node_polls_in_flight',
    'Feeds each live node was fetching at its last heartbeat.',
    (n) => Number(n.polls),
  );
  perNode(
    'feedsub_node_deliveries_in_flight',
    'Events each live node was attempting at its last heartbeat.',
    (n) => Number(n.deliveries),
  );
}

function registerDatabaseGauges(
  registry: Registry,
  { db, clock }: { db: Sql; clock: Clock },
): void {
  const registers = [registry];
  new Gauge({
    name: 'feedsub_feeds',
    help: 'Feeds by status (pending, active, error, gone, identity_changed, over_budget) while polled; idle = no active subscription.',
    labelNames: ['status'],
    registers,
    async collect() {
      for (const [status, n] of Object.entries(await countFeeds(db))) this.set({ status }, n);
    },
  });
  new Gauge({
    name: 'feedsub_events',
    help: 'Webhook events by status (pending, failed = waiting for a retry, delivered, dead).',
    labelNames: ['status'],
    registers,
    async collect() {
      for (const [status, n] of Object.entries(await countEventsByStatus(db)))
        this.set({ status }, n);
    },
  });
  new Gauge({
    name: 'feedsub_queue_depth',
    help: 'Events waiting for delivery (pending + failed), including those of disabled endpoints and paused subscriptions.',
    registers,
    async collect() {
      this.set(await countWaitingEvents(db));
    },
  });
  new Gauge({
    name: 'feedsub_oldest_pending_event_age_seconds',
    help: 'Age of the oldest event waiting for delivery, leaving out paused subscriptions and disabled endpoints; 0 when none waits.',
    registers,
    async collect() {
      const oldest = await oldestSendableEventAt(db);
      this.set(
        oldest === undefined ? 0 : Math.max(0, (clock.now().getTime() - Date.parse(oldest)) / 1000),
      );
    },
  });
}

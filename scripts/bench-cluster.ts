// make bench-cluster: 1, 2 and 3 `feedsub serve` nodes on one durable PostgreSQL server on this machine. For each node
// count, a new database holds a world built through the actions (BENCH_CLUSTER_FEEDS feeds on the local origin, each
// subscribed BENCH_CLUSTER_SUBS times by endpoints at its receivers), the nodes start, and every feed is made due at
// once for each cycle: the first (every baseline), the all-304 one and the changed one (every feed one new entry, each
// event delivered). The table gives their rates, each node's share of the polls and attempts, feeds fetched twice in a
// cycle and events delivered twice (both must be 0: the bench exits 1 otherwise), the CPU of the nodes and of the
// server per 1,000 polls, the server's WAL and write transactions per poll, and, from 2 nodes on, the failover: a node
// SIGKILLed while it holds events for slow receivers, and the time until the others have done its work (the default
// cluster.node_timeout_seconds, 15 s). The nodes run from the sources under tsx, as bench-scale's serve does.
//
//   BENCH_CLUSTER_FEEDS   feeds (default 2,000)
//   BENCH_CLUSTER_SUBS    subscriptions per feed, 1-10 (default 2)
//   BENCH_CLUSTER_NODES   node counts to run, comma-separated (default 1,2,3)
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { requirePostgres, serverRow, startBenchPostgres, type Postgres } from './bench/postgres.ts';
import { createColumns } from './bench/table.ts';
import {
  control,
  failover,
  measureCycle,
  webhookIds,
  type Cluster,
} from './bench-cluster/cycles.ts';
import { startNodes, stopNodes, type Node } from './bench-cluster/nodes.ts';
import { report, type Cell, type Check } from './bench-cluster/report.ts';
import { startOrigin } from './bench-scale/processes.ts';
import { postgresStore, type Store } from './bench-scale/store.ts';
import { buildWorld, writeConfig } from './bench-scale/world.ts';

const FEEDS = Number(process.env.BENCH_CLUSTER_FEEDS ?? 2000);
const SUBS = Number(process.env.BENCH_CLUSTER_SUBS ?? 2);
const COUNTS = (process.env.BENCH_CLUSTER_NODES ?? '1,2,3').split(',').map(Number);
/** The failover's changed cycle: the share of feeds that gain an entry, and how late the receivers answer. */
const FAILOVER_SHARE = 0.1;
const SLOW_MS = 500;

async function main(): Promise<void> {
  if (!Number.isInteger(FEEDS) || FEEDS < 100)
    throw new Error('bench-cluster: BENCH_CLUSTER_FEEDS ≥ 100');
  if (!Number.isInteger(SUBS) || SUBS < 1 || SUBS > 10)
    throw new Error('bench-cluster: BENCH_CLUSTER_SUBS is 1-10');
  if (!COUNTS.every((n) => Number.isInteger(n) && n >= 1))
    throw new Error('bench-cluster: BENCH_CLUSTER_NODES lists node counts, e.g. 1,2,3');
  requirePostgres('bench-cluster');
  const table = createColumns(COUNTS.map((n) => `${n} node${n === 1 ? '' : 's'}`));
  const checks: Check[] = [];
  const server = await startBenchPostgres();
  let described = '';
  try {
    for (const [column, count] of COUNTS.entries()) {
      const cell: Cell = (what, value, note) => {
        console.error(`bench-cluster: ${count} node(s): ${what}: ${value}`);
        table.cell(what, column, value, note);
      };
      described = await run(server, count, cell, checks);
    }
  } finally {
    await server.stop();
  }
  table.print(
    `\nfeedsub bench-cluster: ${FEEDS.toLocaleString('en')} feeds (5–10 KB, half RSS, half Atom) × ${SUBS} subscriptions, on one PostgreSQL, node ${process.version}, ${cpus().length} cores\n`,
  );
  console.log(`\n${described}`);
  const failed = checks.filter((c) => !c.ok);
  for (const c of failed) console.error(`bench-cluster: FAILED: ${c.what}`);
  if (failed.length > 0) process.exitCode = 1;
}

/** A line on stderr as each step ends, so a long run shows where it is. */
const progress = (count: number, what: string) =>
  console.error(`bench-cluster: ${count} node(s): ${what} (load ${loadavg()[0]!.toFixed(1)})`);

/** One node count on a new database of `server`: the world, the nodes, the cycles, its column of the table; returns the
 *  server's row (version and settings) for the notes. */
async function run(server: Postgres, count: number, cell: Cell, checks: Check[]): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-cluster-'));
  const origin = await startOrigin(FEEDS);
  let store: Store | undefined;
  let nodes: Node[] = [];
  try {
    store = await postgresStore(server);
    let described = '';
    await store.describe((what, value, note) => (described = `${what} ${value}: ${note}`));
    const configFile = writeConfig(dir, 0, store.databaseUrl);
    const t = performance.now();
    await buildWorld(dir, configFile, store, origin.base, FEEDS, SUBS);
    const builtMs = performance.now() - t;
    nodes = await startNodes(configFile, dir, count);
    const c: Cluster = {
      nodes,
      store,
      databaseUrl: store.databaseUrl,
      origin: origin.base,
      feeds: FEEDS,
      subsPerFeed: SUBS,
    };
    progress(count, `world built in ${(builtMs / 1000).toFixed(1)} s, ${count} node(s) live`);
    const first = await measureCycle(c, 0);
    progress(count, `first cycle in ${(first.pollMs / 1000).toFixed(1)} s`);
    const all304 = await measureCycle(c, 0);
    progress(count, `all-304 cycle in ${(all304.pollMs / 1000).toFixed(1)} s`);
    await control(origin.base, '/_round?change=1&add=1');
    const changed = await measureCycle(c, FEEDS * SUBS);
    progress(count, `changed cycle in ${(changed.doneMs / 1000).toFixed(1)} s`);
    const twiceBefore = (await webhookIds(origin.base)).twice;
    const over = count >= 2 ? await failover(c, nodes.at(-1)!, FAILOVER_SHARE, SLOW_MS) : undefined;
    report({
      cell,
      checks,
      count,
      feeds: FEEDS,
      subs: SUBS,
      builtMs,
      first,
      all304,
      changed,
      twiceBefore,
      over,
    });
    cell(
      'load average (1 / 5 / 15 min) at the end',
      loadavg()
        .map((l) => l.toFixed(1))
        .join(' / '),
    );
    return described;
  } finally {
    await stopNodes(nodes);
    await store?.close();
    await origin.process.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

// make bench-scale: feedsub with SCALE_FEEDS feeds (default 100,000), each subscribed 10 times, as child processes
// (`serve`, `poll --once`) against a local origin of 5–10 KB feeds: the cycles, API latency idle and during each cycle,
// peak RSS, and the raw conditional-GET rate of the same origin in the same run. The phases live under bench-scale/.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { request } from 'undici';
import { createTable, type Row } from './bench/table.ts';
import { apiRun, describe } from './bench-scale/api.ts';
import { pollOnce, startOrigin, startServe, type Child } from './bench-scale/processes.ts';
import { rawConditionalGets } from './bench-scale/raw.ts';
import {
  buildWorld,
  CHANGED_SHARE,
  SUBS_PER_FEED,
  writeConfig,
  type World,
} from './bench-scale/world.ts';
import { freePort } from '../test/support/daemon.ts';

const FEEDS = Number(process.env.SCALE_FEEDS ?? 100_000);
/** Poll concurrency of feedsub (the bench config) and of the raw GET loop. */
const CONCURRENCY = 16;
/** A cycle that takes longer than this is stopped (and reported as such). */
const CYCLE_MAX_MS = 15 * 60_000;
/** The sustained API load after the cycles: this many requests, at most LOAD_MAX_MS. */
const LOAD_REQUESTS = 30_000;
const LOAD_MAX_MS = 5 * 60_000;
const MiB = (n: number) => `${n.toFixed(0)} MiB`;

type Run = { world: World; url: string; serve: Child; row: Row; created: Set<string> };

async function main(): Promise<void> {
  if (!Number.isInteger(FEEDS) || FEEDS < 1000 || FEEDS % 1000 !== 0)
    throw new Error('bench-scale: SCALE_FEEDS must be a multiple of 1000');
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-scale-'));
  const origin = await startOrigin(FEEDS);
  const table = createTable();
  // Each row is also printed as it is measured, so a run stopped early still tells what it got.
  const row: Row = (what, value, note) => {
    console.error(`bench-scale: ${what}: ${value}${note ? ` (${note})` : ''}`);
    table.row(what, value, note);
  };
  let serve: Child | undefined;
  try {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const world = buildWorld(dir, writeConfig(dir, port), origin.base, FEEDS);
    row(
      'world built',
      `${(world.buildMs / 1000).toFixed(1)} s`,
      `10 applications, 100 endpoints, ${FEEDS.toLocaleString('en')} feeds × ${SUBS_PER_FEED} subscriptions, through the actions in one process`,
    );
    serve = await startServe(world.configFile, url);
    const allRate = await run({ world, url, serve, row, created: new Set() });
    await serve.stop();
    const raw = await rawConditionalGets(origin.base, FEEDS, CONCURRENCY);
    row(
      'raw: undici conditional GET rate',
      `${raw.toFixed(0)}/s`,
      `same origin, concurrency ${CONCURRENCY}, answered 304`,
    );
    row('all-304 cycle vs raw', `${((allRate / raw) * 100).toFixed(0)} %`, 'target ≥ 25 %');
  } finally {
    await serve?.stop();
    await origin.process.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  table.print(
    `\nfeedsub bench-scale: ${FEEDS.toLocaleString('en')} feeds (5–10 KB, half RSS, half Atom), ${(FEEDS * SUBS_PER_FEED).toLocaleString('en')} subscriptions, poll concurrency ${CONCURRENCY}, node ${process.version}\n`,
  );
}

/** Every phase against the running `serve`, in order; returns the all-304 cycle's rate (feeds/s). */
async function run(r: Run): Promise<number> {
  r.row('serve RSS at start', MiB(r.serve.rssMiB()), `before any request; ${await heapOf(r.url)}`);
  const idle = describe(await apiRun(r.url, r.world, { max: 3000, maxMs: 120_000 }, r.created));
  r.row('API latency, idle', idle.value, `${idle.note}; target p99 ≤ 20 ms`);
  await cycle(r, 'first cycle (every feed takes its baseline)');
  const allRate = FEEDS / ((await cycle(r, 'all-304 cycle')) / 1000);
  const round = await request(`${r.world.origin}/_round?change=${CHANGED_SHARE}&add=1`, {
    method: 'POST',
  });
  const { changed } = (await round.body.json()) as { changed: number };
  const since = new Date().toISOString();
  await cycle(r, `${CHANGED_SHARE * 100} % changed cycle`);
  const events = eventsSince(r.world.dbFile, since);
  const expected = changed * SUBS_PER_FEED;
  r.row(
    'events of the changed cycle',
    String(events.entries),
    `${changed} feeds gained one entry × ${SUBS_PER_FEED} subscriptions = ${expected} expected (${events.entries === expected ? 'exact' : 'WRONG'}); ${events.other} other events; ${events.delivered} delivered`,
  );
  const before = r.serve.rssMiB();
  const heapBefore = await heapOf(r.url);
  const load = await apiRun(r.url, r.world, { max: LOAD_REQUESTS, maxMs: LOAD_MAX_MS }, r.created);
  const loaded = describe(load);
  r.row('API latency, sustained load', loaded.value, loaded.note);
  r.row(
    `serve RSS after ${load.all.length.toLocaleString('en')} more requests`,
    MiB(r.serve.rssMiB()),
    `${MiB(before)} before them (${heapBefore}), ${await heapOf(r.url)} after; peak (VmHWM) of the whole run ${MiB(r.serve.peakMiB())}; target ≤ 1 GB at 100k (≤ 300 MB at 10k)`,
  );
  return allRate;
}

/** One `poll --once` with an API run against `serve` while it lasts; adds its rows and returns its duration. */
async function cycle(r: Run, label: string): Promise<number> {
  const polling = pollOnce(r.world.configFile, CYCLE_MAX_MS);
  const api = apiRun(
    r.url,
    r.world,
    { until: polling, min: 300, max: 1_000_000, maxMs: CYCLE_MAX_MS },
    r.created,
  );
  const [p, l] = await Promise.all([polling, api]);
  r.row(
    label,
    `${(p.ms / 1000).toFixed(1)} s`,
    `poll --once ${p.code === 0 ? '' : `EXITED ${p.code} `}(${(FEEDS / (p.ms / 1000)).toFixed(0)} feeds/s, process start included): ${p.summary}`,
  );
  r.row(`  poll --once peak RSS`, MiB(p.peakMiB), 'VmHWM; target ≤ 1 GB at 100k (≤ 300 MB at 10k)');
  const d = describe(l);
  r.row(`  API latency during it`, d.value, `${d.note}; target p99 ≤ 20 ms`);
  return p.ms;
}

/** The V8 heap `serve` reports on /metrics (prom-client's default metrics): used of total, in MiB. */
async function heapOf(url: string): Promise<string> {
  const r = await request(`${url}/metrics`);
  const text = await r.body.text();
  const metric = (name: string) =>
    Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) / 1024 / 1024;
  return `heap ${metric('nodejs_heap_size_used_bytes').toFixed(0)} of ${metric('nodejs_heap_size_total_bytes').toFixed(0)} MiB, external ${metric('nodejs_external_memory_bytes').toFixed(0)} MiB`;
}

/** Events created since `since`, read from the database beside `serve` (WAL readers do not block it). */
function eventsSince(
  file: string,
  since: string,
): { entries: number; other: number; delivered: number } {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db
      .prepare(
        "SELECT type = 'subscription.entries' AS entries, status = 'delivered' AS delivered, count(*) AS n FROM events WHERE created_at >= ? GROUP BY 1, 2",
      )
      .all(since) as { entries: number; delivered: number; n: number }[];
    const sum = (f: (x: (typeof rows)[number]) => boolean) =>
      rows.filter(f).reduce((n, x) => n + x.n, 0);
    return {
      entries: sum((x) => x.entries === 1),
      other: sum((x) => x.entries === 0),
      delivered: sum((x) => x.delivered === 1),
    };
  } finally {
    db.close();
  }
}

await main();

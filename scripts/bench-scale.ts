// make bench-scale: feedsub with SCALE_FEEDS feeds (default 100,000), each subscribed 10 times, as child processes
// (`serve`, `poll --once`) against a local origin of 5–10 KB feeds and its webhook receivers: the cycles (healthy and
// with half the receivers failing), mixed vs read-only API throughput, every list route's p99 at 14,000+ events, bytes
// written per 304 poll and per created subscription, SCALE_LOAD_SECONDS (default 600) of mixed load, peak RSS, and the
// raw conditional-GET rate of the same origin in the same run. The phases live under bench-scale/. SCALE_ENGINE=postgres
// runs them on a new database of a durable PostgreSQL server the bench starts and stops (bench-scale/store.ts), its
// bytes written the server's WAL; SQLite is the default. There the world is built on SQLite and moved with
// `feedsub storage copy` (SCALE_PG_WORLD=actions builds it through the actions on PostgreSQL).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createTable, type Row } from './bench/table.ts';
import { changedCycles, cycle, type Run } from './bench-scale/cycles.ts';
import { createBytes, pollOnceBytes, servePollBytes } from './bench-scale/io.ts';
import { fillEvents, listRows } from './bench-scale/lists.ts';
import { heapOf, sustainedLoad } from './bench-scale/load.ts';
import { cyclesMixed, idleMixed } from './bench-scale/mixed.ts';
import {
  startOrigin,
  startServe,
  storageCopy,
  writeBytesOf,
  type Child,
} from './bench-scale/processes.ts';
import { rawConditionalGets } from './bench-scale/raw.ts';
import { postgresStore, scaleEngine, sqliteStore, type Store } from './bench-scale/store.ts';
import { buildWorld, SUBS_PER_FEED, writeConfig, type World } from './bench-scale/world.ts';
import { freePort } from '../test/support/daemon.ts';

const FEEDS = Number(process.env.SCALE_FEEDS ?? 100_000);
/** Poll concurrency of feedsub (the bench config) and of the raw GET loop. */
const CONCURRENCY = 16;
const MiB = (n: number) => `${n.toFixed(0)} MiB`;

async function main(): Promise<void> {
  if (!Number.isInteger(FEEDS) || FEEDS < 1000 || FEEDS % 1000 !== 0)
    throw new Error('bench-scale: SCALE_FEEDS must be a multiple of 1000');
  const engine = scaleEngine();
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-scale-'));
  const origin = await startOrigin(FEEDS);
  const table = createTable();
  // Each row is also printed as it is measured, so a run stopped early still tells what it got; each note ends with
  // the machine's load average when the row was taken (times on a shared machine are upper bounds).
  const row: Row = (what, value, note) => {
    const noted = `${note ? `${note}; ` : ''}load ${loadavg()[0]!.toFixed(1)}`;
    console.error(`bench-scale: ${what}: ${value} (${noted})`);
    table.row(what, value, noted);
  };
  let serve: Child | undefined;
  let store: Store | undefined;
  try {
    store =
      engine === 'postgres' ? await postgresStore() : sqliteStore(join(dir, 'data', 'feedsub.db'));
    await store.describe(row);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const world = await build(dir, port, store, origin.base, row);
    serve = await startServe(world.configFile, url);
    const r: Run = { world, url, serve, row, made: { pairs: new Set(), ids: [] }, feeds: FEEDS };
    const allRate = await phases(r);
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
    await store?.close();
    await origin.process.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  table.print(
    `\nfeedsub bench-scale: ${FEEDS.toLocaleString('en')} feeds (5–10 KB, half RSS, half Atom), ${(FEEDS * SUBS_PER_FEED).toLocaleString('en')} subscriptions, poll concurrency ${CONCURRENCY}, on ${engine === 'postgres' ? 'PostgreSQL' : 'SQLite'}, node ${process.version}\n`,
  );
}

/** The world (its bytes written per subscription: this process's write_bytes over the build, the database closed, or
 *  the server's WAL), then the first application's events filled in, both before serve starts. On PostgreSQL, unless
 *  SCALE_PG_WORLD=actions, the world is built on SQLite and moved with `feedsub storage copy`, as an installation moves:
 *  through the actions, PostgreSQL makes about 300 subscriptions a second on this machine (an hour for 1,000,000). */
async function build(
  dir: string,
  port: number,
  store: Store,
  base: string,
  row: Row,
): Promise<World> {
  const self = () => writeBytesOf('self') ?? 0;
  const subs = FEEDS * SUBS_PER_FEED;
  const configFile = writeConfig(dir, port, store.databaseUrl);
  const copied = store.kind === 'postgres' && process.env.SCALE_PG_WORLD !== 'actions';
  const built = copied ? join(dir, 'build') : dir;
  const buildStore = copied ? sqliteStore(join(built, 'data', 'feedsub.db')) : store;
  if (copied) mkdirSync(built);
  const buildConfig = copied ? writeConfig(built, port) : configFile;
  const before = await buildStore.written(self);
  const world = {
    ...(await buildWorld(built, buildConfig, buildStore, base, FEEDS)),
    dir,
    configFile,
    store,
  };
  const written = (await buildStore.written(self)) - before;
  row(
    copied ? 'world built on SQLite' : 'world built',
    `${(world.buildMs / 1000).toFixed(1)} s`,
    `10 applications, 100 endpoints, ${FEEDS.toLocaleString('en')} feeds × ${SUBS_PER_FEED} subscriptions, through the actions in one process`,
  );
  row(
    '  bytes written per subscription by the build',
    `${(written / subs).toFixed(0)} B`,
    `${MiB(written / 1024 / 1024)} written for ${subs.toLocaleString('en')} subscriptions (${buildStore.kind === 'sqlite' ? 'write_bytes of this process, the database closed' : buildStore.bytes})`,
  );
  if (copied) {
    const wal = await store.written(self);
    const copy = await storageCopy(buildConfig, store.databaseUrl, 3_600_000);
    const walWritten = (await store.written(self)) - wal;
    row(
      'world moved to PostgreSQL by `feedsub storage copy`',
      `${(copy.ms / 1000).toFixed(1)} s`,
      `every table copied, its count checked and analyzed; peak RSS ${MiB(copy.peakMiB)}; ${(walWritten / subs).toFixed(0)} B of WAL per subscription (${MiB(walWritten / 1024 / 1024)} in all)`,
    );
    rmSync(built, { recursive: true, force: true });
  }
  const fill = await fillEvents(world);
  row(
    'events filled in for the first application',
    String(fill.events),
    `${(fill.ms / 1000).toFixed(1)} s through the actions (queueSubscriptionEvents, one entry each, 2 per subscription) before serve starts; serve delivers them`,
  );
  return world;
}

/** Every phase against the running `serve`, in order; returns the all-304 cycles' rate (feeds/s, the faster one). */
async function phases(r: Run): Promise<number> {
  r.row('serve RSS at start', MiB(r.serve.rssMiB()), `before any request; ${await heapOf(r.url)}`);
  await backlogDelivered(r);
  await idleMixed(r);
  await cycle(r, 'first cycle (every feed takes its baseline)', 'mixed');
  const cycles = await cyclesMixed(r);
  pollOnceBytes(r, cycles);
  await changedCycles(r);
  await listRows(r);
  await createBytes(r);
  await servePollBytes(r);
  await sustainedLoad(r);
  return FEEDS / (Math.min(...cycles.map((c) => c.poll.ms)) / 1000);
}

/** Waits (at most 10 minutes) until serve has delivered the filled-in events: none waits any more. */
async function backlogDelivered(r: Run): Promise<void> {
  const t = performance.now();
  let waiting = NaN;
  while (performance.now() - t < 600_000) {
    waiting = (await r.world.store.look((sql) =>
      sql.value<number>("SELECT count(*) FROM events WHERE status IN ('pending', 'failed')"),
    ))!;
    if (waiting === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const s = (performance.now() - t) / 1000;
  r.row(
    'filled-in events delivered by serve',
    `${s.toFixed(1)} s`,
    waiting === 0
      ? 'every one delivered (receivers healthy), read every 0.5 s'
      : `${waiting} STILL WAITING`,
  );
}

await main();

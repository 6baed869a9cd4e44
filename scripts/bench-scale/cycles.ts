// make bench-scale, the cycles: each a `poll --once` beside the running `serve` with an API run against serve while it
// lasts; the changed cycles with every receiver healthy and with half of them answering 503, and the database reads
// that check their events (on SQLite read-only: WAL readers never block serve).
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import type { Row } from '../bench/table.ts';
import { apiRun, describe, failures, type Creations, type Latencies, type Mix } from './api.ts';
import { pollOnce, type Child, type PollRun } from './processes.ts';
import type { Store } from './store.ts';
import { CHANGED_SHARE, SUBS_PER_FEED, type World } from './world.ts';

/** A cycle that takes longer than this is stopped (and reported as such): on 2 cores, PostgreSQL's first cycle of
 *  100,000 feeds takes about 31 minutes. */
const CYCLE_MAX_MS = 60 * 60_000;
const MiB = (n: number) => `${n.toFixed(0)} MiB`;

/** Everything a phase needs: the world, the running serve and where the rows go. */
export type Run = {
  world: World;
  url: string;
  serve: Child;
  row: Row;
  made: Creations;
  feeds: number;
};

/** A cycle's poll, its API run, and the bytes written meanwhile: on SQLite those of `poll --once` (its whole total), on
 *  PostgreSQL the server's WAL over the cycle, whatever the API run wrote through serve included. */
export type Cycle = { poll: PollRun; api: Latencies; written: number };

/** One `poll --once` with an API run of `mix` against `serve` while it lasts; adds its rows. */
export async function cycle(r: Run, label: string, mix: Mix): Promise<Cycle> {
  // On SQLite the bytes are poll --once's own, its counter 0 before it starts.
  const before = await r.world.store.written(() => 0);
  const polling = pollOnce(r.world.configFile, CYCLE_MAX_MS);
  const api = apiRun(
    r.url,
    r.world,
    { until: polling, min: 300, max: 1_000_000, maxMs: CYCLE_MAX_MS, mix },
    r.made,
  );
  const [p, l] = await Promise.all([polling, api]);
  const written = (await r.world.store.written(() => p.writeBytes)) - before;
  r.row(
    label,
    `${(p.ms / 1000).toFixed(1)} s`,
    `poll --once ${p.code === 0 ? '' : p.code === null ? `STOPPED at the cap of ${CYCLE_MAX_MS / 60_000} minutes ` : `EXITED ${p.code} `}(${(r.feeds / (p.ms / 1000)).toFixed(0)} feeds/s, process start included): ${p.summary}`,
  );
  r.row(`  poll --once peak RSS`, MiB(p.peakMiB), 'VmHWM; target ≤ 1 GB');
  const d = describe(l);
  r.row(`  API (${mix}) during it`, d.value, `${d.note}; target p99 ≤ 20 ms`);
  r.row(
    `  API refusals and errors during it`,
    String(l.failed),
    `of ${l.all.length} requests: ${failures(l)}`,
  );
  return { poll: p, api: l, written };
}

/** The two changed cycles: the origin changes CHANGED_SHARE of the feeds, once with every receiver healthy, once with
 *  half of them answering 503; each cycle's time runs until every event to a healthy receiver is delivered and every
 *  failing one had its first attempt (its retry waits an hour: the bench config). Rows for both and their ratio. */
export async function changedCycles(r: Run): Promise<void> {
  const healthy = await changedCycle(r, 'changed cycle, every receiver healthy', 0);
  const failing = await changedCycle(r, 'changed cycle, half the receivers answering 503', 0.5);
  r.row(
    'changed cycle with 50 % failing receivers vs healthy',
    `${(failing / healthy).toFixed(2)}×`,
    `${(failing / 1000).toFixed(1)} s vs ${(healthy / 1000).toFixed(1)} s; target ≤ 1.5×`,
  );
}

/** One changed round and its cycle with `failShare` of the receivers answering 503; its time in ms. */
async function changedCycle(r: Run, label: string, failShare: number): Promise<number> {
  await post(`${r.world.origin}/_fail?share=${failShare}`);
  try {
    const round = await post(`${r.world.origin}/_round?change=${CHANGED_SHARE}&add=1`);
    const { changed } = JSON.parse(round) as { changed: number };
    const since = new Date().toISOString();
    const t = performance.now();
    const c = await cycle(r, `${label} (${CHANGED_SHARE * 100} % of feeds changed)`, 'mixed');
    const settledAt = await untilAttempted(r.world.store, since, 60_000);
    const settled = settledAt !== undefined;
    const ms = settled ? Math.max(c.poll.ms, settledAt - t) : NaN;
    const e = await eventsSince(r.world.store, since);
    const expected = changed * SUBS_PER_FEED;
    r.row(
      '  its events',
      `${e.entries} (${e.delivered} delivered, ${e.failed} failed)`,
      `${changed} feeds gained one entry × ${SUBS_PER_FEED} subscriptions = ${expected} expected (${e.entries === expected ? 'exact' : 'WRONG'}); ${e.other} other events; ${e.unattempted} never attempted${settled ? '' : ' (STILL WAITING 60 s after poll --once)'}; until the last first attempt ${(ms / 1000).toFixed(1)} s`,
    );
    return ms;
  } finally {
    await post(`${r.world.origin}/_fail?share=0`);
  }
}

async function post(url: string): Promise<string> {
  const r = await request(url, { method: 'POST' });
  return r.body.text();
}

/** Waits (at most `ms`) until every event created since `since` had an attempt; when it came to that (undefined if
 *  it did not), read every 100 ms. */
async function untilAttempted(
  store: Store,
  since: string,
  ms: number,
): Promise<number | undefined> {
  const deadline = performance.now() + ms;
  while (performance.now() < deadline) {
    if ((await eventsSince(store, since)).unattempted === 0) return performance.now();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return undefined;
}

/** Events created since `since`, read from the database beside `serve`. */
export async function eventsSince(
  store: Store,
  since: string,
): Promise<{
  entries: number;
  other: number;
  delivered: number;
  failed: number;
  unattempted: number;
}> {
  const rows = await store.look((sql) =>
    sql.all<{ entries: number; status: string; unattempted: number; n: number }>(
      `SELECT type = 'subscription.entries' AS entries, status, attempt_count = 0 AS unattempted, count(*) AS n
         FROM events WHERE created_at >= ? GROUP BY 1, 2, 3`,
      [since],
    ),
  );
  const sum = (f: (x: (typeof rows)[number]) => boolean) =>
    rows.filter(f).reduce((n, x) => n + x.n, 0);
  return {
    entries: sum((x) => x.entries === 1),
    other: sum((x) => x.entries === 0),
    delivered: sum((x) => x.status === 'delivered'),
    failed: sum((x) => x.status === 'failed' || x.status === 'dead'),
    unattempted: sum((x) => x.unattempted === 1),
  };
}

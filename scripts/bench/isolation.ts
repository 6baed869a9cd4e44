// make bench, the isolation rows, each on the real `feedsub serve`: a healthy application's deliveries and polls while
// another application's 8 receivers drip a byte every 5 s and its 12 feeds answer in 20 s; and the API's latency over
// real HTTP while 10 feeds of 1 MiB, changed on every poll, are parsed; /healthz while catastrophic filter patterns
// judge a 1 MiB entry on every poll.
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { startServe, type Sections, type Tenant } from './daemon.ts';
import { changingOrigin, dripReceivers, timingReceiver, SLOW_MS } from './peers.ts';
import { PARSE_WORKERS } from './settings.ts';
import { ms, percentile, type Row } from './table.ts';

const INTERVAL_S = 5; // every feed's poll interval in the hostile phase (±10 % jitter)
const WINDOW_MS = 30_000; // measured, after a warm-up in which every feed has its baseline and the drips have begun
const WARM_MS = 8_000;
const HEALTHY_FEEDS = 20;
const DRIPS = 8;
const SLOW_FEEDS = 12;
const BIG_FEEDS = 10;
const BIG_INTERVAL_S = 2;
const API_IDLE_MS = 3_000;
const API_WINDOW_MS = 20_000;

// Every feed on one interval; the per-host cap raised to the slots, since every peer here is 127.0.0.1 (stand-ins for
// many hosts: the 12 slow feeds may hold 12 slots, as 12 hosts would); no quota stops the bench's own API calls.
const daemonConfig = (intervalS: number): Sections => ({
  network: { allow_private: true },
  poll: {
    interval_seconds: intervalS,
    min_interval_seconds: intervalS,
    max_interval_seconds: intervalS,
    per_host_concurrency: 16,
    parse_workers: PARSE_WORKERS,
  },
  quotas: { api_requests_per_second: 0, new_feed_urls_per_hour: 0 },
});

/** The hostile-peers rows: healthy event latency and the poll gaps of the healthy feeds. */
export async function measureIsolation(dir: string, row: Row): Promise<void> {
  const origin = await changingOrigin();
  const receiver = await timingReceiver();
  const drips = await dripReceivers(DRIPS);
  const serve = await startServe(join(dir, 'isolation'), daemonConfig(INTERVAL_S), [
    'hostile',
    'healthy',
  ]);
  try {
    const hostile = serve.tenants.hostile!;
    const dripEndpoints: string[] = [];
    for (const [i, url] of drips.urls.entries()) {
      const endpoint = await createEndpoint(hostile, url);
      dripEndpoints.push(endpoint);
      for (let j = 0; j < 2; j++)
        await subscribe(hostile, endpoint, `${origin.url}/small/h${i}-${j}.xml`);
    }
    for (let i = 0; i < SLOW_FEEDS; i++)
      await subscribe(hostile, dripEndpoints[0]!, `${origin.url}/slow/${i}.xml`);
    const healthy = serve.tenants.healthy!;
    const endpoint = await createEndpoint(healthy, `${receiver.url}/hook`);
    for (let i = 0; i < HEALTHY_FEEDS; i++)
      await subscribe(healthy, endpoint, `${origin.url}/small/g${i}.xml`);
    await sleep(WARM_MS);
    const from = receiver.latencies.length;
    const start = Date.now();
    await sleep(WINDOW_MS);
    const end = Date.now();
    const latencies = receiver.latencies.slice(from);
    const gaps = pollGaps(origin.fetches, '/small/g', start, end);
    const late = gaps.map((g) => Math.max(0, g - INTERVAL_S * 1100));
    row(
      'isolation: healthy event created → delivered, p99',
      ms(percentile(latencies, 0.99)),
      `target ≤ 2 s; p50 ${ms(percentile(latencies, 0.5))}, ${latencies.length} events in ${WINDOW_MS / 1000} s, while another application's ${DRIPS} receivers drip a byte every 5 s (${drips.dripping.most} attempts dripping at most) and its ${SLOW_FEEDS} feeds answer in ${SLOW_MS / 1000} s (${origin.slow.most} waiting at most)`,
    );
    row(
      "isolation: healthy feeds' poll gap, p99",
      ms(percentile(gaps, 0.99)),
      `interval ${INTERVAL_S} s ± 10 %; p50 ${ms(percentile(gaps, 0.5))}, max ${ms(Math.max(...gaps))}; lateness beyond ${INTERVAL_S * 1.1} s: p99 ${ms(percentile(late, 0.99))}; ${gaps.length} polls of ${HEALTHY_FEEDS} feeds`,
    );
  } finally {
    // The peers first: the daemon's stop then has no 20 s fetch or dripping attempt to wait for.
    await Promise.all([origin.close(), receiver.close(), drips.close()]);
    await serve.stop();
  }
}

/** The API-latency rows: GET /v1/endpoints over real HTTP, idle and then while 10 feeds of 1 MiB are parsed. */
export async function measureApiWhileParsing(dir: string, row: Row): Promise<void> {
  const origin = await changingOrigin();
  const receiver = await timingReceiver();
  const serve = await startServe(join(dir, 'api'), daemonConfig(BIG_INTERVAL_S), ['reader']);
  try {
    const reader = serve.tenants.reader!;
    const endpoint = await createEndpoint(reader, `${receiver.url}/hook`);
    await apiLatencies(reader, 500); // warm-up: the first requests compile the route
    const idle = await apiLatencies(reader, API_IDLE_MS);
    for (let i = 0; i < BIG_FEEDS; i++)
      await subscribe(reader, endpoint, `${origin.url}/big/${i}.xml`);
    await sleep(BIG_INTERVAL_S * 1000 + 1000); // every baseline read, the next polls begun
    const fetched = countFetches(origin.fetches);
    const delivered = receiver.latencies.length;
    const busy = await apiLatencies(reader, API_WINDOW_MS);
    row(
      'API latency while parsing 1 MiB feeds, p99',
      ms(percentile(busy, 0.99), 1),
      `target ≤ 20 ms; GET /v1/endpoints over HTTP, one at a time, ${busy.length} requests in ${API_WINDOW_MS / 1000} s: p50 ${ms(percentile(busy, 0.5), 1)}, max ${ms(Math.max(...busy), 1)}; meanwhile ${countFetches(origin.fetches) - fetched} documents of 1 MiB fetched (${BIG_FEEDS} feeds, every ${BIG_INTERVAL_S} s, each with a new entry) and ${receiver.latencies.length - delivered} events delivered`,
    );
    row(
      'API latency idle, p99',
      ms(percentile(idle, 0.99), 1),
      `the same requests before the feeds were added: p50 ${ms(percentile(idle, 0.5), 1)}, ${idle.length} requests`,
    );
  } finally {
    await Promise.all([origin.close(), receiver.close()]);
    await serve.stop();
  }
}

/** Patterns known to take exponential time on a backtracking engine, against runs of `a` and `x`. */
const CATASTROPHIC = ['(a+)+$', '(a|aa)+b', '(x+x+)+y', '^(a|a?)+b', '(\\w+\\s?)+z$', '(.*a){12}b'];
const STALL_WINDOW_MS = 20_000;

/** The filter-stall row: /healthz probed every 10 ms (whether or not the last one was answered, so a stall delays every
 *  probe sent during it) while a subscription whose filter has 20 keep and 20 block rules of catastrophic patterns
 *  judges a feed that shows a new 1 MiB entry on every poll, every 2 s. */
export async function measureFilterStall(dir: string, row: Row): Promise<void> {
  const origin = await changingOrigin();
  const receiver = await timingReceiver();
  const serve = await startServe(join(dir, 'filter-stall'), daemonConfig(BIG_INTERVAL_S), [
    'filtering',
  ]);
  try {
    const t = serve.tenants.filtering!;
    const endpoint = await createEndpoint(t, `${receiver.url}/hook`);
    const rules = Array.from({ length: 20 }, (_, i) => ({
      field: i % 2 === 0 ? 'text' : 'title',
      matches: CATASTROPHIC[i % CATASTROPHIC.length]!,
    }));
    const r = await t.post('/v1/subscriptions', {
      endpoint,
      url: `${origin.url}/huge/0.xml`,
      filter: { keep: rules, block: rules },
    });
    if (r.status !== 201) throw new Error(`bench: unable to subscribe: ${JSON.stringify(r.body)}`);
    const sub = (r.body as { id: string }).id;
    await sleep(BIG_INTERVAL_S * 1000 + 1000); // the baseline read, the next polls begun
    const before = await filtered(t, sub);
    const fetched = countFetches(origin.fetches);
    const probes: number[] = [];
    const pending: Promise<void>[] = [];
    const probe = async () => {
      const t0 = performance.now();
      const res = await fetch(`${serve.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
      await res.arrayBuffer();
      probes.push(performance.now() - t0);
    };
    const end = performance.now() + STALL_WINDOW_MS;
    while (performance.now() < end) {
      pending.push(probe());
      await sleep(10);
    }
    await Promise.all(pending);
    const judged = (await filtered(t, sub)) - before;
    row(
      '/healthz p99 while catastrophic filters judge a 1 MiB entry',
      ms(percentile(probes, 0.99), 1),
      `target < 50 ms; p50 ${ms(percentile(probes, 0.5), 1)}, max ${ms(Math.max(...probes), 1)}; ${probes.length} probes sent every 10 ms for ${STALL_WINDOW_MS / 1000} s while 20 keep and 20 block rules (${CATASTROPHIC.join(' ')}) judged ${judged} new 1 MiB entries (${countFetches(origin.fetches) - fetched} fetches, every ${BIG_INTERVAL_S} s)`,
    );
  } finally {
    await Promise.all([origin.close(), receiver.close()]);
    await serve.stop();
  }
}

async function filtered(t: Tenant, sub: string): Promise<number> {
  const r = await t.get(`/v1/subscriptions/${sub}`);
  return (r.body as { entries_filtered: number }).entries_filtered;
}

async function createEndpoint(t: Tenant, url: string): Promise<string> {
  const r = await t.post('/v1/endpoints', { title: 'bench', url });
  if (r.status !== 201)
    throw new Error(`bench: unable to create an endpoint: ${JSON.stringify(r.body)}`);
  return (r.body as { id: string }).id;
}

async function subscribe(t: Tenant, endpoint: string, url: string): Promise<void> {
  const r = await t.post('/v1/subscriptions', { endpoint, url });
  if (r.status !== 201) throw new Error(`bench: unable to subscribe: ${JSON.stringify(r.body)}`);
}

// GET /v1/endpoints one request after another (10 ms apart) for `forMs`; the ms each took.
async function apiLatencies(t: Tenant, forMs: number): Promise<number[]> {
  const took: number[] = [];
  const end = performance.now() + forMs;
  while (performance.now() < end) {
    const t0 = performance.now();
    const r = await t.get('/v1/endpoints');
    took.push(performance.now() - t0);
    if (r.status !== 200) throw new Error(`bench: GET /v1/endpoints answered ${r.status}`);
    await sleep(10);
  }
  return took;
}

// The gaps between two fetches of one feed (paths starting with `prefix`) whose second fetch fell in [start, end].
function pollGaps(
  fetches: Map<string, number[]>,
  prefix: string,
  start: number,
  end: number,
): number[] {
  const gaps: number[] = [];
  for (const [path, times] of fetches) {
    if (!path.startsWith(prefix)) continue;
    for (let i = 1; i < times.length; i++)
      if (times[i]! >= start && times[i]! <= end) gaps.push(times[i]! - times[i - 1]!);
  }
  return gaps;
}

function countFetches(fetches: Map<string, number[]>): number {
  let n = 0;
  for (const times of fetches.values()) n += times.length;
  return n;
}

// make bench, the trace rows, on the real `feedsub serve`: GET /v1/subscriptions/:id/trace by guid and by URL among the
// 10,000 entries the churn guard holds of a feed whose ids all changed at once, one request at a time, and /healthz
// while 10 traces a second run.
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { until } from '../../test/support/deadline.ts';
import { startOrigin, startReceiver, type Origin } from '../../test/support/servers.ts';
import { startServe, type Tenant } from './daemon.ts';
import { ms, percentile, type Row } from './table.ts';

const HELD = 10_000; // a full hold at retention.held_entries_per_feed as set below (the default is 1,000)
const BASELINE = 20; // the feed's entries before its ids change (the churn guard needs at least 10 known)
const TRACES = 100; // of each kind, one after another
const LOAD_PER_S = 10;
const LOAD_MS = 10_000;
const HEALTH_IDLE_MS = 2_000;
const PATH = '/held.xml';

/** An RSS document of `count` items whose guids and links start with `prefix`, each with a paragraph of text (about
 *  the size of a blog's summary), so each held entry's JSON is about a kilobyte. */
function document(prefix: string, count: number): string {
  const text =
    'A paragraph of the entry, long enough to stand for the summary a blog puts in its feed. '.repeat(
      4,
    );
  const items = Array.from(
    { length: count },
    (_, i) =>
      `<item><guid isPermaLink="false">${prefix}-${i}</guid><title>${prefix} entry ${i}</title><link>http://blog.example/${prefix}/${i}</link><description>${text}</description><pubDate>Thu, 01 Jan 2026 00:00:00 GMT</pubDate></item>`,
  );
  return `<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Trace bench</title><link>http://blog.example/</link>${items.join('')}</channel></rss>`;
}

/** The trace rows: by guid and by URL among a full hold, one at a time; /healthz while 10 traces a second run. */
export async function measureTrace(dir: string, row: Row): Promise<void> {
  const origin = await startOrigin();
  const receiver = await startReceiver();
  origin.set(PATH, { body: document('old', BASELINE) });
  const serve = await startServe(
    join(dir, 'trace'),
    {
      network: { allow_private: true },
      poll: { interval_seconds: 1, min_interval_seconds: 1, max_interval_seconds: 1 },
      quotas: { api_requests_per_second: 0, new_feed_urls_per_hour: 0 },
      retention: { held_entries_per_feed: HELD, held_bytes_per_feed: 32 * 1024 * 1024 },
    },
    ['tracer'],
  );
  const load = new Agent({ connections: 256 });
  try {
    const t = serve.tenants.tracer!;
    const sub = await held(t, origin, `${receiver.url}/hook`);
    const trace = (entry: string, agent?: Agent) => timedTrace(serve.url, t.key, sub, entry, agent);
    for (let i = 0; i < 10; i++) await trace(`new-${i}`); // warm-up: the first requests compile the route
    const guids: number[] = [];
    const urls: number[] = [];
    for (let i = 0; i < TRACES; i++) {
      const n = (i * 97) % HELD; // spread over the hold
      guids.push(await trace(`new-${n}`));
      urls.push(await trace(`http://blog.example/new/${n}`));
    }
    row(
      `trace by guid among ${HELD.toLocaleString('en')} held entries, p99`,
      ms(percentile(guids, 0.99), 1),
      `p50 ${ms(percentile(guids, 0.5), 1)}; ${TRACES} requests over HTTP, one at a time, decision held`,
    );
    row(
      `trace by URL among ${HELD.toLocaleString('en')} held entries, p99`,
      ms(percentile(urls, 0.99), 1),
      `p50 ${ms(percentile(urls, 0.5), 1)}; ${TRACES} requests, one at a time (no guid matches, so the URL is looked up)`,
    );
    const idle = await healthChecks(serve.url, HEALTH_IDLE_MS);
    const fired: Promise<number>[] = [];
    const firing = (async () => {
      for (let i = 0; i < (LOAD_PER_S * LOAD_MS) / 1000; i++) {
        const n = (i * 131) % HELD;
        fired.push(trace(i % 2 === 0 ? `new-${n}` : `http://blog.example/new/${n}`, load));
        await sleep(1000 / LOAD_PER_S);
      }
    })();
    const busy = await healthChecks(serve.url, LOAD_MS);
    await firing;
    const answered = await Promise.all(fired);
    row(
      `/healthz while ${LOAD_PER_S} traces a second run, p99`,
      ms(percentile(busy, 0.99), 1),
      `p50 ${ms(percentile(busy, 0.5), 1)}, ${busy.length} checks one at a time for ${LOAD_MS / 1000} s; idle: p99 ${ms(percentile(idle, 0.99), 1)}; the ${answered.length} traces (half by guid, half by URL) took p50 ${ms(percentile(answered, 0.5), 1)}, p99 ${ms(percentile(answered, 0.99), 1)}`,
    );
  } finally {
    await load.close();
    await Promise.all([origin.close(), receiver.close()]);
    await serve.stop();
  }
}

type Subscription = { id: string; feed: string };

/** Subscribes `hook` to the origin's feed, waits for its baseline, then serves HELD entries under new ids and waits
 *  until the churn guard holds every one of them. */
async function held(t: Tenant, origin: Origin, hook: string): Promise<Subscription> {
  const endpoint = await t.post('/v1/endpoints', { title: 'bench', url: hook });
  if (endpoint.status !== 201)
    throw new Error(`bench: unable to create an endpoint: ${JSON.stringify(endpoint.body)}`);
  const made = await t.post('/v1/subscriptions', {
    endpoint: (endpoint.body as { id: string }).id,
    url: origin.url + PATH,
  });
  if (made.status !== 201)
    throw new Error(`bench: unable to subscribe: ${JSON.stringify(made.body)}`);
  const sub = made.body as Subscription;
  await until(
    async () =>
      ((await t.get(`/v1/subscriptions/${sub.id}/entries`)).body as { data: unknown[] }).data
        .length === BASELINE,
    60_000,
    'bench: the baseline',
    200,
  );
  origin.set(PATH, { body: document('new', HELD) });
  await until(
    async () =>
      ((await t.get(`/v1/feeds/${sub.feed}`)).body as { held_entries: number }).held_entries ===
      HELD,
    120_000,
    'bench: the hold',
    500,
  );
  return sub;
}

/** One trace over HTTP (on `agent`, else undici's global one): the ms it took; throws unless the entry is held. */
async function timedTrace(
  url: string,
  key: string,
  sub: Subscription,
  entry: string,
  agent?: Agent,
): Promise<number> {
  const t0 = performance.now();
  const r = await request(
    `${url}/v1/subscriptions/${sub.id}/trace?entry=${encodeURIComponent(entry)}`,
    {
      headers: { authorization: `Bearer ${key}` },
      headersTimeout: 300_000,
      bodyTimeout: 300_000,
      ...(agent ? { dispatcher: agent } : {}),
    },
  );
  const body = (await r.body.json()) as { decision?: string };
  const took = performance.now() - t0;
  if (r.statusCode !== 200 || body.decision !== 'held')
    throw new Error(
      `bench: the trace of ${entry} answered ${r.statusCode} ${JSON.stringify(body)}`,
    );
  return took;
}

/** GET /healthz one after another (10 ms apart) for `forMs`: the ms each took. */
async function healthChecks(url: string, forMs: number): Promise<number[]> {
  const took: number[] = [];
  const end = performance.now() + forMs;
  while (performance.now() < end) {
    const t0 = performance.now();
    const r = await request(`${url}/healthz`, { headersTimeout: 300_000, bodyTimeout: 300_000 });
    await r.body.dump();
    took.push(performance.now() - t0);
    if (r.statusCode !== 200) throw new Error(`bench: /healthz answered ${r.statusCode}`);
    await sleep(10);
  }
  return took;
}

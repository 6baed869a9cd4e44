// make bench, the backfill rows, on the real `feedsub serve`: /healthz, asked every 10 ms, while 10 clients each create
// a subscription asking for a backfill of 100 entries of ~60 KiB and delete it again, twice; the same cycles with 10
// trace requests a second beside them; the same cycles without a backfill; then while 10 such backfills are queued
// and delivered whole.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { startServe, type Serve, type Tenant } from './daemon.ts';
import { ms, percentile, type Row } from './table.ts';

const ENTRIES = 100;
const ENTRY_TEXT = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(530); // summary and summary_html: ~60 KiB of JSON
const CLIENTS = 10;
const CYCLES = 2; // per client: 20 cycles in all
const PROBE_EVERY_MS = 10;
/** Trace requests a second beside the cycles, by guid and by URL in turn. */
const TRACES_PER_SECOND = 10;

/** The backfill rows: /healthz p50 and p99 while 10 concurrent clients create (backfill 100 of ~60 KiB entries) and
 *  delete subscriptions, with the creates' own latency, and during the same cycles without a backfill; then while 10
 *  such backfills are queued and delivered. */
export async function measureBackfill(dir: string, row: Row): Promise<void> {
  const origin = await bigFeedOrigin();
  const receiver = await countingReceiver();
  const serve = await startServe(
    join(dir, 'backfill'),
    {
      network: { allow_private: true },
      poll: { interval_seconds: 3600, min_interval_seconds: 3600 },
      quotas: {
        api_requests_per_second: 0,
        new_feed_urls_per_hour: 0,
        backfill_entries_per_hour: 0,
      },
      // The feed's 100 entries of ~60 KiB (6 MiB) all in its history: past the default 2 MiB.
      retention: { entry_history_bytes_per_feed: 8 * 1024 * 1024 },
    },
    ['backfiller'],
  );
  try {
    const t = serve.tenants.backfiller!;
    const endpoints: string[] = [];
    for (let i = 0; i < CLIENTS + 1; i++)
      endpoints.push(
        ok(await t.post('/v1/endpoints', { title: `b${i}`, url: receiver.url }), 201).id,
      );
    // A subscription without backfill gives the feed its baseline, hence its history: every later create backfills
    // from it at once.
    const watcher = ok(
      await t.post('/v1/subscriptions', { endpoint: endpoints[CLIENTS], url: origin.url }),
      201,
    );
    await historyFilled(t, watcher.id);
    // Warm-up, unmeasured: a round of the cycles below compiles the routes and the backfill path.
    await cycles(serve, t, endpoints.slice(0, CLIENTS), origin.url, ENTRIES);

    const idle = await probed(serve, () => sleep(1000));
    const before = { events: receiver.events, bytes: receiver.bytes };
    const churn = await cycles(serve, t, endpoints.slice(0, CLIENTS), origin.url, ENTRIES);
    const traced = await withTraces(t, watcher.id, () =>
      cycles(serve, t, endpoints.slice(0, CLIENTS), origin.url, ENTRIES),
    );
    const plain = await cycles(serve, t, endpoints.slice(0, CLIENTS), origin.url, 0);
    row(
      `backfill: /healthz during ${CLIENTS} clients' create/delete cycles, p99`,
      ms(percentile(churn.probes, 0.99), 1),
      `p50 ${ms(percentile(churn.probes, 0.5), 1)}, max ${ms(Math.max(...churn.probes), 1)}${unanswered(churn.failed)}, one sent every ${PROBE_EVERY_MS} ms for ${ms(churn.ms)}; each client creating a subscription with {"backfill": ${ENTRIES}} (entries of ~60 KiB) and deleting it, ${CYCLES} times, ${CLIENTS} clients at once: ${receiver.events - before.events} webhooks (${mib(receiver.bytes - before.bytes)}) sent before their delete`,
    );
    row(
      'backfill: POST /v1/subscriptions {"backfill": 100} among them, p50',
      ms(percentile(churn.creates, 0.5), 1),
      `p99 ${ms(percentile(churn.creates, 0.99), 1)}, ${churn.creates.length} creates`,
    );
    row(
      `backfill: /healthz during the cycles and ${TRACES_PER_SECOND} traces a second, quotas off, p99`,
      ms(percentile(traced.value.probes, 0.99), 1),
      `p50 ${ms(percentile(traced.value.probes, 0.5), 1)}, max ${ms(Math.max(...traced.value.probes), 1)}${unanswered(traced.value.failed)}, for ${ms(traced.value.ms)}; the same cycles, while GET /v1/subscriptions/:id/trace?entry= asks for an entry of the feed by guid, then by URL, ${TRACES_PER_SECOND} a second: ${traced.traces.length} traces, p50 ${ms(percentile(traced.traces, 0.5), 1)}, p99 ${ms(percentile(traced.traces, 0.99), 1)}`,
    );
    row(
      `backfill: /healthz during the same cycles without a backfill, p99`,
      ms(percentile(plain.probes, 0.99), 1),
      `p50 ${ms(percentile(plain.probes, 0.5), 1)}, max ${ms(Math.max(...plain.probes), 1)}, for ${ms(plain.ms)}; the creates: p50 ${ms(percentile(plain.creates, 0.5), 1)}, p99 ${ms(percentile(plain.creates, 0.99), 1)}; idle, before the cycles: p50 ${ms(percentile(idle.probes, 0.5), 1)}, p99 ${ms(percentile(idle.probes, 0.99), 1)}`,
    );

    const sent = { events: receiver.events, bytes: receiver.bytes };
    const whole = await probed(serve, async () => {
      const subs = await Promise.all(
        endpoints
          .slice(0, CLIENTS)
          .map(async (endpoint) =>
            ok(
              await t.post('/v1/subscriptions', { endpoint, url: origin.url, backfill: ENTRIES }),
              201,
            ),
          ),
      );
      for (const sub of subs) await delivered(t, sub.id, `backfill-${ENTRIES - 1}`);
    });
    row(
      `backfill: /healthz while ${CLIENTS} backfills are queued and delivered, p99`,
      ms(percentile(whole.probes, 0.99), 1),
      `p50 ${ms(percentile(whole.probes, 0.5), 1)}, max ${ms(Math.max(...whole.probes), 1)}; ${CLIENTS} subscriptions created at once with {"backfill": ${ENTRIES}}, all ${CLIENTS * ENTRIES} entries delivered in ${ms(whole.ms)}: ${receiver.events - sent.events} webhooks, ${mib(receiver.bytes - sent.bytes)}`,
    );
  } finally {
    await serve.stop();
  }
  try {
    await measureDefended(dir, row, origin.url, receiver.url);
  } finally {
    await Promise.all([origin.close(), receiver.close()]);
  }
}

/** The row the target is set for: the same cycles and traces against a daemon with its default quotas (requests per
 *  second, backfill entries per hour), as a hostile tenant meets it. A second application warms the routes up first,
 *  so the measured one starts with its own quotas whole. */
async function measureDefended(dir: string, row: Row, url: string, hook: string): Promise<void> {
  const serve = await startServe(
    join(dir, 'backfill-defended'),
    {
      network: { allow_private: true },
      poll: { interval_seconds: 3600, min_interval_seconds: 3600 },
      // The feed's 100 entries of ~60 KiB (6 MiB) all in its history: past the default 2 MiB.
      retention: { entry_history_bytes_per_feed: 8 * 1024 * 1024 },
    },
    ['warm', 'attacker'],
  );
  try {
    const [warm, attacker] = [serve.tenants.warm!, serve.tenants.attacker!];
    const setUp = async (t: Tenant) => {
      const endpoints: string[] = [];
      for (let i = 0; i < CLIENTS + 1; i++)
        endpoints.push(ok(await t.post('/v1/endpoints', { title: `d${i}`, url: hook }), 201).id);
      const watcher = ok(
        await t.post('/v1/subscriptions', { endpoint: endpoints[CLIENTS], url }),
        201,
      );
      await historyFilled(t, watcher.id);
      return { endpoints: endpoints.slice(0, CLIENTS), watcher: watcher.id };
    };
    const w = await setUp(warm);
    await cycles(serve, warm, w.endpoints, url, ENTRIES, { count: 0 });
    const a = await setUp(attacker);
    const refused = { count: 0 };
    // The traces come from the other application: its requests are not the attacker's to spend.
    const traced = await withTraces(warm, w.watcher, () =>
      sustained(serve, attacker, a.endpoints, url, refused),
    );
    row(
      `backfill: /healthz during the cycles and ${TRACES_PER_SECOND} traces a second, default quotas, p99`,
      ms(percentile(traced.value.probes, 0.99), 1),
      `target < 50 ms; p50 ${ms(percentile(traced.value.probes, 0.5), 1)}, max ${ms(Math.max(...traced.value.probes), 1)}${unanswered(traced.value.failed)}, ${traced.value.probes.length} probes over ${ms(traced.value.ms)}; ${CLIENTS} clients of one application each creating a subscription with {"backfill": ${ENTRIES}} and deleting it, again and again for ${SUSTAINED_MS / 1000} s without waiting: ${traced.value.creates.length} creates, ${refused.count} of them refused by a quota (429); another application's ${traced.traces.length} traces, p99 ${ms(percentile(traced.traces, 0.99), 1)}`,
    );
  } finally {
    await serve.stop();
  }
}

/** Runs `work` while asking /healthz every PROBE_EVERY_MS, whether or not the probes before were answered (a probe
 *  sent while the event loop is held waits for the rest of the hold, as any client arriving then would): each probe's
 *  ms and the work's. */
async function probed(
  serve: Serve,
  work: () => Promise<void>,
): Promise<{ probes: number[]; ms: number; failed: number }> {
  const probes: number[] = [];
  const inFlight: Promise<void>[] = [];
  let failed = 0;
  // A connection each, and a minute to connect: while the event loop is held, probes wait in the listen backlog.
  const agent = new Agent({ connect: { timeout: 60_000 }, headersTimeout: 60_000 });
  const probe = async () => {
    const t0 = performance.now();
    try {
      const r = await request(`${serve.url}/healthz`, { dispatcher: agent });
      await r.body.dump();
    } catch {
      failed += 1; // unanswered within the minute: counted at the time it gave up
    }
    probes.push(performance.now() - t0);
  };
  const timer = setInterval(() => inFlight.push(probe()), PROBE_EVERY_MS);
  const t0 = performance.now();
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  const took = performance.now() - t0;
  await Promise.all(inFlight);
  await agent.close();
  return { probes, ms: took, failed };
}

/** How long the clients of the default-quota row keep cycling, and the most cycles each makes. */
const SUSTAINED_MS = 10_000;
const SUSTAINED_MAX = 2000;

/** Each endpoint's client creating (backfill ENTRIES) and deleting subscriptions as fast as it is answered for
 *  SUSTAINED_MS, all at once, a refusal counted and tried again at once, under /healthz probes. */
async function sustained(
  serve: Serve,
  t: Tenant,
  endpoints: string[],
  url: string,
  refused: { count: number },
): Promise<{ probes: number[]; creates: number[]; ms: number; failed: number }> {
  const creates: number[] = [];
  const end = performance.now() + SUSTAINED_MS;
  const run = await probed(serve, async () => {
    await Promise.all(
      endpoints.map(async (endpoint) => {
        for (let i = 0; i < SUSTAINED_MAX && performance.now() < end; i++)
          creates.push(await cycle(t, endpoint, url, ENTRIES, refused));
      }),
    );
  });
  return { ...run, creates };
}

/** Runs `work` while TRACES_PER_SECOND trace requests a second ask for entries of the subscription's feed, by guid and
 *  by URL in turn: `work`'s value and each trace's ms. */
async function withTraces<T>(
  t: Tenant,
  subscription: string,
  work: () => Promise<T>,
): Promise<{ value: T; traces: number[] }> {
  const traces: number[] = [];
  const inFlight: Promise<void>[] = [];
  let n = 0;
  const trace = async () => {
    const i = n++ % ENTRIES;
    const entry = n % 2 === 0 ? `backfill-${i}` : `http://example.com/${i}`;
    const t0 = performance.now();
    const r = await t.get(
      `/v1/subscriptions/${subscription}/trace?entry=${encodeURIComponent(entry)}`,
    );
    if (r.status !== 200) throw new Error(`bench: a trace answered ${r.status}`);
    traces.push(performance.now() - t0);
  };
  const timer = setInterval(() => inFlight.push(trace()), 1000 / TRACES_PER_SECOND);
  try {
    return { value: await work(), traces };
  } finally {
    clearInterval(timer);
    await Promise.all(inFlight);
  }
}

/** CYCLES create/delete cycles of each endpoint's client, all clients at once, asking for `backfill` entries, under
 *  /healthz probes: the probes', the creates' and the whole run's ms. */
async function cycles(
  serve: Serve,
  t: Tenant,
  endpoints: string[],
  url: string,
  backfill: number,
  refused?: { count: number },
): Promise<{ probes: number[]; creates: number[]; ms: number; failed: number }> {
  const creates: number[] = [];
  const run = await probed(serve, async () => {
    await Promise.all(
      endpoints.map(async (endpoint) => {
        for (let i = 0; i < CYCLES; i++)
          creates.push(await cycle(t, endpoint, url, backfill, refused));
      }),
    );
  });
  return { ...run, creates };
}

/** One create asking for a backfill of `backfill` entries, then its delete; the create's ms. A create refused with
 *  429 (a quota) is counted in `refused` when given, as a hostile client that keeps trying would meet it. */
async function cycle(
  t: Tenant,
  endpoint: string,
  url: string,
  backfill = ENTRIES,
  refused?: { count: number },
): Promise<number> {
  const t0 = performance.now();
  const created = await t.post('/v1/subscriptions', { endpoint, url, backfill });
  const took = performance.now() - t0;
  if (created.status === 429 && refused) {
    refused.count++;
    return took;
  }
  const sub = ok(created, 201);
  const r = await t.delete(`/v1/subscriptions/${sub.id}`);
  if (r.status !== 204) throw new Error(`bench: DELETE answered ${r.status}`);
  return took;
}

/** Waits (up to 120 s) until the trace of `guid` for the subscription says delivered: the newest entry is in a
 *  backfill's last event, and a subscription's events are delivered in order. */
async function delivered(t: Tenant, subscription: string, guid: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const r = await t.get(`/v1/subscriptions/${subscription}/trace?entry=${guid}`);
    if ((r.body as { decision?: string }).decision === 'delivered') return;
    await sleep(100);
  }
  throw new Error(`bench: the backfill of ${subscription} was not delivered within 120 s`);
}

const unanswered = (n: number) => (n > 0 ? ` (${n} not answered within a minute)` : '');
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

/** Waits (up to 60 s) until the feed's history holds ENTRIES entries. */
async function historyFilled(t: Tenant, subscription: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const r = await t.get(`/v1/subscriptions/${subscription}/entries?limit=200`);
    if ((r.body as { data?: unknown[] }).data?.length === ENTRIES) return;
    await sleep(100);
  }
  throw new Error('bench: the backfill feed was not read within 60 s');
}

function ok(r: { status: number; body: unknown }, status: number): { id: string } {
  if (r.status !== status)
    throw new Error(`bench: answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body as { id: string };
}

/** One RSS document of ENTRIES items of ~60 KiB each (6 MiB), the same on every fetch. */
async function bigFeedOrigin(): Promise<{ url: string; close: () => Promise<void> }> {
  const items = Array.from(
    { length: ENTRIES },
    (_, i) =>
      `<item><guid>backfill-${i}</guid><title>Item ${i}</title><link>http://example.com/${i}</link><description>${ENTRY_TEXT}</description></item>`,
  ).join('');
  const body = `<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Backfill</title><link>http://example.com/</link>${items}</channel></rss>`;
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/rss+xml' }).end(body);
  });
  const url = await listen(server);
  return { url: `${url}/feed.xml`, close: () => closeServer(server) };
}

/** A receiver answering 204 to every POST, counting them and their bytes. */
async function countingReceiver(): Promise<{
  url: string;
  events: number;
  bytes: number;
  close: () => Promise<void>;
}> {
  const counts = { events: 0, bytes: 0 };
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (counts.bytes += c.length));
    req.on('end', () => {
      counts.events++;
      res.writeHead(204).end();
    });
  });
  const url = await listen(server);
  return {
    url: `${url}/hook`,
    get events() {
      return counts.events;
    },
    get bytes() {
      return counts.bytes;
    },
    close: () => closeServer(server),
  };
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

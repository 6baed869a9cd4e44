// make bench, the backfill rows, on the real `feedsub serve`: /healthz, asked every 10 ms by a prober process of its own
// (probe.ts), while 10 clients (attack.ts, a process of their own) each create a subscription asking for a backfill of
// 100 entries of ~60 KiB and delete it again, twice; the same cycles with 10 trace requests a second beside them; the
// same cycles without a backfill; then while 10 such backfills are queued and delivered whole; last, against the
// default quotas, the clients cycling flat out for 10 s (at nice 19) beside another application's traces.
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { startServe, type Serve, type Tenant } from './daemon.ts';
import type { Attack } from './attack.ts';
import { ms, percentile, type Row } from './table.ts';

const ENTRIES = 100;
const ENTRY_TEXT = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(530); // summary and summary_html: ~60 KiB of JSON
const CLIENTS = 10;
const CYCLES = 2; // per client: 20 cycles in all
const PROBE_EVERY_MS = 10;
const PROBE = new URL('./probe.ts', import.meta.url).pathname;
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
    await attacked(serve, t, endpoints.slice(0, CLIENTS), origin.url, {
      backfill: ENTRIES,
      cycles: CYCLES,
    });

    const idle = await probed(serve, () => sleep(1000));
    const before = { events: receiver.events, bytes: receiver.bytes };
    const churn = await attacked(serve, t, endpoints.slice(0, CLIENTS), origin.url, {
      backfill: ENTRIES,
      cycles: CYCLES,
    });
    const traced = await withTraces(t, watcher.id, () =>
      attacked(serve, t, endpoints.slice(0, CLIENTS), origin.url, {
        backfill: ENTRIES,
        cycles: CYCLES,
      }),
    );
    const plain = await attacked(serve, t, endpoints.slice(0, CLIENTS), origin.url, {
      backfill: 0,
      cycles: CYCLES,
    });
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
    await attacked(serve, warm, w.endpoints, url, {
      backfill: ENTRIES,
      cycles: CYCLES,
      countRefusals: true,
    });
    const a = await setUp(attacker);
    // The traces come from the other application: its requests are not the attacker's to spend.
    const traced = await withTraces(warm, w.watcher, () =>
      attacked(serve, attacker, a.endpoints, url, {
        backfill: ENTRIES,
        cycles: SUSTAINED_MAX,
        ms: SUSTAINED_MS,
        countRefusals: true,
        nice: true,
      }),
    );
    row(
      `backfill: /healthz during the cycles and ${TRACES_PER_SECOND} traces a second, default quotas, p99`,
      ms(percentile(traced.value.probes, 0.99), 1),
      `target < 50 ms; p50 ${ms(percentile(traced.value.probes, 0.5), 1)}, max ${ms(Math.max(...traced.value.probes), 1)}${unanswered(traced.value.failed)}, ${traced.value.probes.length} probes over ${ms(traced.value.ms)}; ${CLIENTS} clients of one application each creating a subscription with {"backfill": ${ENTRIES}} and deleting it, again and again for ${SUSTAINED_MS / 1000} s without waiting: ${traced.value.creates.length} creates, ${traced.value.refused} of them refused by a quota (429), sent from a process at nice 19 (attack.ts); another application's ${traced.traces.length} traces, p99 ${ms(percentile(traced.traces, 0.99), 1)}`,
    );
  } finally {
    await serve.stop();
  }
}

/** Runs `work` while a prober process of its own (probe.ts) asks /healthz every PROBE_EVERY_MS: each probe's ms, the
 *  work's, and the probes not answered within a minute. */
async function probed(
  serve: Serve,
  work: () => Promise<void>,
): Promise<{ probes: number[]; ms: number; failed: number }> {
  const prober = spawn(
    process.execPath,
    ['--import', 'tsx', PROBE, `${serve.url}/healthz`, String(PROBE_EVERY_MS)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: prober.stdout! })[Symbol.asyncIterator]();
  const next = async () => {
    const line = await lines.next();
    if (line.done) throw new Error('bench: the /healthz prober ended early');
    return line.value;
  };
  try {
    await next(); // "ready"
    const t0 = performance.now();
    try {
      await work();
    } finally {
      prober.stdin!.write('stop\n');
    }
    const took = performance.now() - t0;
    const { probes, failed } = JSON.parse(await next()) as { probes: number[]; failed: number };
    return { probes, ms: took, failed };
  } finally {
    prober.kill();
  }
}

/** How long the clients of the default-quota row keep cycling, and the most cycles each makes. */
const SUSTAINED_MS = 10_000;
const SUSTAINED_MAX = 5000;
const ATTACK = new URL('./attack.ts', import.meta.url).pathname;

/** Each endpoint's client creating a subscription that asks for `backfill` entries and deleting it, all clients at once,
 *  `cycles` times each or for `ms`, whichever ends first, in attack.ts (a process of its own; at nice 19 with `nice`),
 *  under /healthz probes once it is ready: the probes', the creates' and the whole run's ms, and how many creates a
 *  quota refused (429). A 429 is counted and tried again at once with `countRefusals`, as a hostile client would;
 *  without it, it fails. */
async function attacked(
  serve: Serve,
  t: Tenant,
  endpoints: string[],
  feed: string,
  opts: { backfill: number; cycles: number; ms?: number; countRefusals?: boolean; nice?: boolean },
): Promise<{ probes: number[]; creates: number[]; refused: number; ms: number; failed: number }> {
  const attack: Attack = {
    url: serve.url,
    key: t.key,
    endpoints,
    feed,
    backfill: opts.backfill,
    cycles: opts.cycles,
    ms: opts.ms ?? 600_000,
    countRefusals: opts.countRefusals ?? false,
    nice: opts.nice ?? false,
  };
  const child = spawn(process.execPath, ['--import', 'tsx', ATTACK, JSON.stringify(attack)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  try {
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    if ((await lines.next()).value !== 'ready') throw new Error('bench: the clients did not start');
    const run = await probed(serve, async () => {
      child.stdin!.write('go\n');
      if ((await exited) !== 0) throw new Error('bench: the attacking clients failed');
    });
    const result = await lines.next();
    const { creates, refused } = JSON.parse(String(result.value)) as {
      creates: number[];
      refused: number;
    };
    return { ...run, creates, refused };
  } finally {
    child.kill();
  }
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

// make bench, the WebSub rows on the real `feedsub serve`: publication → webhook through the https test hub, how soon a
// feed is polled once its hub refuses a renewal, lets the lease lapse or denies it, and serve's memory and another
// application's push latency while two hostile hubs push 14 MiB bodies at their callbacks.
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../test/support/daemon.ts';
import { until } from '../../test/support/deadline.ts';
import { startOrigin, startReceiver, type Origin } from '../../test/support/servers.ts';
import { pushRaw, startHub, type Hub } from '../../test/support/websub-hub.ts';
import { startServe, type Sections, type Serve, type Tenant } from './daemon.ts';
import { median, ms, percentile, type Row } from './table.ts';

/** Publications timed one after the other, a little over a second apart: a callback takes a burst of 10 per feed, then
 *  one a second (http/websub.ts). */
const PUBLICATIONS = 20;
const SPACING_MS = 1100;
/** The lease the failing hubs grant; feedsub renews at half of so short a lease (feed/websub.ts renewalAt). */
const LEASE_S = 4;
const TRIALS = 5;
/** How long a measured fallback poll may take before the trial counts as missed (the target is 5 s). */
const FALLBACK_WAIT_MS = 15_000;
/** The hostile load: each hostile hub pushes one body of HOSTILE_BYTES a second for HOSTILE_MS; a chunked one holds
 *  its last chunk HOLD_MS; the well-behaved hub publishes one new entry every HEALTHY_EVERY_MS meanwhile. */
const HOSTILE_MS = 60_000;
const HOSTILE_BYTES = 14 * 1024 * 1024;
const HOLD_MS = 29_000;
const HEALTHY_EVERY_MS = 2000;
/** After the load: how long its pushes and publications still outstanding may take before they are counted as such. */
const DRAIN_MS = HOLD_MS + 6000;
const SAMPLE_MS = 250;
const MiB = 1024 * 1024;

/** The peers of the phase and the daemon, with when each entry (by guid) reached the receiver. */
type World = {
  serve: Serve;
  origin: Origin;
  receiverUrl: string;
  arrivals: Map<string, number>;
  endpoints: Map<Tenant, string>;
  hub: () => Promise<Hub>;
};

/** A feed pushed by `hub`, verified: its path at the origin, self URL, callback and secret at the hub. */
type Pushed = {
  feed: string;
  path: string;
  self: string;
  callback: string;
  secret: string;
  doc: (n: number) => string;
};

/** Adds the WebSub rows: push latency, the fallback polls of a failing hub, and a hostile load's memory and latency. */
export async function measureWebSub(dir: string, row: Row): Promise<void> {
  const [origin, receiver, port] = await Promise.all([startOrigin(), startReceiver(), freePort()]);
  const arrivals = new Map<string, number>();
  receiver.respond((d) => {
    const now = performance.now();
    for (const guid of guidsOf(d.body)) if (!arrivals.has(guid)) arrivals.set(guid, now);
    return { status: 204 };
  });
  const hubs: Hub[] = [];
  let serve: Serve | undefined;
  try {
    serve = await startServe(join(dir, 'websub'), daemonConfig(port), [
      'push',
      'hostile',
      'healthy',
    ]);
    const w: World = {
      serve,
      origin,
      receiverUrl: receiver.url,
      arrivals,
      endpoints: new Map(),
      hub: async () => {
        const hub = await startHub();
        hubs.push(hub);
        return hub;
      },
    };
    await publicationLatency(w, row);
    await fallbacks(w, row);
    await hostileLoad(w, row);
  } finally {
    // The peers first: the daemon's stop then has no request to a hub or fetch to wait for.
    await Promise.all([origin.close(), receiver.close(), ...hubs.map((h) => h.close())]);
    await serve?.stop();
  }
}

// Polling an hour apart, so a fetch within seconds is push's fallback; min interval 1 s, so the fallback is not held
// back by the feed's baseline poll a moment before; no quota stops the bench's own API calls.
const daemonConfig = (port: number): Sections => ({
  server: { port, public_url: `http://127.0.0.1:${port}` },
  network: { allow_private: true },
  poll: { interval_seconds: 3600, min_interval_seconds: 1 },
  quotas: { api_requests_per_second: 0, new_feed_urls_per_hour: 0 },
});

/** PUBLICATIONS pushes of one new entry each through the https test hub: hub POST → webhook at the receiver. */
async function publicationLatency(w: World, row: Row): Promise<void> {
  const hub = await w.hub();
  const f = await pushedFeed(w, w.serve.tenants.push!, hub, 'latency');
  const took: number[] = [];
  for (let n = 2; n < PUBLICATIONS + 2; n++) {
    const doc = f.doc(n);
    w.origin.set(f.path, { body: doc, contentType: 'application/atom+xml' });
    const t = performance.now();
    await hub.publish(f.self, doc);
    const at = await arrival(w, guid('latency', n), 10_000);
    if (at !== undefined) took.push(at - t);
    await sleep(SPACING_MS);
  }
  row(
    'WebSub on serve: publication → webhook, p50 / p99',
    `${ms(percentile(took, 0.5))} / ${ms(percentile(took, 0.99))}`,
    `target p50 ≤ 200 ms; ${took.length} of ${PUBLICATIONS} pushes of one new entry, ${SPACING_MS / 1000} s apart, through the https test hub (signed); polling an hour apart; hub POST → receiver`,
  );
}

/** The three ways push ends without the hub saying so in time, TRIALS each on a fresh hub and feed: how long until the
 *  feed is fetched again. */
async function fallbacks(w: World, row: Row): Promise<void> {
  const t = w.serve.tenants.push!;
  const refused: number[] = [];
  const lapsed: number[] = [];
  const denied: number[] = [];
  let expired = 0;
  let deniedStatus = 0;
  for (let i = 0; i < TRIALS; i++) {
    // The renewal (at half the lease) is answered 503: from its arrival at the hub to the next fetch.
    const hub = await w.hub();
    hub.grantSeconds = LEASE_S;
    const f = await pushedFeed(w, t, hub, `refused-${i}`);
    hub.mode = 503;
    const requests = () => hub.requests.filter((r) => r.topic === f.self);
    if (await waitUntil(() => requests().length >= 2, LEASE_S * 1000 + FALLBACK_WAIT_MS)) {
      const asked = requests()[1]!.at;
      refused.push(await nextFetch(w, f.path, asked));
    } else refused.push(Infinity);
    await hub.close();
  }
  for (let i = 0; i < TRIALS; i++) {
    // The renewal is accepted and never verified: from the lease's end to the next fetch.
    const hub = await w.hub();
    hub.grantSeconds = LEASE_S;
    const f = await pushedFeed(w, t, hub, `lapsed-${i}`);
    hub.mode = 'silent';
    const verified = hub.verifications.find((v) => v.callback === f.callback && v.echoed)!.at;
    lapsed.push(await nextFetch(w, f.path, verified, verified + LEASE_S * 1000));
    if ((await pushStatus(t, f.feed)) === 'expired') expired++;
    await hub.close();
  }
  for (let i = 0; i < TRIALS; i++) {
    // A verified subscription denied later (§5.2): from the hub's denial to the next fetch.
    const hub = await w.hub();
    const f = await pushedFeed(w, t, hub, `denied-${i}`);
    const asked = performance.now();
    await hub.denyLater(f.callback);
    denied.push(await nextFetch(w, f.path, asked));
    if ((await pushStatus(t, f.feed)) === 'denied') deniedStatus++;
    await hub.close();
  }
  const spread = (v: number[]) => `${trial(median(v))} / ${trial(Math.max(...v))}`;
  row(
    'WebSub: renewal refused (503) → poll, median / max',
    spread(refused),
    `target ≤ 5 s; ${TRIALS} trials, each a feed whose hub grants a ${LEASE_S} s lease (renewed at half of it) and answers the renewal 503; its arrival at the hub → the next fetch at the origin: ${list(refused)}`,
  );
  row(
    'WebSub: lease lapsed → poll, median / max',
    spread(lapsed),
    `target ≤ 5 s; ${TRIALS} trials, the hub accepts the renewal and never verifies it; lease end (verification + ${LEASE_S} s) → the next fetch: ${list(lapsed)}; push.status expired after it in ${expired} of ${TRIALS}`,
  );
  row(
    'WebSub: denial after acceptance → poll, median / max',
    spread(denied),
    `target ≤ 5 s; ${TRIALS} trials, the hub denies a verified subscription (hub.mode=denied); the denial sent → the next fetch: ${list(denied)}; push.status denied after it in ${deniedStatus} of ${TRIALS}`,
  );
}

/** Two feeds of one application at two hostile hubs, each pushing HOSTILE_BYTES a second at its callback for
 *  HOSTILE_MS, signed right, alternating the two shapes (chunked sent fast with its last chunk held HOLD_MS; a declared
 *  Content-Length); meanwhile another application's feed at a well-behaved hub publishes an entry every 2 s. */
async function hostileLoad(w: World, row: Row): Promise<void> {
  const hostile = w.serve.tenants.hostile!;
  const targets: { callback: string; path: string; signature: string }[] = [];
  for (let i = 0; i < 2; i++) {
    const f = await pushedFeed(w, hostile, await w.hub(), `hostile-${i}`);
    targets.push({
      callback: f.callback,
      path: f.path,
      signature: signatureOf(f.secret, HOSTILE_BYTES),
    });
  }
  const good = await w.hub();
  const healthy = await pushedFeed(w, w.serve.tenants.healthy!, good, 'healthy');

  const before = w.serve.memory().rssMiB;
  const peakReset = w.serve.resetPeak();
  let maxRss = before;
  const sampler = setInterval(() => {
    maxRss = Math.max(maxRss, w.serve.memory().rssMiB);
  }, SAMPLE_MS);
  const stop = new AbortController();
  const shapes = ['chunked', 'declared'] as const;
  const answers = new Map<string, number>(); // `${shape} ${status}` → count
  const slowest = { chunked: 0, declared: 0 }; // ms from a push's start to its answer (or reset)
  const outstanding = new Set<Promise<unknown>>();
  const published = new Map<string, number>(); // guid → performance.now() of its publication
  const start = performance.now();
  const cpuBefore = cpuSeconds(w.serve.pid);
  const fetchesBefore = w.origin.requests.length;
  try {
    const hostileLoop = (async () => {
      for (let s = 0; s < HOSTILE_MS / 1000; s++) {
        await sleep(Math.max(0, start + s * 1000 - performance.now()));
        for (const [i, target] of targets.entries()) {
          const shape = shapes[(s + i) % 2]!;
          const sent = performance.now();
          const push = pushRaw(target.callback, {
            size: HOSTILE_BYTES,
            signature: target.signature,
            signal: stop.signal,
            ...(shape === 'declared' ? { declared: HOSTILE_BYTES } : { holdLastMs: HOLD_MS }),
          }).then(({ status, at }) => {
            slowest[shape] = Math.max(slowest[shape], at - sent);
            const key = `${shape} ${status}`;
            answers.set(key, (answers.get(key) ?? 0) + 1);
          });
          outstanding.add(push);
          void push.then(() => outstanding.delete(push));
        }
      }
    })();
    const healthyLoop = (async () => {
      for (let k = 0; k < HOSTILE_MS / HEALTHY_EVERY_MS; k++) {
        await sleep(Math.max(0, start + k * HEALTHY_EVERY_MS - performance.now()));
        const n = k + 2;
        const doc = healthy.doc(n);
        w.origin.set(healthy.path, { body: doc, contentType: 'application/atom+xml' });
        published.set(guid('healthy', n), performance.now());
        const publication = good.publish(healthy.self, doc).catch(() => []);
        outstanding.add(publication);
        void publication.then(() => outstanding.delete(publication));
      }
    })();
    await Promise.all([hostileLoop, healthyLoop]);
    const end = performance.now() + DRAIN_MS;
    await waitUntil(
      () => outstanding.size === 0 && [...published.keys()].every((g) => w.arrivals.has(g)),
      DRAIN_MS,
      100,
    );
    const left = outstanding.size;
    stop.abort(); // what is still sending or waiting for its answer after DRAIN_MS
    await waitUntil(() => outstanding.size === 0, Math.max(1000, end - performance.now()), 20);
    const { peakMiB } = w.serve.memory();
    const cpu = cpuSeconds(w.serve.pid) - cpuBefore;
    const hostilePaths = new Set(targets.map((t) => t.path));
    const hostileFetches = w.origin.requests
      .slice(fetchesBefore)
      .filter((r) => hostilePaths.has(r.path)).length;
    const latencies = [...published].map(([g, at]) => (w.arrivals.get(g) ?? Infinity) - at);
    const delivered = latencies.filter(Number.isFinite);
    const pushes = [...answers.values()].reduce((a, b) => a + b, 0);
    row(
      'WebSub hostile pushes: serve peak RSS',
      `${Math.max(peakMiB, maxRss).toFixed(0)} MiB`,
      `target < 300 MiB; VmHWM ${peakReset ? 'since a reset before the load' : '(not reset: the kernel refused)'} ${peakMiB.toFixed(0)} MiB, max VmRSS sampled every ${SAMPLE_MS} ms ${maxRss.toFixed(0)} MiB, ${before.toFixed(0)} MiB before; two hubs each pushing ${HOSTILE_BYTES / MiB} MiB a second at their feed's callback for ${HOSTILE_MS / 1000} s, signed right`,
    );
    row(
      'WebSub hostile pushes: other application publication → webhook, max',
      delivered.length === latencies.length ? ms(Math.max(...latencies)) : 'missed',
      `target ≤ 2 s; p50 ${ms(percentile(delivered, 0.5))}, ${delivered.length} of ${latencies.length} entries delivered (one published every ${HEALTHY_EVERY_MS / 1000} s at a well-behaved hub during the load)`,
    );
    row(
      'WebSub hostile pushes: answers',
      `${pushes} pushes`,
      `${shapes.map((shape) => `${shape}: ${answerList(answers, shape)}, the slowest in ${ms(slowest[shape])}`).join('; ')} (0: reset before an answer); ${left} still open ${DRAIN_MS / 1000} s after the load, ended by the bench; the hostile feeds fetched ${hostileFetches} times meanwhile; serve used ${cpu.toFixed(1)} s of CPU from the load's start to here. Chunked: sent as fast as taken, the last chunk held ${HOLD_MS / 1000} s; declared: Content-Length ${HOSTILE_BYTES / MiB} MiB`,
    );
  } finally {
    clearInterval(sampler);
    stop.abort();
  }
}

/** A feed at a fresh path advertising `hub`, subscribed for `t` and verified at the hub (push active). */
async function pushedFeed(w: World, t: Tenant, hub: Hub, name: string): Promise<Pushed> {
  const path = `/${name}.xml`;
  const self = `${w.origin.url}${path}`;
  const doc = (n: number) => atom(name, n, hub.url, self);
  w.origin.set(path, { body: doc(1), contentType: 'application/atom+xml' });
  const endpoint =
    w.endpoints.get(t) ??
    (await created(t, '/v1/endpoints', { title: 'bench', url: w.receiverUrl })).id;
  w.endpoints.set(t, endpoint);
  const { feed } = await created(t, '/v1/subscriptions', { endpoint, url: self });
  const verified = () => [...hub.subscriptions.values()].find((s) => s.topic === self);
  await until(
    async () => verified() !== undefined && (await pushStatus(t, feed)) === 'active',
    30_000,
    `bench: push active for ${name}`,
    50,
  );
  const { callback, secret } = verified()!;
  return { feed: feed!, path, self, callback, secret: secret!, doc };
}

async function created(
  t: Tenant,
  path: string,
  body: unknown,
): Promise<{ id: string; feed?: string }> {
  const r = await t.post(path, body);
  if (r.status !== 201) throw new Error(`bench: POST ${path}: ${JSON.stringify(r.body)}`);
  return r.body as { id: string; feed?: string };
}

async function pushStatus(t: Tenant, feed: string | undefined): Promise<string> {
  const r = await t.get(`/v1/feeds/${feed}`);
  return (r.body as { push?: { status?: string } }).push?.status ?? '';
}

/** Ms from `from` to the origin's first fetch of `path` after `after` (default `from`), waiting up to
 *  FALLBACK_WAIT_MS past `from`; Infinity when none came. */
async function nextFetch(w: World, path: string, after: number, from = after): Promise<number> {
  const fetched = () => w.origin.requests.find((r) => r.path === path && r.at > after)?.at;
  await waitUntil(() => fetched() !== undefined, from + FALLBACK_WAIT_MS - performance.now());
  return (fetched() ?? Infinity) - from;
}

/** When the entry `g` reached the receiver (performance.now()), waiting up to `ms`. */
async function arrival(w: World, g: string, ms: number): Promise<number | undefined> {
  await waitUntil(() => w.arrivals.has(g), ms, 5);
  return w.arrivals.get(g);
}

/** Checks every `everyMs` until `check` holds or `ms` have passed; whether it held. */
async function waitUntil(check: () => boolean, ms: number, everyMs = 10): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (!check()) {
    if (performance.now() > deadline) return false;
    await sleep(everyMs);
  }
  return true;
}

/** The CPU time (user + system) process `pid` has used, in seconds (Linux /proc, at 100 ticks a second). */
function cpuSeconds(pid: number): number {
  // The fields after the command name, which is in parentheses and may hold spaces: utime and stime are the 12th and
  // 13th of them.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** X-Hub-Signature (sha256) of `size` bytes of 'a', the body pushRaw sends. */
function signatureOf(secret: string, size: number): string {
  const hmac = createHmac('sha256', secret);
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  for (let sent = 0; sent < size; sent += chunk.length)
    hmac.update(size - sent >= chunk.length ? chunk : chunk.subarray(0, size - sent));
  return `sha256=${hmac.digest('hex')}`;
}

const guid = (name: string, i: number) => `urn:bench:${name}:${i}`;

/** An Atom feed advertising `hub`, with entries 1 to `n` of `name`. */
function atom(name: string, n: number, hub: string, self: string): string {
  let entries = '';
  for (let i = 1; i <= n; i++)
    entries += `<entry><id>${guid(name, i)}</id><title>E${i}</title><updated>2026-01-01T00:00:00Z</updated></entry>`;
  return `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>${name}</title><id>urn:bench:${name}</id><updated>2026-01-01T00:00:00Z</updated><link rel="hub" href="${hub}"/><link rel="self" href="${self}"/>${entries}</feed>`;
}

/** The entry guids of a webhook body (none when it is not an entries event). */
function guidsOf(body: string): string[] {
  try {
    const event = JSON.parse(body) as { data?: { entries?: { guid?: string }[] } };
    return (event.data?.entries ?? []).flatMap((e) => (e.guid ? [e.guid] : []));
  } catch {
    return [];
  }
}

/** A trial's value; a missed one as `none in …`. */
const trial = (v: number) => (Number.isFinite(v) ? ms(v) : `none in ${FALLBACK_WAIT_MS / 1000} s`);
const list = (values: number[]) => values.map(trial).join(', ');

function answerList(answers: Map<string, number>, shape: string): string {
  const counts = [...answers]
    .filter(([key]) => key.startsWith(`${shape} `))
    .map(([key, n]) => `${key.slice(shape.length + 1)} ×${n}`);
  return counts.length > 0 ? counts.join(', ') : 'none';
}

// `tsx scripts/bench/websub.ts` measures this phase alone (NODE_EXTRA_CA_CERTS naming test/fixtures/tls/cert.pem).
if (import.meta.url === `file://${process.argv[1]}`) {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-bench-websub-'));
  const rows: string[] = [];
  try {
    await measureWebSub(dir, (what, value, note = '') =>
      rows.push(`| ${what} | ${value} | ${note}`),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n${rows.join('\n')}`,
  );
}

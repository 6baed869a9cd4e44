// make bench: feedsub against a local origin of N feeds and a local receiver (separate process), beside the raw limits.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { parseAtomFeed, parseRssFeed } from 'feedsmith';
import { Agent, request } from 'undici';
import { quietCtx } from '../src/context.ts';
import { CHECKPOINT_INTERVAL_MS } from '../src/app.ts';
import { createEndpoint } from '../src/actions/endpoints.ts';
import { createKey } from '../src/actions/keys.ts';
import { createSubscription } from '../src/actions/subscriptions.ts';
import { systemClock } from '../src/clock.ts';
import { defaultConfig, withConfig } from '../src/config.ts';
import { startCheckpointer } from '../src/db/checkpointer.ts';
import { openDatabase } from '../src/db/open.ts';
import { createLogger, silentLogger } from '../src/log.ts';
import { webhookHeaders } from '../src/webhook/sign.ts';
import { drainDeliveries } from '../src/worker/deliverer.ts';
import { createWorkers } from '../src/worker/index.ts';
import { createMetrics } from '../src/worker/metrics.ts';
import type { Telemetry } from '../src/telemetry.ts';
import { pollTick, type PollSummary } from '../src/worker/poller.ts';

const N = Number(process.env.BENCH_FEEDS ?? 1000);
const CONCURRENCY = 16;
const TRIALS = 5;
const rows: [string, string, string][] = [];
const row = (what: string, value: string, note = '') => {
  rows.push([what, value, note]);
};
const rate = (n: number, ms: number) => `${(n / (ms / 1000)).toFixed(0)}/s`;

async function main(): Promise<void> {
  const origin = spawn(
    process.execPath,
    ['--import', 'tsx', new URL('./bench-origin.ts', import.meta.url).pathname, String(N)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<string>((resolve) =>
    createInterface({ input: origin.stdout! }).once('line', resolve),
  );
  const base = `http://127.0.0.1:${port.trim()}`;
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-bench-'));
  try {
    await run(base, dir);
  } finally {
    origin.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
  const width = [
    Math.max(...rows.map((r) => r[0].length)),
    Math.max(...rows.map((r) => r[1].length)),
  ];
  console.log(
    `\nfeedsub bench: ${N} feeds (~50 KB each, half RSS, half Atom), poll concurrency ${CONCURRENCY}, node ${process.version}\n`,
  );
  console.log(`| ${'measure'.padEnd(width[0]!)} | ${'value'.padEnd(width[1]!)} | note`);
  console.log(`|${'-'.repeat(width[0]! + 2)}|${'-'.repeat(width[1]! + 2)}|------`);
  for (const [a, b, c] of rows)
    console.log(`| ${a.padEnd(width[0]!)} | ${b.padEnd(width[1]!)} | ${c}`);
}

async function run(base: string, dir: string): Promise<void> {
  const config = withConfig(defaultConfig(), {
    storage: { data_dir: dir },
    network: { allow_private: true },
    poll: { concurrency: CONCURRENCY, per_host_concurrency: CONCURRENCY },
    delivery: { concurrency: 32, per_endpoint_concurrency: 32 },
  });
  const db = openDatabase(join(dir, 'feedsub.db'));
  const ctx = quietCtx(db, systemClock, config);
  const checkpointer = startCheckpointer(db, {
    intervalMs: CHECKPOINT_INTERVAL_MS,
    logger: silentLogger,
  }); // as app.ts does
  await checkpointer.ready();
  // As the daemon runs: Prometheus metrics, and a log line per attempt at the default level (info, JSON), written to
  // nowhere instead of stderr. Delivered attempts are also counted here, for the clocks below.
  const metrics = createMetrics(ctx);
  let delivered = 0;
  let onDelivered = () => {};
  const telemetry: Telemetry = {
    ...metrics.telemetry,
    attempted: (outcome, durationMs, latencyMs) => {
      metrics.telemetry.attempted(outcome, durationMs, latencyMs);
      if (outcome === 'delivered') {
        delivered++;
        onDelivered();
      }
    },
  };
  const logger = createLogger({ level: 'info', format: 'json', write: () => {} });
  const workers = createWorkers(ctx, logger, telemetry);
  ctx.nudgeDeliverer = workers.deliverer.nudge; // as app.ts wires it
  const app = createKey(ctx, 'bench', null).application.id;
  const endpoint = createEndpoint(ctx, app, { title: 'bench', url: `${base}/hook` });
  for (let i = 0; i < N; i++)
    createSubscription(ctx, app, {
      endpoint: endpoint.id,
      url: `${base}/feeds/${i}.xml`,
      metadata: { feed: i },
    });
  const round = (query: string) =>
    request(`${base}/_round?${query}`, { method: 'POST' }).then((r) => r.body.json());
  const poll = async (label: string, note: string) => {
    const t = performance.now();
    const { summary } = await pollTick(ctx, workers.pollerDeps, { all: true });
    const ms = performance.now() - t;
    row(
      label,
      rate(summary.fetched, ms),
      `${note}; ${summary.fetched} fetched, ${summary.notModified} unchanged, ${summary.failed} failed, ${summary.newEntries} new entries, ${(ms / 1000).toFixed(2)} s`,
    );
    return summary;
  };

  await poll('feeds polled/s, first fetch (parse, baseline)', 'every body parsed and keyed');
  await poll('feeds polled/s, 304 path', 'conditional GET answered 304, no parse');
  await round('change=0&etags=0');
  await poll(
    'feeds polled/s, same-body path',
    'no validators; 200 with an identical body hash, no parse',
  );
  await round('change=0.2&add=2&etags=1');
  const changed = await poll(
    'feeds polled/s, changed path (20 % changed)',
    '80 % answer 304, 20 % parsed with 2 new entries',
  );
  row('entries detected', String(changed.newEntries), `expected ${Math.round(N * 0.2) * 2}`);
  // Deliveries are counted as the deliverer records them, so a clock stops at the last one, not at the next poll.
  const deliveredReaches = (n: number) =>
    new Promise<void>((resolve) => {
      onDelivered = () => {
        if (delivered >= n) resolve();
      };
      onDelivered();
    });
  await round('change=1&add=1');
  const all = await poll(
    'feeds polled/s, changed path (all changed)',
    'every feed parsed with 1 new entry',
  );
  // Warm-up, untimed: the deliverer loop delivers the events of the two rounds so far, so that the timed trials below
  // start with the delivery path compiled; the raw POST loop gets as many requests before its trials.
  const warmUp = changed.events + all.events;
  workers.deliverer.start();
  await withTimeout(deliveredReaches(warmUp), 60_000);
  await workers.deliverer.stop(5000);
  await drainDeliveries(workers.delivererDeps.inFlight, 5000);
  row(
    'events delivered, warm-up',
    String(warmUp),
    "those two rounds' events, untimed, before the timed trials",
  );

  const rounds: PollSummary[] = [];
  for (let i = 0; i < 4; i++) {
    // four more full rounds, so that each timed delivery trial lasts a few hundred ms
    await round('change=1&add=1');
    rounds.push((await pollTick(ctx, workers.pollerDeps, { all: true })).summary);
  }
  const queued = rounds.reduce((n, r) => n + r.events, 0);
  row(
    'events queued',
    String(queued),
    `one per subscription per changed round (${rounds.length} rounds)`,
  );

  // Delivery as the daemon runs it (the deliverer loop, pipelined) against the raw signed POST loop sending the same
  // bodies, in turns: raw, delivery, raw, delivery… Each side's rate is the median of its trials, so one burst of noise
  // from the machine (it is shared, and its speed drifts over seconds) does not decide the ratio.
  const eventBodies = db
    .prepare(
      "SELECT b.body FROM event_bodies b JOIN events e ON e.id = b.event_id WHERE e.status = 'pending'",
    )
    .pluck()
    .all() as string[];
  // The polls leave garbage in both processes and tens of MB of WAL for the checkpoint thread: pause before timing,
  // then warm the raw loop up as the deliverer was: as many requests, untimed.
  await new Promise((r) => setTimeout(r, 1000));
  const rawAgent = new Agent({ connections: 32 }); // kept across trials, as the deliverer keeps its connections
  await rawPosts(base, rawAgent, eventBodies.slice(0, warmUp));
  const concurrency = config.delivery.concurrency;
  // A stopped trial still finishes its attempts in flight, and its last group commit may hold as many outcomes again.
  const per = Math.floor((queued - TRIALS * 2 * concurrency) / TRIALS);
  const deliveryRates: number[] = [];
  const rawRates: number[] = [];
  for (let i = 0; i < TRIALS; i++) {
    rawRates.push(await rawPosts(base, rawAgent, eventBodies.slice(i * per, (i + 1) * per)));
    const reached = deliveredReaches(delivered + per);
    const t = performance.now();
    workers.deliverer.start();
    await withTimeout(reached, 60_000);
    deliveryRates.push(per / ((performance.now() - t) / 1000));
    await workers.deliverer.stop(5000);
    await drainDeliveries(workers.delivererDeps.inFlight, 5000);
  }
  await rawAgent.close();
  const deliveryRate = median(deliveryRates);
  const post = median(rawRates);
  const list = (rates: number[]) => rates.map((r) => `${r.toFixed(0)}/s`).join(', ');
  row(
    'events delivered/s',
    `${deliveryRate.toFixed(0)}/s`,
    `median of ${TRIALS} trials of ${per} queued events (${list(deliveryRates)}), signed, to the local receiver, deliverer loop`,
  );
  workers.deliverer.start(); // the rest of the queue, then the latency round
  // Latency as a subscriber sees it: a round polled while the deliverer loop runs.
  const since = new Date().toISOString();
  await round('change=0.2&add=1');
  const live = await pollTick(ctx, workers.pollerDeps, { all: true });
  await until(
    () =>
      (db
        .prepare("SELECT count(*) FROM events WHERE status = 'delivered' AND created_at >= ?")
        .pluck()
        .get(since) as number) >= live.summary.events,
    60_000,
  );
  await workers.stop(5000);
  const lat = db
    .prepare(
      "SELECT (julianday(delivered_at) - julianday(created_at)) * 86400000 AS ms FROM events WHERE status = 'delivered' AND created_at >= ? ORDER BY ms",
    )
    .pluck()
    .all(since) as number[];
  const pct = (p: number) =>
    `${(lat[Math.min(lat.length - 1, Math.floor(lat.length * p))] ?? 0).toFixed(0)} ms`;
  row(
    'event created → delivered, p50',
    pct(0.5),
    `${lat.length} events created by a poll round while the deliverer runs`,
  );
  row('event created → delivered, p99', pct(0.99), '');
  await workers.close();
  await checkpointer.stop();
  db.close();

  const bodies = await rawGets(base);
  row(
    'raw: undici conditional GET rate',
    bodies.rate,
    `same origin, concurrency ${CONCURRENCY}, answered 304`,
  );
  const tp = performance.now();
  for (const [i, b] of bodies.bodies.entries()) (i % 2 === 0 ? parseRssFeed : parseAtomFeed)(b);
  row(
    'raw: feedsmith parse rate',
    rate(bodies.bodies.length, performance.now() - tp),
    'same bodies, one thread, no normalization',
  );
  row(
    'raw: signed POST rate',
    `${post.toFixed(0)}/s`,
    `median of ${TRIALS} trials, each just before a delivery trial, of its ${per} event bodies (${list(rawRates)}): same receiver, signed, concurrency 32, undici`,
  );
  row('delivery vs raw POST', `${((deliveryRate / post) * 100).toFixed(0)} %`, 'target ≥ 50 %');
  row(
    'peak RSS',
    `${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`,
    'whole bench process',
  );
}

async function until(test: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (Date.now() > deadline) throw new Error('bench: timed out waiting for deliveries');
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function rawGets(base: string): Promise<{ rate: string; bodies: string[] }> {
  const agent = new Agent({ connections: CONCURRENCY });
  const bodies: string[] = [];
  const etags: string[] = [];
  for (let i = 0; i < N; i++) {
    const r = await request(`${base}/feeds/${i}.xml`, { dispatcher: agent });
    etags.push(String(r.headers.etag));
    bodies.push(await r.body.text());
  }
  let next = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < N) {
        const i = next++;
        const r = await request(`${base}/feeds/${i}.xml`, {
          dispatcher: agent,
          headers: { 'if-none-match': etags[i]! },
        });
        await r.body.dump();
      }
    }),
  );
  const ms = performance.now() - t;
  await agent.close();
  return { rate: rate(N, ms), bodies };
}

/** POSTs each body signed through `agent`, 32 at a time; returns the rate. */
async function rawPosts(base: string, agent: Agent, bodies: string[]): Promise<number> {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  let next = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < bodies.length) {
        const i = next++;
        const body = bodies[i]!;
        const r = await request(`${base}/hook`, {
          method: 'POST',
          dispatcher: agent,
          body,
          headers: webhookHeaders([secret], `msg_${i}`, Math.floor(Date.now() / 1000), body),
        });
        await r.body.dump();
      }
    }),
  );
  return bodies.length / ((performance.now() - t) / 1000);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function withTimeout(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('bench: timed out waiting for deliveries')), ms);
  });
  try {
    await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

await main();

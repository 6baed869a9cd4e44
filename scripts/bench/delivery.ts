// The delivery phases: an untimed warm-up, timed trials of the deliverer loop against raw POSTs, and live latency.
import { performance } from 'node:perf_hooks';
import { Agent } from 'undici';
import { dialect, type Sql } from '../../src/db/engine.ts';
import { drainDeliveries } from '../../src/worker/deliver/deliverer.ts';
import { pollTick } from '../../src/worker/poll/round.ts';
import { rawPosts } from './raw.ts';
import type { Bench } from './setup.ts';
import { TRIALS } from './settings.ts';
import { listRates, median } from './table.ts';

/** The rates of the timed trials, each of `per` events. */
export type DeliveryTrials = { per: number; deliveryRates: number[]; rawRates: number[] };

/** Runs the deliverer loop, untimed, until `warmUp` events are delivered, so the timed trials start compiled. */
export async function warmUpDeliveries(b: Bench, warmUp: number): Promise<void> {
  b.workers.deliverer.start();
  await withTimeout(b.deliveries.reaches(warmUp), 60_000);
  await stopDeliverer(b);
  b.row(
    'events delivered, warm-up',
    String(warmUp),
    "those two rounds' events, untimed, before the timed trials",
  );
}

/** Times the deliverer loop against raw signed POSTs of the queued bodies, in turns; adds the delivery rate. */
export async function measureDelivery(
  b: Bench,
  queued: number,
  warmUp: number,
): Promise<DeliveryTrials> {
  // Delivery as the daemon runs it (the deliverer loop, pipelined) against the raw signed POST loop sending the same
  // bodies, in turns: raw, delivery, raw, delivery… Each side's rate is the median of its trials, so one burst of noise
  // from the machine (it is shared, and its speed drifts over seconds) does not decide the ratio.
  const eventBodies = await b.ctx.db.column<string>(
    "SELECT b.body FROM event_bodies b JOIN events e ON e.id = b.event_id WHERE e.status = 'pending'",
  );
  // The polls leave garbage in both processes and tens of MB of WAL for the checkpoint thread: pause before timing,
  // then warm the raw loop up as the deliverer was: as many requests, untimed.
  await new Promise((r) => setTimeout(r, 1000));
  const rawAgent = new Agent({ connections: 32 }); // kept across trials, as the deliverer keeps its connections
  await rawPosts(b.base, rawAgent, eventBodies.slice(0, warmUp));
  const concurrency = b.config.delivery.concurrency;
  // A stopped trial still finishes its attempts in flight, and its last group commit may hold as many outcomes again.
  const per = Math.floor((queued - TRIALS * 2 * concurrency) / TRIALS);
  const deliveryRates: number[] = [];
  const rawRates: number[] = [];
  for (let i = 0; i < TRIALS; i++) {
    rawRates.push(await rawPosts(b.base, rawAgent, eventBodies.slice(i * per, (i + 1) * per)));
    deliveryRates.push(await deliveryTrial(b, per));
  }
  await rawAgent.close();
  b.row(
    'events delivered/s',
    `${median(deliveryRates).toFixed(0)}/s`,
    `median of ${TRIALS} trials of ${per} queued events (${listRates(deliveryRates)}), signed, to the local receiver, deliverer loop`,
  );
  return { per, deliveryRates, rawRates };
}

/** Delivers the rest of the queue, then times a round polled while the deliverer loop runs; stops the workers. */
export async function measureLatency(b: Bench): Promise<void> {
  b.workers.deliverer.start(); // the rest of the queue, then the latency round
  // Latency as a subscriber sees it: a round polled while the deliverer loop runs.
  const since = new Date().toISOString();
  await b.round('change=0.2&add=1');
  const live = await pollTick(b.ctx, b.workers.pollerDeps, { all: true });
  await until(async () => (await deliveredSince(b.ctx.db, since)) >= live.summary.events, 60_000);
  await b.workers.stop(5000);
  // The times are ISO 8601 text on both engines.
  const ms = dialect(b.ctx.db.dialect, {
    sqlite: '(julianday(delivered_at) - julianday(created_at)) * 86400000',
    postgres: 'extract(epoch FROM delivered_at::timestamptz - created_at::timestamptz) * 1000',
  });
  const lat = await b.ctx.db.column<number>(
    `SELECT ${ms} AS ms FROM events WHERE status = 'delivered' AND created_at >= ? ORDER BY ms`,
    [since],
  );
  const pct = (sorted: number[], p: number) =>
    `${(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0).toFixed(0)} ms`;
  b.row(
    'event created → delivered, p50',
    pct(lat, 0.5),
    `${lat.length} events created by a poll round while the deliverer runs; created_at is when the fetch that saw the entry began, so this holds the fetch, the parse queue and the record`,
  );
  b.row('event created → delivered, p99', pct(lat, 0.99), '');
  // From the commit of the poll's record (the poller's report, right after it) to the start of the event's first
  // attempt: how long a new event waits for the deliverer.
  const attempted = await b.ctx.db.all<{
    feed_id: string;
    created_at: string;
    started_at: string;
    delivered_at: string;
  }>(
    `SELECT s.feed_id, e.created_at, min(a.started_at) AS started_at, e.delivered_at
       FROM events e JOIN subscriptions s ON s.id = e.subscription_id JOIN attempts a ON a.event_id = e.id
      WHERE e.status = 'delivered' AND e.created_at >= ? GROUP BY e.id, s.feed_id, e.created_at, e.delivered_at`,
    [since],
  );
  // Each event's way, in stages that add up to created → delivered: the fetch (created_at is when it began), the read
  // and the record until its commit, the wait for the deliverer, and the attempt until its outcome was recorded.
  const stages = {
    fetch: [] as number[],
    record: [] as number[],
    wait: [] as number[],
    attempt: [] as number[],
  };
  for (const e of attempted) {
    const recorded = b.recordedAt.get(e.feed_id);
    const fetched = b.fetchMs.get(e.feed_id);
    if (recorded === undefined || fetched === undefined) continue;
    const created = Date.parse(e.created_at);
    const started = Date.parse(e.started_at);
    stages.fetch.push(fetched);
    stages.record.push(recorded - created - fetched);
    stages.wait.push(started - recorded);
    stages.attempt.push(Date.parse(e.delivered_at) - started);
  }
  for (const list of Object.values(stages)) list.sort((x, y) => x - y);
  const waits = stages.wait;
  b.row(
    'event recorded → first attempt, p50',
    pct(waits, 0.5),
    `the same events (${waits.length}), from the commit of the poll that made each (its report) to the start of its first attempt`,
  );
  b.row('event recorded → first attempt, p99', pct(waits, 0.99), '');
  const byStage = (p: number) =>
    `fetch ${pct(stages.fetch, p)}, read and record ${pct(stages.record, p)}, wait ${pct(stages.wait, p)}, attempt ${pct(stages.attempt, p)}`;
  b.row(
    'event created → delivered, by stage, p50',
    byStage(0.5),
    `each stage's own p50 over the same events (they need not add up to the whole's): the fetch until its body was read; the read on the parse thread and the record until its commit; the wait for the deliverer; the attempt until its outcome was recorded. p99: ${byStage(0.99)}`,
  );
}

/** One timed run of the deliverer loop until `per` more events are delivered; returns its rate per second. */
async function deliveryTrial(b: Bench, per: number): Promise<number> {
  const reached = b.deliveries.reaches(b.deliveries.count + per);
  const t = performance.now();
  b.workers.deliverer.start();
  await withTimeout(reached, 60_000);
  const perSecond = per / ((performance.now() - t) / 1000);
  await stopDeliverer(b);
  return perSecond;
}

// A stopped deliverer loop still has attempts in flight: wait for them, so the next phase starts from a quiet queue.
async function stopDeliverer(b: Bench): Promise<void> {
  await b.workers.deliverer.stop(5000);
  await drainDeliveries(b.workers.delivererDeps, 5000);
}

async function deliveredSince(db: Sql, since: string): Promise<number> {
  const [count] = await db.column<number>(
    "SELECT count(*) FROM events WHERE status = 'delivered' AND created_at >= ?",
    [since],
  );
  return count!;
}

async function until(test: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error('bench: timed out waiting for deliveries');
    await new Promise((r) => setTimeout(r, 20));
  }
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

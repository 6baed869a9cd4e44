// The endpoint's delivery options at the receiver: its extra headers on every attempt and on the test event,
// and its rate limit, tick by tick on the injected clock.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sendTestEvent } from '../../../src/actions/events.ts';
import { manualClock, systemClock } from '../../../src/clock.ts';
import { silentLogger } from '../../../src/log.ts';
import { deliverTick } from '../../../src/worker/deliver/deliverer.ts';
import { createWorkers } from '../../../src/worker/index.ts';
import { verifySignature } from '../../../src/webhook/sign.ts';
import { deliveryWorld } from './fixtures.ts';

describe('deliverer endpoint headers', () => {
  it('sends the endpoint headers on every attempt, as they stand when it starts, beside intact signing headers', async () => {
    const d = await deliveryWorld({ delivery: { retry_schedule_seconds: [5] } });
    try {
      const ep = await d.endpoint();
      await d.w.call('PATCH', `/v1/endpoints/${ep.id}`, {
        key: d.key,
        body: { headers: { 'X-Tenant': 'acme 42', Authorization: 'Bearer t0k3n' } },
      });
      const [id] = await d.queue(await d.subscription(ep.id), 1);
      d.receiver.respond([500, 200]);
      await d.tick();
      await d.w.call('PATCH', `/v1/endpoints/${ep.id}`, {
        key: d.key,
        body: { headers: { 'X-Tenant': 'acme 43' } },
      });
      await d.toNextDue();
      await d.tick();
      const [first, retry] = d.receiver.deliveries;
      assert.equal((await d.event(id!)).status, 'delivered');
      assert.equal(first!.headers['x-tenant'], 'acme 42');
      assert.equal(first!.headers.authorization, 'Bearer t0k3n');
      assert.equal(
        retry!.headers['x-tenant'],
        'acme 43',
        'the retry carries the headers as changed',
      );
      assert.equal(retry!.headers.authorization, undefined);
      for (const x of [first!, retry!]) {
        assert.equal(x.headers['content-type'], 'application/json');
        assert.equal(x.headers['user-agent'], 'feedsub-test');
        assert.ok(verifySignature(ep.secret, x.id, Number(x.timestamp), x.body, x.signature));
      }
    } finally {
      await d.close();
    }
  });

  it('sends the endpoint headers with the test event', async () => {
    const d = await deliveryWorld();
    try {
      const ep = await d.endpoint();
      await d.w.call('PATCH', `/v1/endpoints/${ep.id}`, {
        key: d.key,
        body: { headers: { 'X-Api-Key': 'k-1' } },
      });
      const sent = await sendTestEvent(d.w.ctx, d.applicationId, ep.id, { agent: d.agent });
      assert.equal(sent.delivered, true);
      assert.equal(d.receiver.deliveries[0]!.headers['x-api-key'], 'k-1');
    } finally {
      await d.close();
    }
  });
});

describe('deliverer endpoint rate limit', () => {
  it('starts at most rate_limit attempts in any one second, skipping the endpoint while others are sent', async () => {
    const d = await deliveryWorld({ delivery: { concurrency: 8, per_endpoint_concurrency: 8 } });
    try {
      const limited = await d.endpoint(`${d.receiver.url}/limited`);
      const free = await d.endpoint(`${d.receiver.url}/free`);
      await d.w.call('PATCH', `/v1/endpoints/${limited.id}`, {
        key: d.key,
        body: { rate_limit: 2 },
      });
      // Proven endpoints may run several attempts at once: only the rate holds the limited one back.
      for (const ep of [limited, free]) {
        await d.queue(await d.subscription(ep.id), 1);
        await d.tick();
      }
      d.w.clock.advance(1000);
      const slow: string[] = [];
      const fast: string[] = [];
      for (let i = 0; i < 5; i++)
        slow.push(...(await d.queue(await d.subscription(limited.id), 1)));
      for (let i = 0; i < 3; i++) fast.push(...(await d.queue(await d.subscription(free.id), 1)));
      const delivered = async (ids: string[]) => {
        const done: string[] = [];
        for (const id of ids) if ((await d.event(id)).status === 'delivered') done.push(id);
        return done;
      };
      assert.equal((await d.tick()).summary.attempted, 5);
      assert.equal(
        (await delivered(fast)).length,
        3,
        'the endpoint without a limit gets all its events at once',
      );
      assert.equal((await delivered(slow)).length, 2, 'the limited one two of them');
      assert.equal((await d.tick()).summary.attempted, 0, 'the limited endpoint waits');
      d.w.clock.advance(999);
      assert.equal((await d.tick()).summary.attempted, 0, 'still within the second');
      d.w.clock.advance(1);
      assert.equal((await d.tick()).summary.attempted, 2, 'a second after the first two');
      d.w.clock.advance(1000);
      assert.equal((await d.tick()).summary.attempted, 1);
    } finally {
      await d.close();
    }
  });
});

describe('deliverer loop endpoint rate limit', () => {
  it('wakes for a limited endpoint whose second ends between its claim and the look at when to wake', async () => {
    const d = await deliveryWorld({ delivery: { concurrency: 4, per_endpoint_concurrency: 4 } });
    try {
      const limited = await d.endpoint(`${d.receiver.url}/limited`);
      await d.w.call('PATCH', `/v1/endpoints/${limited.id}`, {
        key: d.key,
        body: { rate_limit: 2 },
      });
      await d.queue(await d.subscription(limited.id), 1);
      await d.tick(); // a proven endpoint may run several attempts at once: only the rate holds it back
      d.w.clock.advance(1000);
      for (let i = 0; i < 4; i++) await d.queue(await d.subscription(limited.id), 1); // one each: a subscription's go in order
      assert.equal((await d.tick()).started, 2, 'two start, the rest wait for the next second');
      const start = d.w.clock.now().getTime();
      d.w.clock.advance(500); // the claim looks here: no room yet
      // ...and by the time the tick works out when to wake, a loaded machine has passed the end of that second.
      const late = { ...d.w.ctx, clock: manualClock(new Date(start + 1500)) };
      const { started, nextDelayMs } = await deliverTick(late, d.deps);
      assert.equal(started, 0);
      assert.ok(nextDelayMs <= 1000, `wakes in ${nextDelayMs} ms, not at the next retry`);
    } finally {
      await d.close();
    }
  });

  it('sends at most rate_limit a second to a limited endpoint, waking for its turns, while another gets its events at once', async () => {
    const d = await deliveryWorld({ delivery: { concurrency: 4, per_endpoint_concurrency: 4 } });
    const ctx = { ...d.w.ctx, clock: systemClock };
    const workers = createWorkers(ctx, silentLogger);
    try {
      const limited = await d.endpoint(`${d.receiver.url}/limited`);
      const free = await d.endpoint(`${d.receiver.url}/free`);
      await d.w.call('PATCH', `/v1/endpoints/${limited.id}`, {
        key: d.key,
        body: { rate_limit: 2 },
      });
      d.w.clock.set(new Date(Date.now() - 1000)); // queued due now, on the real clock the loop reads
      const slow = new Set<string>();
      for (let i = 0; i < 8; i++)
        for (const id of await d.queue(await d.subscription(limited.id), 1)) slow.add(id);
      for (let i = 0; i < 8; i++) await d.queue(await d.subscription(free.id), 1);
      const arrived = new Map<string, number>();
      d.receiver.respond((x) => {
        arrived.set(x.id, Date.now());
        return { status: 200 };
      });
      workers.deliverer.start();
      // 8 at 2 a second take 3 s and more; the loop's idle timer is 60 s, so only a wake at each turn gets there.
      await d.receiver.waitFor(16, 10_000);
      const times = (limitedOnes: boolean) =>
        [...arrived].filter(([id]) => slow.has(id) === limitedOnes).map(([, t]) => t);
      const slowTimes = times(true).sort((a, b) => a - b);
      const fastTimes = times(false);
      assert.equal(slowTimes.length, 8);
      assert.equal(fastTimes.length, 8);
      // The rate itself, from the receiver's clock: each delivery comes about a second after the one two before it,
      // give or take the network (arrival is not start; the first also waited for its connection, so the check starts
      // after). A third attempt let into one second would arrive within a few ms of the two before; on a machine
      // running two suites at once an arrival came 150 ms late, so the bound here is 700 ms, and the exact second is
      // checked below from the attempts' recorded starts.
      for (let i = 3; i < 8; i++)
        assert.ok(
          slowTimes[i]! - slowTimes[i - 2]! >= 700,
          `delivery ${i + 1} came ${slowTimes[i]! - slowTimes[i - 2]!} ms after delivery ${i - 1}`,
        );
      assert.ok(
        Math.max(...fastTimes) < slowTimes[2]!,
        'the endpoint without a limit got all of its events before the limited one had its second turn',
      );
      // And from our own records: the attempts at the limited endpoint started two by two, a second apart. The window
      // counts claims; an attempt notes its start once the commit that claimed it ends, which a loaded machine delays
      // by tens of ms, hence the slack.
      await workers.stop(5000); // every attempt recorded
      const starts = (await d.w.ctx.db.column(
        'SELECT started_at FROM attempts WHERE endpoint_id = ? ORDER BY started_at',
        [limited.id],
      )) as string[];
      const ms = starts.map((t) => Date.parse(t));
      assert.equal(ms.length, 8);
      for (let i = 2; i < ms.length; i++)
        assert.ok(
          ms[i]! - ms[i - 2]! >= 900,
          `attempt ${i + 1} started ${ms[i]! - ms[i - 2]!} ms after ${i - 1}`,
        );
    } finally {
      await workers.stop(1000);
      await workers.close();
      await d.close();
    }
  });
});

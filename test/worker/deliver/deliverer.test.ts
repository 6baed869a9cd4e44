// The deliverer against a real local receiver, driven tick by tick on the injected clock (no sleeping).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getEndpointById } from '../../../src/store/endpoints.ts';
import { nextEventDueAt } from '../../../src/store/events-claim.ts';
import { verifySignature } from '../../../src/webhook/sign.ts';
import { LEASE_MARGIN_MS } from '../../../src/worker/deliver/deliverer.ts';
import { deliveryWorld } from './fixtures.ts';

const SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 36000];

describe('deliverer', () => {
  it('retries on the whole schedule and is dead exactly after the last retry, with the same id and bytes each time', async () => {
    const d = await deliveryWorld({ delivery: { retry_schedule_seconds: SCHEDULE } });
    try {
      const ep = await d.endpoint();
      const [id] = await d.queue(await d.subscription(ep.id), 1);
      d.receiver.respond(() => ({ status: 500, body: 'down' }));
      assert.equal((await d.tick()).summary.attempted, 1);
      for (const seconds of SCHEDULE) {
        const e = await d.event(id!);
        assert.equal(e.status, 'failed');
        assert.equal(Date.parse(e.next_attempt_at) - d.w.clock.now().getTime(), seconds * 1000);
        d.w.clock.set(new Date(Date.parse(e.next_attempt_at) - 1));
        assert.equal(
          (await d.tick()).summary.attempted,
          0,
          'nothing is sent before the retry is due',
        );
        d.w.clock.set(e.next_attempt_at);
        assert.equal((await d.tick()).summary.attempted, 1);
      }
      const dead = await d.event(id!);
      assert.equal(dead.status, 'dead');
      assert.equal(dead.attempt_count, SCHEDULE.length + 1);
      assert.equal((await d.attempts(id!)).length, SCHEDULE.length + 1);
      assert.equal((await d.attempts(id!))[0]!.response_body, 'down');
      assert.equal(await nextEventDueAt(d.w.ctx.db), undefined);
      d.w.clock.advance(30 * 86_400_000);
      assert.equal((await d.tick()).summary.attempted, 0);
      const seen = d.receiver.deliveries;
      assert.equal(seen.length, SCHEDULE.length + 1);
      for (const delivery of seen) {
        assert.equal(delivery.id, id);
        assert.equal(delivery.body, dead.body, 'byte-identical body on every attempt');
        assert.ok(
          verifySignature(
            ep.secret,
            delivery.id,
            Number(delivery.timestamp),
            delivery.body,
            delivery.signature,
          ),
        );
      }
      assert.equal(
        new Set(seen.map((s) => s.timestamp)).size,
        seen.length,
        'each attempt is signed with its own timestamp',
      );
      assert.equal(
        (await getEndpointById(d.w.ctx.db, ep.id))!.status,
        'active',
        'the schedule (27.5 h) ends before the 5-day disable rule',
      );
    } finally {
      await d.close();
    }
  });

  const retryAfterCases: {
    name: string;
    status: number;
    header: (now: Date) => string;
    delaySeconds: number;
  }[] = [
    {
      name: '503 with Retry-After: 120 waits 120 s instead of 5 s',
      status: 503,
      header: () => '120',
      delaySeconds: 120,
    },
    {
      name: '429 with an HTTP-date 10 minutes ahead waits 600 s',
      status: 429,
      header: (now) => new Date(now.getTime() + 600_000).toUTCString(),
      delaySeconds: 600,
    },
    {
      name: '429 asking for 2 h is bounded by retry_after_max_seconds (1 h)',
      status: 429,
      header: () => '7200',
      delaySeconds: 3600,
    },
    {
      name: '503 asking for less than the schedule keeps the schedule',
      status: 503,
      header: () => '1',
      delaySeconds: 5,
    },
    {
      name: '500 with Retry-After is not a throttle and keeps the schedule',
      status: 500,
      header: () => '120',
      delaySeconds: 5,
    },
  ];
  it("honours a receiver's Retry-After on 429 and 503, within bounds", async () => {
    const d = await deliveryWorld({
      delivery: { retry_schedule_seconds: SCHEDULE, retry_after_max_seconds: 3600 },
    });
    try {
      const ep = await d.endpoint();
      for (const c of retryAfterCases) {
        const [id] = await d.queue(await d.subscription(ep.id), 1);
        const now = d.w.clock.now();
        d.receiver.respond(() => ({ status: c.status, headers: { 'retry-after': c.header(now) } }));
        assert.equal((await d.tick()).summary.attempted, 1, c.name);
        assert.equal(
          Date.parse((await d.event(id!)).next_attempt_at) - now.getTime(),
          c.delaySeconds * 1000,
          c.name,
        );
      }
    } finally {
      await d.close();
    }
  });

  it('disables the endpoint when the receiver answers 410, and re-enabling resumes what waits', async () => {
    const d = await deliveryWorld();
    try {
      const ep = await d.endpoint();
      const [first] = await d.queue(await d.subscription(ep.id), 1);
      d.receiver.respond([410]);
      await d.tick();
      const endpoint = (await d.w.call('GET', `/v1/endpoints/${ep.id}`, { key: d.key })).body;
      assert.equal(endpoint.status, 'disabled');
      assert.match(endpoint.disabled_reason, /410/);
      assert.equal((await d.event(first!)).status, 'failed');
      const [second] = await d.queue(await d.subscription(ep.id), 1);
      d.w.clock.advance(2000);
      assert.equal((await d.tick()).summary.attempted, 0, 'nothing goes to a disabled endpoint');
      assert.equal(
        await nextEventDueAt(d.w.ctx.db),
        undefined,
        'a disabled endpoint does not wake the deliverer',
      );
      const nudges = d.w.nudges.deliverer;
      const res = await d.w.call('PATCH', `/v1/endpoints/${ep.id}`, {
        key: d.key,
        body: { status: 'active' },
      });
      assert.equal(res.body.disabled_reason, null);
      assert.equal(d.w.nudges.deliverer, nudges + 1);
      assert.equal(
        (await d.event(first!)).next_attempt_at,
        d.w.clock.now().toISOString(),
        'the waiting retry is due at once',
      );
      // An endpoint not proven in this process gets one attempt at a time: the first, then the other.
      assert.equal((await d.tick()).summary.delivered, 1);
      assert.equal((await d.tick()).summary.delivered, 1);
      assert.equal((await d.event(second!)).status, 'delivered');
    } finally {
      await d.close();
    }
  });

  it('disables an endpoint whose deliveries have all failed for delivery.disable_after_seconds', async () => {
    const d = await deliveryWorld({
      delivery: { disable_after_seconds: 3600, retry_schedule_seconds: Array(12).fill(600) },
    });
    try {
      const ep = await d.endpoint();
      const sub = await d.subscription(ep.id);
      await d.queue(sub, 1);
      d.receiver.respond(() => ({ status: 500 }));
      const started = d.w.clock.now().getTime();
      for (
        let i = 0;
        i < 12 && (await getEndpointById(d.w.ctx.db, ep.id))!.status === 'active';
        i++
      ) {
        await d.tick();
        await d.toNextDue();
      }
      const row = (await getEndpointById(d.w.ctx.db, ep.id))!;
      assert.equal(row.status, 'disabled');
      assert.equal(
        row.disabled_reason,
        `every delivery failed for 1 hour (since ${new Date(started).toISOString()})`,
      );
      assert.equal(d.receiver.deliveries.length, 7, 'disabled by the failure at 3600 s, the 7th');
    } finally {
      await d.close();
    }
  });

  it('restarts the failure clock after any success', async () => {
    const d = await deliveryWorld({
      delivery: { disable_after_seconds: 3600, retry_schedule_seconds: [3000] },
    });
    try {
      const ep = await d.endpoint();
      const sub = await d.subscription(ep.id);
      await d.queue(sub, 1);
      d.receiver.respond([500, 200, 500]);
      await d.tick();
      await d.toNextDue();
      await d.tick(); // delivered at +3000 s
      assert.equal((await getEndpointById(d.w.ctx.db, ep.id))!.failing_since, null);
      d.w.clock.advance(1000_000);
      await d.queue(sub, 1);
      await d.tick(); // fails at +4000 s: more than an hour after the first failure, but a success came between
      assert.equal((await getEndpointById(d.w.ctx.db, ep.id))!.status, 'active');
    } finally {
      await d.close();
    }
  });

  it('signs with both secrets during a rotation, both verify, and only the new one after the grace period', async () => {
    const d = await deliveryWorld();
    try {
      const ep = await d.endpoint();
      const sub = await d.subscription(ep.id);
      const rotated = (
        await d.w.call('POST', `/v1/endpoints/${ep.id}/rotate-secret`, { key: d.key })
      ).body;
      assert.notEqual(rotated.secret, ep.secret);
      await d.queue(sub, 1);
      await d.tick();
      const during = d.receiver.deliveries[0]!;
      const parts = during.signature.split(' ');
      assert.equal(parts.length, 2);
      for (const secret of [rotated.secret, ep.secret]) {
        assert.ok(
          verifySignature(
            secret,
            during.id,
            Number(during.timestamp),
            during.body,
            during.signature,
          ),
        );
      }
      assert.ok(
        verifySignature(
          rotated.secret,
          during.id,
          Number(during.timestamp),
          during.body,
          parts[0]!,
        ),
        'the new secret signs first',
      );
      d.w.clock.advance(86_400_000 + 1000);
      await d.queue(sub, 1);
      await d.tick();
      const after = d.receiver.deliveries[1]!;
      assert.equal(after.signature.split(' ').length, 1);
      assert.ok(
        verifySignature(
          rotated.secret,
          after.id,
          Number(after.timestamp),
          after.body,
          after.signature,
        ),
      );
      assert.ok(
        !verifySignature(ep.secret, after.id, Number(after.timestamp), after.body, after.signature),
      );
    } finally {
      await d.close();
    }
  });

  it("keeps each subscription's events in order under a receiver that fails intermittently", async () => {
    const d = await deliveryWorld({
      delivery: { retry_schedule_seconds: [5, 60, 300, 600, 900, 1800, 3600, 3600, 3600, 3600] },
    });
    try {
      const ep = await d.endpoint();
      const subs = [
        await d.subscription(ep.id),
        await d.subscription(ep.id),
        await d.subscription(ep.id),
      ];
      for (const sub of subs) await d.queue(sub, 6);
      let seed = 7;
      const delivered = new Map<string, number[]>(); // subscription → sequences delivered, in arrival order
      d.receiver.respond((delivery) => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        const ok = seed % 5 >= 2; // about 40 % of attempts fail
        const { data } = JSON.parse(delivery.body) as {
          data: { sequence: number; subscription: { id: string } };
        };
        const done = delivered.get(data.subscription.id) ?? [];
        assert.equal(
          data.sequence,
          done.length + 1,
          'an event is only sent once every earlier one of its subscription is delivered',
        );
        if (ok) delivered.set(data.subscription.id, [...done, data.sequence]);
        return { status: ok ? 200 : 503 };
      });
      for (let i = 0; i < 200 && [...delivered.values()].flat().length < 18; i++) {
        if ((await d.tick()).summary.attempted === 0) await d.toNextDue();
      }
      for (const sub of subs) assert.deepEqual(delivered.get(sub), [1, 2, 3, 4, 5, 6]);
      assert.ok(d.receiver.deliveries.length > 18, 'some attempts failed and were retried');
    } finally {
      await d.close();
    }
  });

  it('takes over an event whose lease expired, as after a crash mid-delivery', async () => {
    const d = await deliveryWorld();
    try {
      const ep = await d.endpoint();
      const [id] = await d.queue(await d.subscription(ep.id), 1);
      const leaseMs = d.w.ctx.config.delivery.timeout_seconds * 1000 + LEASE_MARGIN_MS;
      assert.equal(await d.leaseElsewhere(10, leaseMs), 1); // the "crashed" claim
      assert.equal((await d.tick()).summary.attempted, 0);
      assert.equal(
        await d.toNextDue(),
        new Date(Date.parse('2026-01-01T00:00:00.000Z') + leaseMs).toISOString(),
        'due again when the lease ends',
      );
      assert.equal((await d.tick()).summary.delivered, 1);
      assert.equal((await d.event(id!)).status, 'delivered');
    } finally {
      await d.close();
    }
  });

  it("holds a paused subscription's events until it is resumed", async () => {
    const d = await deliveryWorld();
    try {
      const ep = await d.endpoint();
      const sub = await d.subscription(ep.id);
      await d.w.call('PATCH', `/v1/subscriptions/${sub}`, {
        key: d.key,
        body: { status: 'paused' },
      });
      await d.queue(sub, 2);
      assert.equal((await d.tick()).summary.attempted, 0);
      assert.equal(
        await nextEventDueAt(d.w.ctx.db),
        undefined,
        'a paused subscription does not wake the deliverer',
      );
      await d.w.call('PATCH', `/v1/subscriptions/${sub}`, {
        key: d.key,
        body: { status: 'active' },
      });
      assert.equal((await d.tick()).summary.delivered, 1);
      assert.equal((await d.tick()).summary.delivered, 1);
    } finally {
      await d.close();
    }
  });
});

// Resend and recover against per-subscription FIFO: a re-queued event keeps its sequence and its place in line.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { recoverEndpoint } from '../../src/actions/endpoints.ts';
import { listEventViews, resendEvent } from '../../src/actions/events.ts';
import { ApiError } from '../../src/errors.ts';
import { deliveryWorld } from '../worker/deliver/fixtures.ts';

describe('resendEvent and recoverEndpoint', () => {
  it('sends a resent event before the later events of its subscription, which wait until it is delivered', async () => {
    const d = await deliveryWorld({ delivery: { retry_schedule_seconds: [5] } });
    try {
      const ep = await d.endpoint();
      const sub = await d.subscription(ep.id);
      const [e1] = await d.queue(sub, 1);
      await d.tick();
      const [e2] = await d.queue(sub, 1);
      await resendEvent(d.w.ctx, d.applicationId, e1!);
      d.receiver.respond([503, 200, 200]);
      assert.equal((await d.tick()).summary.attempted, 1, 'e2 waits behind the resent e1');
      assert.equal((await d.event(e2!)).status, 'pending');
      await d.toNextDue();
      await d.tick();
      await d.tick();
      assert.deepEqual(
        d.receiver.deliveries.map((x) => x.id),
        [e1, e1, e1, e2],
      );
      assert.equal(
        new Set(d.receiver.deliveries.slice(0, 3).map((x) => x.body)).size,
        1,
        'byte-identical body',
      );
    } finally {
      await d.close();
    }
  });

  it('gives a resent dead event a fresh retry schedule', async () => {
    const d = await deliveryWorld({ delivery: { retry_schedule_seconds: [5] } });
    try {
      const ep = await d.endpoint();
      const [e] = await d.queue(await d.subscription(ep.id), 1);
      d.receiver.respond(() => ({ status: 500 }));
      await d.tick();
      await d.toNextDue();
      await d.tick();
      assert.equal((await d.event(e!)).status, 'dead');
      const view = await resendEvent(d.w.ctx, d.applicationId, e!);
      assert.deepEqual(
        [view.status, view.attempt_count, view.next_attempt_at],
        ['pending', 0, d.w.clock.now().toISOString()],
      );
      await d.tick();
      assert.equal(
        (await d.event(e!)).status,
        'failed',
        'one failure after a resend is not the end',
      );
      assert.equal((await d.attempts(e!)).length, 3, 'earlier attempts are kept');
    } finally {
      await d.close();
    }
  });

  it('redelivers recovered events in sequence order, a resent later one waiting behind them', async () => {
    const d = await deliveryWorld({ delivery: { retry_schedule_seconds: [5] } });
    try {
      const ep = await d.endpoint();
      const sub = await d.subscription(ep.id);
      const since = d.w.clock.now().toISOString();
      const [e1, e2] = await d.queue(sub, 2);
      d.receiver.respond((x) => ({ status: x.id === e1 ? 500 : 200 }));
      await d.tick();
      await d.toNextDue();
      await d.tick(); // e1 dead
      await d.tick(); // e2 delivered: a dead event no longer holds the line
      assert.deepEqual(
        [(await d.event(e1!)).status, (await d.event(e2!)).status],
        ['dead', 'delivered'],
      );
      assert.deepEqual(await recoverEndpoint(d.w.ctx, d.applicationId, ep.id, { since }), {
        count: 1,
      });
      await resendEvent(d.w.ctx, d.applicationId, e2!);
      const sent = d.receiver.deliveries.length;
      d.receiver.respond([503, 200, 200]);
      assert.equal((await d.tick()).summary.attempted, 1, 'only e1: e2 (sequence 2) waits for it');
      await d.toNextDue();
      await d.tick();
      await d.tick();
      assert.deepEqual(
        d.receiver.deliveries.slice(sent).map((x) => x.id),
        [e1, e1, e2],
      );
      assert.deepEqual(
        (await listEventViews(d.w.ctx, d.applicationId, { limit: 10, status: 'delivered' })).data
          .length,
        2,
      );
    } finally {
      await d.close();
    }
  });

  it('refuses to resend an event that is being delivered right now', async () => {
    const d = await deliveryWorld({ delivery: { retry_schedule_seconds: [5] } });
    try {
      const ep = await d.endpoint();
      const [e] = await d.queue(await d.subscription(ep.id), 1);
      d.receiver.respond([500]);
      await d.tick();
      await d.toNextDue();
      await d.leaseElsewhere(1, 60_000);
      await assert.rejects(
        () => resendEvent(d.w.ctx, d.applicationId, e!),
        (err: unknown) =>
          err instanceof ApiError && err.status === 409 && /right now/.test(err.message),
      );
    } finally {
      await d.close();
    }
  });

  it('does not recover test pings, nor events of another endpoint', async () => {
    const d = await deliveryWorld({ delivery: { retry_schedule_seconds: [] } });
    try {
      const ep = await d.endpoint();
      const other = await d.endpoint();
      d.receiver.respond(() => ({ status: 500 }));
      await d.w.call('POST', `/v1/endpoints/${ep.id}/test`, { key: d.key });
      await d.queue(await d.subscription(other.id), 1);
      await d.tick();
      assert.deepEqual(
        await recoverEndpoint(d.w.ctx, d.applicationId, ep.id, { since: '2000-01-01T00:00:00Z' }),
        { count: 0 },
      );
      assert.deepEqual(
        await recoverEndpoint(d.w.ctx, d.applicationId, other.id, {
          since: '2000-01-01T00:00:00Z',
        }),
        { count: 1 },
      );
    } finally {
      await d.close();
    }
  });
});

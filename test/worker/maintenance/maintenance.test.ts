// The maintenance pass: retention of delivered events and their attempts, expired Idempotency-Keys
// (the bounds on keys, holds and feeds are in retention.test.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { silentLogger } from '../../../src/log.ts';
import { listAttempts } from '../../../src/store/attempts.ts';
import { saveIdempotency } from '../../../src/store/idempotency.ts';
import {
  maintenanceTick,
  MAINTENANCE_INTERVAL_MS,
  PRUNE_BATCH,
} from '../../../src/worker/maintenance/maintenance.ts';
import { deliveryWorld } from '../deliver/fixtures.ts';

const DAY = 86_400_000;

describe('maintenance', () => {
  it('prunes delivered events and their attempts after retention_days and keeps everything not yet handled', async () => {
    const d = await deliveryWorld({
      delivery: { retention_days: 30, retry_schedule_seconds: [5] },
    });
    try {
      const ep = await d.endpoint();
      const [oldDelivered] = await d.queue(await d.subscription(ep.id), 1);
      await d.tick();
      const oldPing = (await d.w.call('POST', `/v1/endpoints/${ep.id}/test`, { key: d.key })).body
        .event as string;
      d.receiver.respond(() => ({ status: 500 }));
      const failedPing = (await d.w.call('POST', `/v1/endpoints/${ep.id}/test`, { key: d.key }))
        .body.event as string;
      const [oldDead] = await d.queue(await d.subscription(ep.id), 1);
      await d.tick();
      await d.toNextDue();
      await d.tick();
      const [oldFailed] = await d.queue(await d.subscription(ep.id), 1);
      await d.tick(); // its first attempt fails; the retry waits
      await d.w.call('PATCH', `/v1/endpoints/${ep.id}`, {
        key: d.key,
        body: { status: 'disabled' },
      });
      const [oldPending] = await d.queue(await d.subscription(ep.id), 1); // never tried: its endpoint is disabled
      d.w.clock.advance(29 * DAY);
      d.receiver.respond(() => ({ status: 200 }));
      const [recentDelivered] = await d.queue(await d.subscription((await d.endpoint()).id), 1);
      await d.tick();
      d.w.clock.advance(2 * DAY); // 31 days after the first events, 2 days after the recent one
      const attemptsBefore = (await listAttempts(d.w.ctx.db, oldDelivered!)).length;
      assert.equal(attemptsBefore, 1);

      const { summary, nextDelayMs } = await maintenanceTick(d.w.ctx, { logger: silentLogger });
      assert.equal(summary.events, 3, 'the old delivered event and both old test pings');
      assert.equal(nextDelayMs, MAINTENANCE_INTERVAL_MS);
      const exists = async (id: string) =>
        (await d.w.ctx.db.column('SELECT count(*) FROM events WHERE id = ?', [id]))[0] === 1;
      for (const id of [oldDelivered!, oldPing, failedPing])
        assert.equal(await exists(id), false, id);
      assert.equal(
        (await listAttempts(d.w.ctx.db, oldDelivered!)).length,
        0,
        'its attempts went with it',
      );
      assert.deepEqual(
        [
          (await d.event(oldDead!)).status,
          (await d.event(oldFailed!)).status,
          (await d.event(oldPending!)).status,
          (await d.event(recentDelivered!)).status,
        ],
        ['dead', 'failed', 'pending', 'delivered'],
      );
    } finally {
      await d.close();
    }
  });

  it('prunes in batches until nothing old is left', async () => {
    const d = await deliveryWorld({ delivery: { retention_days: 1 } });
    try {
      const ep = await d.endpoint();
      const n = PRUNE_BATCH * 2 + 5;
      const t = d.w.clock.now().toISOString();
      await d.w.ctx.store.write(async (db) => {
        for (let i = 0; i < n; i++) {
          const id = i.toString(16).padStart(24, '0');
          await db.run(
            `INSERT INTO events (id, application_id, endpoint_id, type, status, next_attempt_at, created_at, delivered_at, updated_at)
                                          VALUES (?, ?, ?, 'endpoint.test', 'delivered', ?, ?, ?, ?)`,
            [id, d.applicationId, ep.id, t, t, t, t],
          );
          await db.run(`INSERT INTO event_bodies (event_id, body) VALUES (?, '{}')`, [id]);
        }
      });
      d.w.clock.advance(2 * DAY);
      assert.equal((await maintenanceTick(d.w.ctx, { logger: silentLogger })).summary.events, n);
      assert.equal((await d.w.ctx.db.column('SELECT count(*) FROM events'))[0], 0);
      assert.equal(
        (await d.w.ctx.db.column('SELECT count(*) FROM event_bodies'))[0],
        0,
        'bodies go with their events',
      );
    } finally {
      await d.close();
    }
  });

  it('prunes Idempotency-Key records older than 24 hours', async () => {
    const d = await deliveryWorld();
    try {
      const at = (ms: number) => new Date(d.w.clock.now().getTime() - ms).toISOString();
      for (const [key, age] of [
        ['old', DAY + 1000],
        ['fresh', DAY - 1000],
      ] as const) {
        await saveIdempotency(d.w.ctx.db, {
          application_id: d.applicationId,
          key,
          method: 'POST',
          path: '/v1/endpoints',
          request_hash: 'h',
          status: 201,
          response: '{}',
          created_at: at(age),
        });
      }
      assert.equal(
        (await maintenanceTick(d.w.ctx, { logger: silentLogger })).summary.idempotencyKeys,
        1,
      );
      assert.deepEqual(await d.w.ctx.db.column('SELECT key FROM idempotency_keys'), ['fresh']);
    } finally {
      await d.close();
    }
  });

  it('expires any number of Idempotency-Key records, a batch at a time', async () => {
    const d = await deliveryWorld();
    try {
      const n = PRUNE_BATCH * 2 + 3;
      const old = new Date(d.w.clock.now().getTime() - DAY - 1000).toISOString();
      await d.w.ctx.store.write(async (db) => {
        for (let i = 0; i < n; i++)
          await saveIdempotency(db, {
            application_id: d.applicationId,
            key: `k${i}`,
            method: 'POST',
            path: '/v1/endpoints',
            request_hash: 'h',
            status: 201,
            response: '{}',
            created_at: old,
          });
      });
      const { summary } = await maintenanceTick(d.w.ctx, { logger: silentLogger });
      assert.equal(summary.idempotencyKeys, n);
      assert.equal((await d.w.ctx.db.column('SELECT count(*) FROM idempotency_keys'))[0], 0);
    } finally {
      await d.close();
    }
  });
});

// The deliverer as the daemon runs it: the loop started by createWorkers, slots refilled as attempts finish, and a
// graceful stop that waits (bounded) for the attempts in flight.
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { manualClock } from '../../../src/clock.ts';
import { silentLogger } from '../../../src/log.ts';
import { countEventsByStatus } from '../../../src/store/events.ts';
import { deliverTick } from '../../../src/worker/deliver/deliverer.ts';
import { createWorkers } from '../../../src/worker/index.ts';
import { deliveryWorld } from './fixtures.ts';
import { until } from '../../support/deadline.ts';

describe('deliverer loop', () => {
  it('wakes at once for a retry that falls due between its claim and the look at when to wake', async () => {
    const d = await deliveryWorld();
    try {
      const ep = await d.endpoint();
      const [id] = await d.queue(await d.subscription(ep.id), 1);
      const claimAt = d.w.clock.now().getTime();
      await d.w.ctx.db.run(
        `UPDATE events SET status = 'failed', next_attempt_at = ? WHERE id = ?`,
        [new Date(claimAt + 1).toISOString(), id],
      );
      // The claim (on the world's clock) sees the retry a millisecond away; the look at when to wake comes a
      // millisecond later, as when the loop's timer fires a millisecond before the clock reaches the time it was set for.
      const later = { ...d.w.ctx, clock: manualClock(new Date(claimAt + 1)) };
      const { started, nextDelayMs } = await deliverTick(later, d.deps);
      assert.equal(started, 0, 'not due when the claim looked');
      assert.ok(nextDelayMs <= 10, `wakes in ${nextDelayMs} ms, not after an idle minute`);
    } finally {
      await d.close();
    }
  });

  it('delivers a backlog through its slots, refilling each as an attempt finishes', async () => {
    const d = await deliveryWorld({ delivery: { concurrency: 4, per_endpoint_concurrency: 4 } });
    const workers = createWorkers(d.w.ctx, silentLogger);
    try {
      const ep = await d.endpoint();
      for (let i = 0; i < 60; i++) await d.queue(await d.subscription(ep.id), 1);
      workers.deliverer.start();
      await d.receiver.waitFor(60, 20_000);
      await workers.stop(5000);
      assert.deepEqual(await countEventsByStatus(d.w.ctx.db), {
        pending: 0,
        delivered: 60,
        failed: 0,
        dead: 0,
      });
      assert.equal(workers.delivererDeps.pool.busy, 0);
    } finally {
      await workers.stop(1000);
      await workers.close();
      await d.close();
    }
  });

  it('refills freed slots from the group commit without ever exceeding the global and per-endpoint caps', async () => {
    const d = await deliveryWorld({ delivery: { concurrency: 3, per_endpoint_concurrency: 2 } });
    let open = 0;
    const max = { total: 0, perPath: new Map<string, number>() };
    const openByPath = new Map<string, number>();
    // Each request is answered once three are open together (the global cap: its answers all go at once), else after
    // HOLD_MS: the attempts one claim starts reach the receiver several milliseconds apart, and a slot that is never
    // refilled shows as answers that wait their HOLD_MS rather than as a receiver that seems never full.
    const HOLD_MS = 100;
    const waiting = new Set<() => void>();
    const receiver = createServer((req, res) => {
      const path = req.url ?? '/';
      open += 1;
      openByPath.set(path, (openByPath.get(path) ?? 0) + 1);
      max.total = Math.max(max.total, open);
      max.perPath.set(path, Math.max(max.perPath.get(path) ?? 0, openByPath.get(path)!));
      req.resume();
      req.on('end', () => {
        const answer = () => {
          if (!waiting.delete(answer)) return;
          clearTimeout(timer);
          open -= 1;
          openByPath.set(path, openByPath.get(path)! - 1);
          res.writeHead(204).end();
        };
        const timer = setTimeout(answer, HOLD_MS);
        waiting.add(answer);
        if (waiting.size >= 3) for (const go of [...waiting]) go();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const workers = createWorkers(d.w.ctx, silentLogger);
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
      const a = await d.endpoint(`${url}/a`);
      const b = await d.endpoint(`${url}/b`);
      for (const ep of [a, a, a, b, b, b]) await d.queue(await d.subscription(ep.id), 5);
      workers.deliverer.start();
      for (let i = 0; i < 500 && (await countEventsByStatus(d.w.ctx.db)).delivered < 30; i++)
        await new Promise((r) => setTimeout(r, 10));
      await workers.stop(5000);
      assert.deepEqual(await countEventsByStatus(d.w.ctx.db), {
        pending: 0,
        delivered: 30,
        failed: 0,
        dead: 0,
      });
      assert.equal(max.total, 3, 'the global cap is reached and never exceeded');
      assert.ok(
        (max.perPath.get('/a') ?? 0) <= 2 && (max.perPath.get('/b') ?? 0) <= 2,
        JSON.stringify([...max.perPath]),
      );
      assert.deepEqual(
        [workers.delivererDeps.pool.busy, workers.delivererDeps.pool.heldKeys.size],
        [0, 0],
      );
    } finally {
      await workers.stop(1000);
      await workers.close();
      receiver.closeAllConnections();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
      await d.close();
    }
  });

  it('waits on stop for the attempts in flight and records them', async () => {
    const d = await deliveryWorld();
    const held: ServerResponse[] = [];
    let arrived: () => void = () => {};
    const twoArrived = new Promise<void>((resolve) => {
      arrived = () => {
        if (held.length === 2) resolve();
      };
    });
    const slow = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        held.push(res);
        arrived();
      });
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const workers = createWorkers(d.w.ctx, silentLogger);
    try {
      // Two endpoints: one not proven yet gets one attempt in flight.
      const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`;
      for (const path of ['/a', '/b'])
        await d.queue(await d.subscription((await d.endpoint(url + path)).id), 1);
      workers.start();
      await twoArrived;
      const stopping = workers.stop(5000);
      for (const res of held) res.writeHead(200).end('ok'); // answered only once the stop has begun
      await stopping;
      assert.equal(
        (await countEventsByStatus(d.w.ctx.db)).delivered,
        2,
        'both attempts were recorded before stop resolved',
      );
    } finally {
      await workers.close();
      slow.closeAllConnections();
      await new Promise<void>((resolve) => slow.close(() => resolve()));
      await d.close();
    }
  });

  it('gives up waiting after the stop timeout, leaving the lease to expire', async () => {
    const d = await deliveryWorld({ delivery: { timeout_seconds: 1 } });
    const hang = createServer((req) => {
      req.resume();
    });
    await new Promise<void>((resolve) => hang.listen(0, '127.0.0.1', resolve));
    const workers = createWorkers(d.w.ctx, silentLogger);
    try {
      const ep = await d.endpoint(`http://127.0.0.1:${(hang.address() as AddressInfo).port}/hook`);
      const [id] = await d.queue(await d.subscription(ep.id), 1);
      workers.deliverer.start();
      // Within the attempt's 1 s timeout, after which the slot would be free again.
      await until(() => workers.delivererDeps.pool.busy === 1, 500, 'the attempt under way', 2);
      const started = performance.now();
      await workers.stop(200);
      assert.ok(
        performance.now() - started < 900,
        'stop returned at its bound, before the 1 s attempt timeout',
      );
      assert.notEqual(
        (await d.event(id!)).lease_until,
        null,
        'still leased: taken over after the lease ends',
      );
    } finally {
      await workers.close();
      hang.closeAllConnections();
      await new Promise<void>((resolve) => hang.close(() => resolve()));
      await d.close();
    }
  });
});

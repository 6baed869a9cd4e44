// The deliverer's concurrency caps (global and per endpoint), with a receiver that holds requests until released.
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { deliverTick, drainDeliveries } from '../../../src/worker/deliver/deliverer.ts';
import { until } from '../../support/deadline.ts';
import { deliveryWorld } from './fixtures.ts';

/** A receiver that answers nothing until release(); counts what is held, in all and per path. */
async function holdingReceiver() {
  const held: { path: string; res: ServerResponse }[] = [];
  const max = { total: 0, perPath: new Map<string, number>() };
  let received = 0;
  let waiter: { n: number; resolve: () => void } | undefined;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received += 1;
      held.push({ path: req.url ?? '/', res });
      max.total = Math.max(max.total, held.length);
      const here = held.filter((h) => h.path === req.url).length;
      max.perPath.set(req.url ?? '/', Math.max(max.perPath.get(req.url ?? '/') ?? 0, here));
      if (waiter && held.length >= waiter.n) waiter.resolve();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    max,
    held,
    received: () => received,
    /** Resolves when `n` requests are held at once (bounded). */
    holding(n: number): Promise<void> {
      if (held.length >= n) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`expected ${n} held requests, have ${held.length}`)),
          5000,
        );
        waiter = {
          n,
          resolve: () => {
            clearTimeout(timer);
            waiter = undefined;
            resolve();
          },
        };
      });
    },
    release() {
      for (const h of held.splice(0)) h.res.writeHead(200).end('ok');
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

type World = Awaited<ReturnType<typeof deliveryWorld>>;
type Holding = Awaited<ReturnType<typeof holdingReceiver>>;

/** Delivers one event to each endpoint, one at a time, so each is proven (EndpointHealth) and gets its full cap. */
async function prove(d: World, receiver: Holding, endpointIds: string[]): Promise<void> {
  for (const id of endpointIds) {
    await d.queue(await d.subscription(id), 1);
    const tick = d.tick();
    await receiver.holding(1);
    receiver.release();
    assert.equal((await tick).summary.delivered, 1);
  }
}

/** Slots held per endpoint id. */
function endpointsHeld(d: World): number[] {
  return [...d.deps.pool.heldKeys].filter(([k]) => k.startsWith('endpoint:')).map(([, n]) => n);
}

describe('deliverer concurrency', () => {
  it('never has more than delivery.concurrency attempts in flight, nor more than per_endpoint_concurrency to one endpoint', async () => {
    const d = await deliveryWorld({ delivery: { concurrency: 3, per_endpoint_concurrency: 2 } });
    const receiver = await holdingReceiver();
    try {
      const a = await d.endpoint(receiver.url + '/a');
      const b = await d.endpoint(receiver.url + '/b');
      await prove(d, receiver, [a.id, b.id]);
      receiver.max.total = 0;
      receiver.max.perPath.clear();
      for (const ep of [a, b])
        for (let i = 0; i < 4; i++) await d.queue(await d.subscription(ep.id), 1);
      let rounds = 0;
      while (receiver.received() < 10 && rounds++ < 10) {
        // What is left to send, counted before the tick: its requests may reach the receiver before it resolves.
        const expected = Math.min(3, 10 - receiver.received());
        const first = await deliverTick(d.w.ctx, d.deps, { wait: false });
        assert.equal(first.started, expected);
        await receiver.holding(expected);
        const second = await deliverTick(d.w.ctx, d.deps, { wait: false });
        assert.equal(
          second.started,
          0,
          'every slot is taken while the receiver holds the requests',
        );
        assert.deepEqual(
          [d.deps.pool.busy, Math.max(...endpointsHeld(d))],
          [expected, Math.min(2, expected)],
        );
        receiver.release();
        assert.equal(await drainDeliveries(d.deps, 5000), true);
      }
      assert.equal(receiver.received(), 10);
      assert.equal(receiver.max.total, 3);
      assert.deepEqual([receiver.max.perPath.get('/a'), receiver.max.perPath.get('/b')], [2, 2]);
      assert.equal(d.deps.pool.busy, 0);
      assert.equal(d.deps.pool.heldKeys.size, 0);
    } finally {
      receiver.release();
      await receiver.close();
      await d.close();
    }
  });

  it("keeps delivering to a healthy endpoint while another endpoint's attempts hang, the hanging one holding one slot", async () => {
    const d = await deliveryWorld({ delivery: { concurrency: 8, per_endpoint_concurrency: 2 } });
    const slow = await holdingReceiver();
    try {
      const stuck = await d.endpoint(slow.url + '/slow');
      const healthy = await d.endpoint();
      for (let i = 0; i < 4; i++) await d.queue(await d.subscription(stuck.id), 1);
      const fast = await d.subscription(healthy.id);
      await d.queue(fast, 3);
      await deliverTick(d.w.ctx, d.deps, { wait: false });
      await slow.holding(1);
      await d.receiver.waitFor(1, 5000);
      for (let i = 2; i <= 3; i++) {
        await drainOne(d, slow.held.length);
        await deliverTick(d.w.ctx, d.deps, { wait: false });
        await d.receiver.waitFor(i, 5000);
      }
      assert.equal(
        d.receiver.deliveries.length,
        3,
        'the healthy endpoint got its three events in turn',
      );
      assert.equal(slow.held.length, 1, 'the hanging endpoint, never proven, holds one slot');
    } finally {
      slow.release();
      await drainDeliveries(d.deps, 5000);
      await slow.close();
      await d.close();
    }
  });

  it("records every other attempt answered at the same moment when one attempt's event was deleted in flight", async () => {
    const d = await deliveryWorld();
    const receiver = await holdingReceiver();
    try {
      const ep = await d.endpoint(receiver.url + '/hook');
      await prove(d, receiver, [ep.id]);
      const subs = [
        await d.subscription(ep.id),
        await d.subscription(ep.id),
        await d.subscription(ep.id),
      ];
      const ids: string[] = [];
      for (const s of subs) ids.push((await d.queue(s, 1))[0]!);
      const tick = deliverTick(d.w.ctx, d.deps);
      await receiver.holding(3);
      const gone = await d.w.call('DELETE', `/v1/subscriptions/${subs[1]}`, { key: d.key });
      assert.equal(gone.status, 204);
      receiver.release(); // the three answers arrive together, so their outcomes share one group commit
      const { summary } = await tick;
      assert.deepEqual(
        summary,
        { attempted: 2, delivered: 2, failed: 0, dead: 0 },
        "the deleted event's attempt is not recorded",
      );
      for (const id of [ids[0]!, ids[2]!]) {
        assert.equal((await d.event(id)).status, 'delivered');
        assert.equal((await d.attempts(id)).length, 1);
      }
      assert.equal(d.deps.pool.busy, 0);
    } finally {
      receiver.release();
      await receiver.close();
      await d.close();
    }
  });
});

/** Waits until only the `held` hanging attempts remain in flight. */
async function drainOne(d: World, held: number): Promise<void> {
  await until(() => d.deps.pool.busy <= held, 5000, 'the attempts that can finish, recorded');
  assert.equal(d.deps.pool.busy, held);
}

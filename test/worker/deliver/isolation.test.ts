// One application's slow or backlogged receivers cannot hold up another's deliveries: fair claims across applications,
// one attempt in flight for an endpoint whose attempts time out, and slow-drip receivers ended by the total deadline.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { silentLogger } from '../../../src/log.ts';
import { deliverTick, drainDeliveries } from '../../../src/worker/deliver/deliverer.ts';
import { createWorkers } from '../../../src/worker/index.ts';
import { within } from '../../support/deadline.ts';
import { startModalReceiver } from '../../support/servers.ts';
import { deliveryWorld } from './fixtures.ts';

describe('deliverer isolation', () => {
  it("gives a free slot to another application's event before the first application's earlier backlog", async () => {
    const d = await deliveryWorld({ delivery: { concurrency: 2, per_endpoint_concurrency: 4 } });
    try {
      const a = await d.endpoint();
      await d.queue(await d.subscription(a.id), 1);
      assert.equal((await d.tick()).summary.delivered, 1, "A's endpoint proven: its full cap");
      for (let i = 0; i < 6; i++) await d.queue(await d.subscription(a.id), 1);
      const other = await d.w.key('other');
      const b = await d.w.call('POST', '/v1/endpoints', {
        key: other.key,
        body: { title: 'B', url: d.receiver.url + '/b' },
      });
      const sub = await d.w.call('POST', '/v1/subscriptions', {
        key: other.key,
        body: { endpoint: b.body.id, url: 'https://feeds.example/b.xml' },
      });
      d.w.clock.advance(1000); // B's event is due a second after A's six
      const [bEvent] = await d.queueFor(other.applicationId, sub.body.id, 1);
      d.w.clock.advance(1000);
      assert.equal((await d.tick()).summary.delivered, 2);
      assert.equal(
        (await d.eventOf(other.applicationId, bEvent!)).status,
        'delivered',
        'B went in the first tick',
      );
    } finally {
      await d.close();
    }
  });

  it('keeps an endpoint whose attempts timed out at one attempt in flight until one succeeds', async () => {
    const d = await deliveryWorld({
      delivery: { timeout_seconds: 1, concurrency: 8, per_endpoint_concurrency: 4 },
    });
    const receiver = await startModalReceiver('ok');
    try {
      const ep = await d.endpoint(receiver.url + '/hook');
      await d.queue(await d.subscription(ep.id), 1);
      assert.equal((await d.tick()).summary.delivered, 1, 'proven: a 2xx in time');
      receiver.state.mode = 'hang';
      for (let i = 0; i < 4; i++) await d.queue(await d.subscription(ep.id), 1);
      const started: number[] = [];
      const round = async () => {
        started.push((await deliverTick(d.w.ctx, d.deps, { wait: false })).started);
        assert.equal(await within(drainDeliveries(d.deps, 5000), 6000, 'the attempts end'), true);
        await d.toNextDue();
      };
      await round(); // its cap: 4 attempts, which all time out
      await round(); // one retry at a time now
      await round();
      receiver.state.mode = 'ok';
      await round(); // one, which succeeds: proven again
      await round(); // the last one whose first retry is due
      await round(); // the two whose second retry is due, at once
      assert.deepEqual(started, [4, 1, 1, 1, 1, 2]);
    } finally {
      await receiver.close();
      await d.close();
    }
  });

  it("delivers another application's event at once while slow-drip receivers hold their attempts open", async () => {
    // A's two endpoints drip their answers a byte at a time; with a 30 s deadline they hold their slots for the whole
    // test. Before the pool, they took every slot (4 per endpoint) and B's event waited for them.
    const d = await deliveryWorld({
      delivery: { timeout_seconds: 30, concurrency: 4, per_endpoint_concurrency: 4 },
    });
    const drip = await startModalReceiver('drip');
    const workers = createWorkers(d.w.ctx, silentLogger);
    try {
      for (const path of ['/x', '/y']) {
        const ep = await d.endpoint(drip.url + path);
        for (let i = 0; i < 4; i++) await d.queue(await d.subscription(ep.id), 1);
      }
      workers.deliverer.start();
      await within(
        (async () => {
          while (drip.state.open < 2) await new Promise((r) => setTimeout(r, 20));
        })(),
        3000,
        "A's drips running",
      );
      const other = await d.w.key('other');
      const b = await d.w.call('POST', '/v1/endpoints', {
        key: other.key,
        body: { title: 'B', url: d.receiver.url + '/b' },
      });
      const sub = await d.w.call('POST', '/v1/subscriptions', {
        key: other.key,
        body: { endpoint: b.body.id, url: 'https://feeds.example/b.xml' },
      });
      await d.queueFor(other.applicationId, sub.body.id, 1);
      workers.deliverer.nudge(); // as the poller does after storing events
      await within(d.receiver.waitFor(1, 10_000), 3000, "B's event delivered");
      assert.equal(drip.state.open, 2, 'each never-proven dripping endpoint holds one slot');
    } finally {
      await workers.stop(200);
      await drip.close();
      await workers.close();
      await d.close();
    }
  });
});

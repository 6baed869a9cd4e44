// The work pool's throughput layer, its waiting outcomes, as its spec's callbacks see it on a real database: which
// outcomes share a transaction and when it comes, under the linger and deferral.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFER_MAX, DEFER_MS } from '../../../src/worker/pool/throughput.ts';
import { until, within } from '../../support/deadline.ts';
import { FOREVER_MS, harness, nothingRecordedAfter, own } from './fixtures.ts';

describe('work pool throughput layer, waiting outcomes', () => {
  it('commits an outcome within lingerMs while every slot stays busy', async () => {
    // A linger long enough that a loaded machine still sees a waiting before it runs out.
    const h = harness({ slots: 1, layer: { reserve: 1, lingerMs: 500 }, items: own('a', 'b') });
    try {
      h.pool.start();
      await h.pool.fill();
      h.finish('a'); // b takes the slot: no slot is idle, only the linger ends the wait
      await until(() => h.running().includes('b'), 2000, 'b started');
      assert.equal(await h.runs('a'), 0, 'a waits for its commit');
      await until(
        async () => (await h.runs('a')) === 1,
        5000,
        'a recorded once its linger ran out',
      );
      assert.deepEqual(h.running(), ['b'], 'b still runs');
      assert.deepEqual(h.batches(), [['a']]);
      h.finish('b');
      await within(h.pool.drain(5000), 6000, 'drain');
    } finally {
      await h.close();
    }
  });

  it('commits an urgent outcome at once while every slot stays busy, deferrable ones waiting with it taken along', async () => {
    // Without `urgent` a waits out a linger that never ends while b holds the only slot.
    const h = harness({
      slots: 1,
      layer: {
        reserve: 2,
        lingerMs: FOREVER_MS,
        urgent: (r) => r === 'ran b',
        deferrable: (r) => r === 'ran a',
      },
      items: own('a', 'b', 'c'),
    });
    try {
      h.pool.start();
      await h.pool.fill();
      h.finish('a'); // deferrable: waits while b works
      await until(() => h.running().includes('b'), 2000, 'b started');
      await nothingRecordedAfter(h, 20, 'a waits');
      h.finish('b'); // urgent: c takes the slot, and a and b commit without lingering
      await until(async () => (await h.runs('b')) === 1, 2000, 'b recorded while c works');
      assert.deepEqual(h.running(), ['c'], 'c still runs');
      assert.equal(await h.runs('a'), 1, 'a went with it');
      h.finish('c');
      await within(h.pool.drain(5000), 6000, 'drain');
    } finally {
      await h.close();
    }
  });

  it('keeps deferrable outcomes waiting while any slot works, refills an idle slot by a claim of its own, and commits them together once no slot works', async () => {
    const h = harness({
      slots: 2,
      layer: { reserve: 2, lingerMs: FOREVER_MS, deferrable: () => true },
      items: own('a', 'b', 'c', 'd', 'e', 'f'),
    });
    try {
      h.pool.start();
      await h.pool.fill();
      for (const [done, next] of [
        ['a', 'c'],
        ['b', 'd'],
      ] as const) {
        h.finish(done);
        await until(() => h.running().includes(next), 2000, `${next} started`);
      }
      h.finish('c'); // the queue is empty: c's slot stands idle while d still works
      await until(() => h.running().includes('e'), 2000, 'e started by a claim of its own');
      assert.deepEqual(
        h.txs.slice(1).map((t) => [t.recorded, t.claimed]),
        [[[], ['e', 'f']]],
        'a claim, and nothing recorded',
      );
      assert.equal(h.started.at(-1)!.turnOf, 1, 'e started in the turn of that claim');
      for (const id of ['d', 'e']) h.finish(id);
      await until(() => h.running().includes('f'), 2000, 'f started');
      await nothingRecordedAfter(h, 20, 'still waiting while f works');
      h.finish('f');
      await until(
        async () => (await h.recordedCount()) === 6,
        DEFER_MS / 2,
        'every outcome recorded once no slot works',
      );
      assert.deepEqual(h.batches(), [['a', 'b', 'c', 'd', 'e', 'f']], 'in one transaction');
      await within(h.pool.drain(5000), 6000, 'drain');
    } finally {
      await h.close();
    }
  });

  it('commits a non-deferrable outcome at once when a slot stands idle, and the deferred ones with it', async () => {
    const h = harness({
      slots: 2,
      layer: { reserve: 1, lingerMs: FOREVER_MS, deferrable: (result) => result !== 'ran p' },
      items: own('a', 'b', 'p', 'x'),
    });
    try {
      h.pool.start();
      await h.pool.fill();
      h.finish('a');
      await until(() => h.running().includes('p'), 2000, 'p started in the slot a freed');
      h.finish('b');
      await until(() => h.running().includes('x'), 2000, 'x started by a claim of its own');
      await nothingRecordedAfter(h, 20, 'a and b wait while p and x work');
      h.finish('p');
      await until(
        async () => (await h.recordedCount()) === 3,
        DEFER_MS / 2,
        'p committed, with a and b (not by DEFER_MS)',
      );
      assert.deepEqual(h.batches(), [['a', 'b', 'p']], 'in one transaction');
      assert.deepEqual(h.running(), ['x'], 'x still works');
      h.finish('x');
      await within(h.pool.drain(5000), 6000, 'drain');
    } finally {
      await h.close();
    }
  });

  it('holds deferred outcomes no longer than lingerMs once a non-deferrable one joins them, while every slot works', async () => {
    const h = harness({
      slots: 2,
      layer: { reserve: 2, lingerMs: 40, deferrable: (result) => result !== 'ran p' },
      items: own('a', 'p', 'x', 'y'),
    });
    try {
      h.pool.start();
      await h.pool.fill();
      h.finish('a');
      await until(() => h.running().includes('x'), 2000, 'x started in the slot a freed');
      h.finish('p');
      await until(() => h.running().includes('y'), 2000, 'y started in the slot p freed');
      await until(
        async () => (await h.recordedCount()) === 2,
        DEFER_MS / 2,
        'a and p committed by lingerMs',
      );
      assert.deepEqual(h.batches(), [['a', 'p']], 'in one transaction');
      assert.deepEqual(h.running(), ['x', 'y'], 'while every slot still works');
      for (const id of ['x', 'y']) h.finish(id);
      await within(h.pool.drain(5000), 6000, 'drain');
    } finally {
      await h.close();
    }
  });

  it('holds deferrable outcomes for DEFER_MS at most while the slots keep working', async () => {
    const h = harness({
      slots: 2,
      layer: { reserve: 1, lingerMs: FOREVER_MS, deferrable: () => true },
      items: own('a', 's', 'q'),
    });
    try {
      h.pool.start();
      await h.pool.fill();
      const since = Date.now();
      h.finish('a');
      await until(() => h.running().includes('q'), 2000, 'q started in the slot a freed');
      await nothingRecordedAfter(h, DEFER_MS / 2, 'a waits while s and q work');
      await until(async () => (await h.runs('a')) === 1, DEFER_MS * 2, 'a recorded by DEFER_MS');
      assert.ok(Date.now() - since >= DEFER_MS * 0.9, 'not before DEFER_MS');
      assert.deepEqual(h.running(), ['s', 'q'], 'while every slot still works');
      for (const id of ['s', 'q']) h.finish(id);
      await within(h.pool.drain(5000), 6000, 'drain');
    } finally {
      await h.close();
    }
  });

  it('stops deferring at DEFER_MAX outcomes: a slot that stands idle then commits them', async () => {
    const fast = Array.from({ length: DEFER_MAX }, (_, i) => `f${i}`);
    const h = harness({
      slots: DEFER_MAX + 1,
      layer: { reserve: 1, lingerMs: FOREVER_MS, deferrable: () => true },
      items: own('s', ...fast),
    });
    try {
      h.pool.start();
      await h.pool.fill();
      assert.equal(h.running().length, DEFER_MAX + 1);
      for (const id of fast.slice(0, -1)) h.finish(id); // one short of DEFER_MAX, in one turn
      await nothingRecordedAfter(h, 50, 'deferred while s and the last one work');
      h.finish(fast.at(-1)!);
      await until(
        async () => (await h.recordedCount()) === DEFER_MAX,
        DEFER_MS / 2,
        'committed at once',
      );
      assert.deepEqual(h.batches(), [fast], 'in one transaction');
      assert.deepEqual(h.running(), ['s'], 'while s still works');
      h.finish('s');
      await within(h.pool.drain(5000), 6000, 'drain');
    } finally {
      await h.close();
    }
  });
});

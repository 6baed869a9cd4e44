// The work pool's throughput layer, its reserve, as its spec's callbacks see it on a real database: what is claimed
// beyond the slots, what starts in a freed slot and in which order under which caps, what is dropped and released,
// and the reserve growing with fast items.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RESERVE_MS, RESERVE_SLOTS } from '../../../src/worker/pool/throughput.ts';
import { until, within } from '../../support/deadline.ts';
import { FOREVER_MS, harness, nothingRecordedAfter, own, sleep } from './fixtures.ts';

describe('work pool throughput layer, the reserve', () => {
  it('claims the free slots and the reserve in one transaction, starts a queued item in a freed slot before the outcome is committed, and commits the outcomes together once a slot stands idle', async () => {
    const h = harness({
      slots: 2,
      layer: { reserve: 2, lingerMs: FOREVER_MS },
      items: own('a', 'b', 'c', 'd', 'e'),
    });
    try {
      h.pool.start();
      await h.pool.fill();
      assert.deepEqual(
        h.txs.map((t) => [t.asked, t.claimed]),
        [[4, ['a', 'b', 'c', 'd']]],
        'the free slots and the reserve, in one claim',
      );
      assert.deepEqual(h.running(), ['a', 'b'], 'c and d queued');
      h.finish('a');
      await until(() => h.running().includes('c'), 2000, 'c started in the slot a freed');
      h.finish('b');
      await until(() => h.running().includes('d'), 2000, 'd started in the slot b freed');
      await nothingRecordedAfter(h, 20, 'a and b wait while every slot works');
      assert.equal(h.txs.length, 1, 'no transaction since the claim');
      h.finish('c'); // the queue is empty: c's slot stands idle, so the commit comes now and claims for it
      await until(() => h.running().includes('e'), 2000, 'e started');
      assert.deepEqual(
        h.txs.slice(1).map((t) => [t.recorded, t.claimed]),
        [[['a', 'b', 'c'], ['e']]],
        'one transaction records the three outcomes and claims for the idle slot and the reserve',
      );
      assert.equal(h.started.at(-1)!.turnOf, 1, 'e started in the turn of that commit');
      h.finish('d');
      h.finish('e');
      await within(h.pool.drain(5000), 6000, 'drain');
      assert.equal(await h.recordedCount(), 5);
    } finally {
      await h.close();
    }
  });

  it('starts the oldest queued item whose key is under its cap, passing over one whose key is at its cap', async () => {
    const h = harness({
      slots: 2,
      caps: { a: 1 },
      layer: { reserve: 3, lingerMs: FOREVER_MS },
      items: [
        ['a1', 'a'],
        ['b1', 'b'],
        ['a2', 'a'],
        ['c1', 'c'],
        ['d1', 'd'],
      ],
    });
    try {
      h.pool.start();
      await h.pool.fill();
      assert.deepEqual(h.running(), ['a1', 'b1']);
      h.finish('b1');
      await until(() => h.running().length === 2, 2000, 'a slot refilled');
      h.finish('c1');
      await until(() => h.running().length === 2, 2000, 'a slot refilled');
      assert.deepEqual(h.running(), ['a1', 'd1'], 'a2 waits for a slot of a');
      h.finish('a1');
      await until(() => h.running().includes('a2'), 2000, 'a2 started once a1 finished');
      assert.deepEqual(h.startedIds(), ['a1', 'b1', 'c1', 'd1', 'a2']);
      assert.equal(h.txs.length, 1, 'all from the queue, with no commit in between');
      for (const id of ['d1', 'a2']) h.finish(id);
      await within(h.pool.drain(5000), 6000, 'drain');
      assert.equal(h.maxByKey.get('a'), 1);
    } finally {
      await h.close();
    }
  });

  it('commits at once when a slot stands idle because what is queued is over its caps, and claims no more of that key than its cap again', async () => {
    const h = harness({
      slots: 2,
      caps: { a: 1 },
      layer: { reserve: 2, lingerMs: FOREVER_MS },
      items: [
        ['a1', 'a'],
        ['b1', 'b'],
        ['a2', 'a'],
        ['a3', 'a'],
      ],
    });
    try {
      h.pool.start();
      await h.pool.fill();
      assert.deepEqual(h.txs[0]!.claimed, ['a1', 'b1', 'a2'], 'a: its cap, and its cap again');
      assert.deepEqual(h.running(), ['a1', 'b1']);
      await sleep(RESERVE_MS * 2); // items this slow keep the reserve at the spec's
      h.finish('b1');
      await until(async () => (await h.runs('b1')) === 1, 2000, 'b1 recorded');
      assert.deepEqual(
        h.txs.slice(1).map((t) => [t.recorded, t.claimed]),
        [[['b1'], []]],
        'with a1 running and a2 queued, a3 is not claimed',
      );
      assert.deepEqual(h.running(), ['a1'], 'a2 still queued');
      h.finish('a1');
      await until(() => h.running().includes('a2'), 2000, 'a2 started');
      await until(async () => (await h.runs('a1')) === 1, 2000, 'a1 recorded');
      assert.deepEqual(
        h.txs.at(-1)!.claimed,
        ['a3'],
        'a3 claimed once a2 runs and nothing of a waits',
      );
      h.finish('a2');
      await until(() => h.running().includes('a3'), 2000, 'a3 started');
      h.finish('a3');
      await within(h.pool.drain(5000), 6000, 'drain');
      assert.equal(h.maxByKey.get('a'), 1);
    } finally {
      await h.close();
    }
  });

  it("queues a key's items up to its cap again for each slot-full of reserve, and never runs more than its cap", async () => {
    const items: [string, string][] = Array.from({ length: 24 }, (_, i) => [
      `i${i}`,
      i % 2 === 0 ? 'a' : 'abcd'[i % 4]!,
    ]);
    const h = harness({ slots: 3, caps: { a: 1 }, layer: { reserve: 3 }, items, autoMs: 2 });
    try {
      h.pool.start();
      await h.pool.fill();
      assert.deepEqual(
        h.txs.map((t) => [t.asked, t.claimed]),
        [[6, ['i0', 'i1', 'i2', 'i3', 'i5', 'i7']]],
        'one claim for the slots and the reserve, with two items of a (its cap, and its cap again)',
      );
      assert.deepEqual(h.startedIds(), ['i0', 'i1', 'i3'], 'one item of a running');
      await until(async () => (await h.recordedCount()) === 24, 5000, 'every item recorded');
      await within(h.pool.drain(1000), 2000, 'drain');
      assert.equal(h.maxByKey.get('a'), 1, 'a capped key never runs past its cap');
      assert.equal(h.inFlight.max, 3, 'the slots are all used and never exceeded');
      const runs: number[] = [];
      for (const [id] of items) runs.push(await h.runs(id));
      assert.ok(
        runs.every((n) => n === 1),
        'each item ran and was recorded once',
      );
    } finally {
      await h.close();
    }
  });

  it("grows the reserve to what the slots start within RESERVE_MS while items run fast, up to RESERVE_SLOTS slot-fulls, and keeps the spec's while they run slow", async () => {
    const asked = async (autoMs: number, n: number) => {
      const h = harness({
        slots: 2,
        layer: { reserve: 2, deferrable: () => true },
        autoMs,
        items: Array.from({ length: n }, (_, i) => [`i${i}`, `k${i}`] as [string, string]),
      });
      try {
        h.pool.start();
        await h.pool.fill();
        await until(async () => (await h.recordedCount()) === n, 10_000, 'every item recorded');
        return h.txs.flatMap((t) => (t.asked === undefined ? [] : [t.asked]));
      } finally {
        await h.close();
      }
    };
    const fast = await asked(1, 60);
    assert.ok(
      fast.some((n) => n > 2 + 2),
      `a claim for more than the free slots and the spec's reserve: ${fast.join(' ')}`,
    );
    assert.ok(
      fast.every((n) => n <= 2 + 2 * RESERVE_SLOTS),
      `never more than the slots and RESERVE_SLOTS slot-fulls: ${fast.join(' ')}`,
    );
    const slow = await asked(RESERVE_MS * 2, 8); // the slots start fewer than a slot-full within RESERVE_MS
    assert.ok(
      slow.every((n) => n <= 2 + 2),
      `the spec's reserve only: ${slow.join(' ')}`,
    );
  });

  it('on stop(), drops the queued items: never started, their leases released by the next commit', async () => {
    const h = harness({
      slots: 1,
      layer: { reserve: 2, lingerMs: FOREVER_MS },
      items: own('a', 'b', 'c'),
    });
    try {
      h.pool.start();
      await h.pool.fill();
      assert.deepEqual([h.running(), h.txs[0]!.claimed], [['a'], ['a', 'b', 'c']]);
      h.pool.stop();
      h.finish('a');
      await within(h.pool.drain(5000), 6000, 'drain');
      assert.deepEqual(h.txs.slice(1), [
        { recorded: ['a'], released: ['b', 'c'], claimed: [], asked: undefined, committed: true },
      ]);
      assert.deepEqual(h.startedIds(), ['a']);
      const rows: number[][] = [];
      for (const id of ['b', 'c']) rows.push([await h.runs(id), await h.leased(id)]);
      assert.deepEqual(
        rows,
        [
          [0, 0],
          [0, 0],
        ],
        'never run, no longer leased',
      );
    } finally {
      await h.close();
    }
  });

  it('drops a queued item that waited past queueMs and releases its lease in the commit that claims it afresh', async () => {
    const h = harness({ slots: 1, layer: { reserve: 1, queueMs: 30 }, items: own('a', 'b') });
    try {
      h.pool.start();
      await h.pool.fill();
      assert.deepEqual([h.running(), h.txs[0]!.claimed], [['a'], ['a', 'b']]);
      await sleep(60); // b has waited past queueMs
      h.finish('a');
      await until(() => h.running().includes('b'), 2000, 'b claimed again and started');
      assert.deepEqual(h.txs.slice(1), [
        { recorded: ['a'], released: ['b'], claimed: ['b'], asked: 2, committed: true },
      ]);
      assert.deepEqual(h.started.at(-1), { id: 'b', turnOf: 1 }, 'b started by that claim');
      h.finish('b');
      await within(h.pool.drain(5000), 6000, 'drain');
      assert.deepEqual([h.startedIds(), await h.runs('b')], [['a', 'b'], 1], 'b ran once');
    } finally {
      await h.close();
    }
  });
});

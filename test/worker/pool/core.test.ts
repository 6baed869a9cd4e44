// The work pool's core, as its spec's callbacks see it on a real database: what runs (slots, caps, the claim's room),
// when it commits (one transaction per turn, up to COMMIT_WEIGHT, ending with the claim that refills), start, stop,
// idle and drain.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { COMMIT_WEIGHT } from '../../../src/worker/pool/core.ts';
import { until, within } from '../../support/deadline.ts';
import { harness, own } from './fixtures.ts';

describe('work pool core', () => {
  it('keeps at most its slots in flight and each key under its cap, and records every item exactly once', async () => {
    const items: [string, string][] = Array.from({ length: 30 }, (_, i) => [
      `i${i}`,
      'abc'[i % 3]!,
    ]);
    const h = harness({ slots: 4, caps: { a: 2, b: 1 }, items, autoMs: 2 });
    try {
      h.pool.start();
      await h.pool.fill();
      await until(async () => (await h.recordedCount()) === 30, 5000, 'every item recorded');
      await within(h.pool.drain(1000), 2000, 'drain');
      assert.equal(h.inFlight.max, 4, 'the slots are all used and never exceeded');
      assert.deepEqual(
        [h.maxByKey.get('a'), h.maxByKey.get('b')],
        [2, 1],
        'each capped key reaches its cap and never passes it',
      );
      const runs: number[] = [];
      for (const [id] of items) runs.push(await h.runs(id));
      assert.ok(
        runs.every((n) => n === 1),
        'each item ran and was recorded once',
      );
      assert.deepEqual([h.pool.busy, h.pool.heldKeys.size], [0, 0]);
      assert.ok(h.idles() > 0, 'the commits that found nothing more due handed over to the loop');
    } finally {
      await h.close();
    }
  });

  it("shows a claim the keys of the items in flight and of its own picks, so an item over its key's cap waits for a slot of that key", async () => {
    const h = harness({
      slots: 3,
      caps: { a: 2 },
      items: [
        ['a1', 'a'],
        ['a2', 'a'],
        ['a3', 'a'],
        ['b1', 'b'],
      ],
    });
    try {
      h.pool.start();
      await h.pool.fill();
      assert.deepEqual(h.startedIds(), ['a1', 'a2', 'b1'], 'a3 is over the cap of a with a1, a2');
      h.finish('b1');
      await until(() => h.commits().length === 2, 2000, "b1's commit");
      assert.deepEqual(h.commits()[1]!.claimed, [], 'a slot is free, and a3 still over the cap');
      assert.equal(h.idles(), 1, 'nothing that fits was due: the loop is told');
      h.finish('a1');
      await until(() => h.running().includes('a3'), 2000, 'a3 started');
      assert.deepEqual(h.commits()[2]!.claimed, ['a3'], 'claimed by the commit of a1');
      for (const id of ['a2', 'a3']) h.finish(id);
      await within(h.pool.drain(1000), 2000, 'drain');
      assert.equal(h.maxByKey.get('a'), 2);
    } finally {
      await h.close();
    }
  });

  it('refills a slot in the turn its outcome is committed, by the claim at the end of that transaction, while another item still runs', async () => {
    const h = harness({ slots: 2, items: [['slow', 's'], ...own('f0', 'f1', 'f2', 'f3', 'f4')] });
    try {
      h.pool.start();
      await h.pool.fill();
      for (let i = 0; i < 4; i++) {
        h.finish(`f${i}`);
        await until(() => h.running().includes(`f${i + 1}`), 2000, `f${i + 1} started`);
        const commit = h.txs.length - 1;
        assert.deepEqual(
          [h.txs[commit]!.recorded, h.txs[commit]!.claimed],
          [[`f${i}`], [`f${i + 1}`]],
          `f${i} recorded and f${i + 1} claimed in one transaction`,
        );
        assert.equal(h.started.at(-1)!.turnOf, commit, 'and started in its turn: no timer');
      }
      assert.deepEqual(
        h.running(),
        ['slow', 'f4'],
        'no batch barrier: the slow item never held them',
      );
      for (const id of ['f4', 'slow']) h.finish(id);
      await within(h.pool.drain(1000), 2000, 'drain');
      assert.equal(await h.recordedCount(), 6);
    } finally {
      await h.close();
    }
  });

  it('records the outcomes finished in one turn in one transaction, which ends with the claim for the slots they free', async () => {
    const h = harness({ slots: 3, items: own('a', 'b', 'c', 'd', 'e', 'f') });
    try {
      h.pool.start();
      await h.pool.fill();
      const from = h.txs.length;
      for (const id of ['a', 'b', 'c']) h.finish(id); // in the same turn
      await until(() => h.running().length === 3, 2000, 'the next three running');
      assert.deepEqual(h.txs.slice(from), [
        {
          recorded: ['a', 'b', 'c'],
          released: [],
          claimed: ['d', 'e', 'f'],
          asked: 3,
          committed: true,
        },
      ]);
      assert.deepEqual(
        h.started.slice(-3),
        ['d', 'e', 'f'].map((id) => ({ id, turnOf: from })),
        'started in the turn of that commit',
      );
      assert.deepEqual(
        h.reported.map((r) => r.id),
        ['a', 'b', 'c'],
        'each reported once committed',
      );
    } finally {
      await h.close();
    }
  });

  it('records at most COMMIT_WEIGHT of the outcomes of one turn per transaction, at least one, the rest in the next turns in order', async () => {
    const weights: Record<string, number> = { a: 300, b: 200, c: 0, d: 600, e: 100, f: 0 };
    const h = harness({
      slots: 6,
      items: own('a', 'b', 'c', 'd', 'e', 'f'),
      weightOf: (id) => (weights[id]! * COMMIT_WEIGHT) / 500,
    });
    try {
      h.pool.start();
      await h.pool.fill();
      const from = h.txs.length;
      for (const id of ['a', 'b', 'c', 'd', 'e', 'f']) h.finish(id);
      await until(async () => (await h.recordedCount()) === 6, 2000, 'every outcome recorded');
      assert.deepEqual(
        h.commits(from).map((t) => t.recorded),
        [['a', 'b', 'c'], ['d'], ['e', 'f']],
      );
    } finally {
      await h.close();
    }
  });

  it('claims only between start() and stop(): other commits record without claiming, and hand nothing to the loop', async () => {
    const h = harness({ slots: 2, items: own('a', 'b', 'c', 'd') });
    try {
      await h.pool.fill(); // not started: the loop's first tick
      h.finish('a');
      await until(async () => (await h.runs('a')) === 1, 2000, 'a recorded');
      assert.equal(h.txs.at(-1)!.asked, undefined, 'no claim before start()');
      h.pool.start();
      h.finish('b');
      await until(() => h.running().length === 2, 2000, 'c and d claimed by the commit of b');
      h.pool.stop();
      const from = h.txs.length;
      h.finish('c');
      h.finish('d');
      await within(h.pool.drain(1000), 2000, 'drain');
      assert.deepEqual(h.txs.slice(from), [
        { recorded: ['c', 'd'], released: [], claimed: [], asked: undefined, committed: true },
      ]);
      assert.deepEqual(
        h.reported.slice(-2),
        [
          { id: 'c', after: from },
          { id: 'd', after: from },
        ],
        'reported once committed',
      );
      assert.equal(h.idles(), 0, 'a pool that is not started hands nothing to the loop');
    } finally {
      await h.close();
    }
  });

  it('calls idle() from a commit that claims while slots stay free: what it recorded may fall due before the loop looks again', async () => {
    const h = harness({ slots: 3, items: own('a', 'b') });
    try {
      h.pool.start();
      await h.pool.fill();
      h.addItems(own('c'));
      h.finish('a');
      await until(() => h.running().includes('c'), 2000, "c claimed by a's commit");
      assert.deepEqual(h.commits().at(-1)!.claimed, ['c']);
      assert.equal(h.idles(), 1, 'a slot stands free after the commit: the loop is told');
    } finally {
      await h.close();
    }
  });

  it('calls idle() from a commit that claims nothing while slots are free, never from fill()', async () => {
    const h = harness({ slots: 2, items: own('a', 'b') });
    try {
      h.pool.start();
      await h.pool.fill();
      h.finish('a');
      await until(async () => (await h.runs('a')) === 1, 2000, 'a recorded');
      assert.deepEqual([h.txs.at(-1)!.asked, h.txs.at(-1)!.claimed, h.idles()], [1, [], 1]);
      assert.equal((await h.pool.fill()).length, 0);
      assert.equal(h.idles(), 1, 'fill() leaves idle to the loop');
      h.finish('b');
      await within(h.pool.drain(1000), 2000, 'drain');
      assert.equal(h.idles(), 2);
    } finally {
      await h.close();
    }
  });

  it('drain() gives up at its timeout while an item still runs', async () => {
    const h = harness({ slots: 1, items: own('a') });
    try {
      await h.pool.fill();
      assert.equal(await within(h.pool.drain(50), 1000, 'drain'), false);
      h.finish('a');
      assert.equal(await within(h.pool.drain(1000), 2000, 'drain'), true);
    } finally {
      await h.close();
    }
  });
});

// The work pool's core when an outcome cannot be recorded, as its spec's callbacks see it on a real database: the rest
// of the batch is recorded, the item keeps its lease until the next commit releases it, and the log says it once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { until, within } from '../../support/deadline.ts';
import { recordingLogger } from '../../support/log.ts';
import { harness, own } from './fixtures.ts';

describe('work pool core, failures', () => {
  it("records every other outcome of a batch when one cannot be recorded, and releases that one's lease in the next commit", async () => {
    let throws = 0;
    const { logger, lines } = recordingLogger();
    const h = harness({
      slots: 3,
      items: own('a', 'b', 'c', 'd'),
      record: (item) => {
        // In the batch's transaction, then in its own: this run of b is never recorded.
        if (item.id === 'b' && throws++ < 2) throw new Error('disk full');
      },
      logger,
    });
    try {
      h.pool.start();
      await h.pool.fill();
      const from = h.txs.length;
      for (const id of ['a', 'b', 'c']) h.finish(id);
      await until(() => h.running().includes('d'), 2000, 'd claimed');
      const [batch, ...alone] = h.txs.slice(from, from + 4);
      assert.deepEqual(
        [batch!.committed, alone.map((t) => [t.recorded, t.committed])],
        [
          false,
          [
            [['a'], true],
            [[], false], // b's own, rolled back
            [['c'], true],
          ],
        ],
        'the batch rolled back, then each outcome alone',
      );
      assert.deepEqual([await h.runs('a'), await h.runs('b'), await h.runs('c')], [1, 0, 1]);
      const next = h.commits(from + 4)[0]!;
      assert.deepEqual(next.released, ['b'], "the next commit releases b's lease");
      await until(() => h.running().includes('b'), 2000, 'b claimed again');
      for (const id of ['b', 'd']) h.finish(id);
      await within(h.pool.drain(1000), 2000, 'drain');
      assert.deepEqual(
        h.startedIds().filter((id) => id === 'b'),
        ['b', 'b'],
      );
      assert.equal(await h.runs('b'), 1, 'recorded once, by its second run');
      assert.deepEqual(
        lines.map((l) => `${l.level} ${l.msg}`),
        ['error test: unable to record outcomes', 'info test: recording outcomes again'],
      );
    } finally {
      await h.close();
    }
  });

  it('logs a run of failed records once per error message, and its end once', async () => {
    let locked = false;
    const refuse = () => {
      if (locked) throw new Error('database is locked');
    };
    const { logger, lines } = recordingLogger();
    const items: [string, string][] = Array.from({ length: 6 }, (_, i) => [`i${i}`, `k${i}`]);
    const h = harness({ slots: 3, items, record: refuse, beforeClaim: refuse, logger });
    try {
      h.pool.start();
      await h.pool.fill();
      await until(() => h.running().length === 3, 2000, 'three running');
      locked = true;
      for (const id of ['i0', 'i1', 'i2']) h.finish(id);
      await until(() => h.idles() > 0, 2000, 'the loop handed the retry');
      assert.equal(await h.recordedCount(), 0);
      assert.equal(h.pool.busy, 0, 'the slots are free while nothing can be written');
      locked = false;
      await h.pool.fill(); // the loop's next tick
      await until(() => h.running().length === 3, 2000, 'claimed again');
      for (const id of h.running()) h.finish(id);
      await until(() => h.running().length === 3, 2000, 'the last three claimed');
      for (const id of h.running()) h.finish(id);
      await until(
        async () => (await h.recordedCount()) === 6,
        2000,
        'every item recorded in the end',
      );
      assert.deepEqual(
        lines.map((l) => `${l.level} ${l.msg}`),
        ['error test: unable to record outcomes', 'info test: recording outcomes again'],
      );
      assert.equal(lines[1]!.fields.failures, 3);
    } finally {
      await h.close();
    }
  });

  it('frees the slot of an item whose run rejects, settles it with nothing, and releases its lease in the transaction that refills the slot', async () => {
    const h = harness({ slots: 1, items: own('w1', 'w2') });
    try {
      h.pool.start();
      const [first] = await h.pool.fill();
      h.fail('w1');
      assert.equal(await within(first!, 2000, 'the failed item settles'), undefined);
      await until(() => h.running().length === 1, 2000, 'its slot refilled');
      assert.deepEqual(
        [h.txs.at(-1)!.released, h.txs.at(-1)!.claimed],
        [['w1'], ['w1']],
        'released, and due again at once',
      );
      h.finish('w1');
      await until(() => h.running().includes('w2'), 2000, 'w2 started');
      h.finish('w2');
      await within(h.pool.drain(1000), 2000, 'drain');
      assert.deepEqual([await h.runs('w1'), await h.runs('w2'), h.pool.busy], [1, 1, 0]);
    } finally {
      await h.close();
    }
  });
});

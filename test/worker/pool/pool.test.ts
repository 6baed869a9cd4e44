// The work pool alone, on a table of its own in a real database: slots and caps, refills without a batch barrier, the
// group commit, outcomes that cannot be recorded, stop and drain.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openDatabase, type Db } from '../../../src/db/open.ts';
import { silentLogger, type Logger } from '../../../src/log.ts';
import { Pool } from '../../../src/worker/pool/core.ts';
import {
  DEFER_MS,
  RESERVE_MS,
  RESERVE_SLOTS,
  throughput,
} from '../../../src/worker/pool/throughput.ts';
import { until, within } from '../../support/deadline.ts';
import { recordingLogger } from '../../support/log.ts';

type Item = { id: string; key: string };

/** A pool over a `work` table: items are claimed by due order under the caps of their key (`k:<key>`); each one's run
 *  waits for `finish(id)` unless `autoMs` is set; `events` lists what happened in order. */
function harness(opts: {
  slots: number;
  caps?: Record<string, number>;
  items: [id: string, key: string][];
  autoMs?: number;
  record?: (item: Item) => void;
  beforeClaim?: () => void;
  logger?: Logger;
  reserve?: number;
  lingerMs?: number;
  queueMs?: number;
  deferrable?: (result: string) => boolean;
}) {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-pool-'));
  const db: Db = openDatabase(join(dir, 'feedsub.db'));
  db.exec(
    'CREATE TABLE work (id TEXT PRIMARY KEY, k TEXT, due INTEGER, leased INTEGER NOT NULL DEFAULT 0, runs INTEGER NOT NULL DEFAULT 0)',
  );
  const insert = db.prepare('INSERT INTO work (id, k, due) VALUES (?, ?, ?)');
  opts.items.forEach(([id, key], i) => insert.run(id, key, i));
  const events: string[] = [];
  const gates = new Map<string, () => void>();
  const inFlight = {
    total: 0,
    max: 0,
    byKey: new Map<string, number>(),
    maxByKey: new Map<string, number>(),
  };
  let idles = 0;
  const pool = new Pool<Item, string, string>(
    db,
    {
      name: 'test',
      slots: opts.slots,
      layer:
        opts.reserve === undefined
          ? undefined
          : throughput({
              reserve: opts.reserve,
              lingerMs: opts.lingerMs,
              queueMs: opts.queueMs,
              deferrable: opts.deferrable,
            }),
      keysOf: (item) => [`k:${item.key}`],
      capOf: (key) => opts.caps?.[key.slice(2)] ?? Infinity,
      claim(free, room) {
        opts.beforeClaim?.();
        events.push(`claim ${free}`);
        const picked: Item[] = [];
        const due = db
          .prepare('SELECT id, k AS key FROM work WHERE leased = 0 AND runs = 0 ORDER BY due')
          .all() as Item[];
        for (const item of due) {
          if (picked.length >= free) break;
          if (!room.fits([`k:${item.key}`])) continue;
          room.take([`k:${item.key}`]);
          picked.push(item);
        }
        const lease = db.prepare('UPDATE work SET leased = 1 WHERE id = ?');
        for (const item of picked) lease.run(item.id);
        return picked;
      },
      async run(item) {
        inFlight.total++;
        inFlight.max = Math.max(inFlight.max, inFlight.total);
        const here = (inFlight.byKey.get(item.key) ?? 0) + 1;
        inFlight.byKey.set(item.key, here);
        inFlight.maxByKey.set(item.key, Math.max(inFlight.maxByKey.get(item.key) ?? 0, here));
        await new Promise<void>((resolve) => {
          if (opts.autoMs !== undefined) setTimeout(resolve, opts.autoMs);
          else gates.set(item.id, resolve);
        });
        inFlight.total--;
        inFlight.byKey.set(item.key, inFlight.byKey.get(item.key)! - 1);
        return `ran ${item.id}`;
      },
      record(item, result) {
        assert.ok(db.inTransaction, 'recorded inside a transaction');
        opts.record?.(item);
        db.prepare('UPDATE work SET leased = 0, runs = runs + 1 WHERE id = ?').run(item.id);
        events.push(`record ${item.id}`);
        return result;
      },
      recorded: (item) => void events.push(`recorded ${item.id}`),
      release(items) {
        events.push(`release ${items.map((i) => i.id).join(',')}`);
        for (const i of items) db.prepare('UPDATE work SET leased = 0 WHERE id = ?').run(i.id);
      },
      idle: () => void idles++,
    },
    opts.logger ?? silentLogger,
  );
  return {
    db,
    pool,
    events,
    inFlight,
    idles: () => idles,
    /** Lets the item's run finish (it must be running). */
    finish(id: string) {
      const gate = gates.get(id);
      assert.ok(gate, `${id} is running`);
      gates.delete(id);
      gate();
    },
    running: () => [...gates.keys()],
    /** Claimed items not started: leased, not in flight (before any outcome is recorded). */
    queued: () =>
      (db.prepare('SELECT count(*) FROM work WHERE leased = 1').pluck().get() as number) -
      inFlight.total,
    leased: (id: string) =>
      db.prepare('SELECT leased FROM work WHERE id = ?').pluck().get(id) as number,
    runs: (id: string) =>
      db.prepare('SELECT runs FROM work WHERE id = ?').pluck().get(id) as number,
    recordedCount: () =>
      db.prepare('SELECT count(*) FROM work WHERE runs > 0').pluck().get() as number,
    close() {
      pool.stop();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe('work pool', () => {
  it('keeps at most its slots in flight and each key under its cap, and records every item exactly once', async () => {
    const items: [string, string][] = Array.from({ length: 30 }, (_, i) => [
      `i${i}`,
      'abc'[i % 3]!,
    ]);
    const h = harness({ slots: 4, caps: { a: 2, b: 1 }, items, autoMs: 2 });
    try {
      h.pool.start();
      h.pool.fill();
      await until(() => h.recordedCount() === 30, 5000, 'every item recorded');
      await within(h.pool.drain(1000), 2000, 'drain');
      assert.equal(h.inFlight.max, 4, 'the slots are all used and never exceeded');
      assert.deepEqual(
        [h.inFlight.maxByKey.get('a'), h.inFlight.maxByKey.get('b')],
        [2, 1],
        'each capped key reaches its cap and never passes it',
      );
      assert.ok(
        items.every(([id]) => h.runs(id) === 1),
        'each item ran and was recorded once',
      );
      assert.deepEqual([h.pool.busy, h.pool.heldKeys.size], [0, 0]);
      assert.ok(h.idles() > 0, 'the commits that found nothing more due handed over to the loop');
    } finally {
      h.close();
    }
  });

  it('refills a slot as soon as its item is recorded while another item still runs: no batch barrier', async () => {
    const h = harness({
      slots: 2,
      items: [
        ['slow', 's'],
        ...Array.from({ length: 5 }, (_, i) => [`f${i}`, 'f'] as [string, string]),
      ],
    });
    try {
      h.pool.start();
      h.pool.fill();
      for (let i = 0; i < 5; i++) {
        await until(() => h.running().includes(`f${i}`), 2000, `f${i} started`);
        h.finish(`f${i}`);
      }
      await until(() => h.recordedCount() === 5, 2000, 'the five fast items recorded');
      assert.equal(h.runs('slow'), 0, 'the slow item still runs');
      assert.deepEqual(h.running(), ['slow']);
      h.finish('slow');
      await within(h.pool.drain(1000), 2000, 'drain');
      assert.equal(h.runs('slow'), 1);
    } finally {
      h.close();
    }
  });

  it('records the outcomes finished in one turn in one transaction, which claims for the slots they free', async () => {
    const h = harness({
      slots: 3,
      items: ['a', 'b', 'c', 'd', 'e', 'f'].map((id) => [id, id] as [string, string]),
    });
    try {
      h.pool.start();
      h.pool.fill();
      await until(() => h.running().length === 3, 2000, 'three running');
      h.events.length = 0;
      for (const id of ['a', 'b', 'c']) h.finish(id); // in the same turn
      await until(
        () => h.running().length === 3 && h.recordedCount() === 3,
        2000,
        'the next three running',
      );
      assert.deepEqual(h.events.slice(0, 3), ['record a', 'record b', 'record c']);
      assert.match(h.events[3]!, /^claim \d+$/, 'and claimed in the same transaction');
      assert.deepEqual(h.running().sort(), ['d', 'e', 'f']);
    } finally {
      h.close();
    }
  });

  it("records every other outcome of a batch when one cannot be recorded, and releases that one's lease in the next commit", async () => {
    let throws = 0;
    const { logger, lines } = recordingLogger();
    const h = harness({
      slots: 3,
      items: ['a', 'b', 'c', 'd'].map((id) => [id, id] as [string, string]),
      record: (item) => {
        // In the batch's transaction, then in its own: the first claim of b is never recorded.
        if (item.id === 'b' && throws++ < 2) throw new Error('disk full');
      },
      logger,
    });
    try {
      h.pool.start();
      h.pool.fill();
      await until(() => h.running().length === 3, 2000, 'three running');
      for (const id of ['a', 'b', 'c']) h.finish(id);
      await until(() => h.running().includes('d'), 2000, 'd claimed');
      assert.deepEqual([h.runs('a'), h.runs('b'), h.runs('c')], [1, 0, 1]);
      h.finish('d');
      await until(
        () => h.running().includes('b'),
        2000,
        'b claimed again once its lease is released',
      );
      assert.ok(h.events.includes('release b'));
      h.finish('b');
      await within(h.pool.drain(1000), 2000, 'drain');
      assert.equal(h.runs('b'), 1);
      assert.deepEqual(
        lines.map((l) => `${l.level} ${l.msg}`),
        ['error test: unable to record outcomes', 'info test: recording outcomes again'],
      );
    } finally {
      h.close();
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
      h.pool.fill();
      await until(() => h.running().length === 3, 2000, 'three running');
      locked = true;
      for (const id of ['i0', 'i1', 'i2']) h.finish(id);
      await until(() => h.idles() > 0, 2000, 'the loop handed the retry');
      assert.equal(h.recordedCount(), 0);
      assert.equal(h.pool.busy, 0, 'the slots are free while nothing can be written');
      locked = false;
      h.pool.fill(); // the loop's next tick
      await until(() => h.running().length === 3, 2000, 'claimed again');
      for (const id of h.running()) h.finish(id);
      await until(() => h.running().length === 3, 2000, 'the last three claimed');
      for (const id of h.running()) h.finish(id);
      await until(() => h.recordedCount() === 6, 2000, 'every item recorded in the end');
      assert.deepEqual(
        lines.map((l) => `${l.level} ${l.msg}`),
        ['error test: unable to record outcomes', 'info test: recording outcomes again'],
      );
      assert.equal(lines[1]!.fields.failures, 3);
    } finally {
      h.close();
    }
  });

  it('frees the slot of an item whose work rejects and releases its lease in the next commit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'feedsub-pool-'));
    const db = openDatabase(join(dir, 'feedsub.db'));
    const released: string[] = [];
    let claims = 0;
    const pool = new Pool<string, string, string>(
      db,
      {
        name: 'test',
        slots: 1,
        keysOf: () => [],
        capOf: () => Infinity,
        claim: () => (++claims <= 2 ? [`w${claims}`] : []),
        run: async (item) => {
          if (item === 'w1') throw new Error('boom');
          return item;
        },
        record: (item) => item,
        recorded: () => {},
        release: (items) => void released.push(...items),
        idle: () => {},
      },
      silentLogger,
    );
    try {
      pool.start();
      const [first] = pool.fill();
      assert.equal(await within(first!, 2000, 'the failed item settles'), undefined);
      await until(() => claims >= 2, 2000, 'its slot refilled');
      await within(pool.drain(1000), 2000, 'drain');
      assert.deepEqual(released, ['w1']);
      assert.equal(pool.busy, 0);
    } finally {
      pool.stop();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('claims nothing on a commit after stop(), and calls idle() when slots are free and nothing is due', async () => {
    const h = harness({
      slots: 2,
      items: [
        ['a', 'a'],
        ['b', 'b'],
        ['c', 'c'],
      ],
    });
    try {
      h.pool.start();
      h.pool.fill();
      await until(() => h.running().length === 2, 2000, 'two running');
      h.finish('a');
      await until(() => h.running().includes('c'), 2000, 'c claimed by the commit of a');
      h.pool.stop();
      h.events.length = 0;
      h.finish('b');
      h.finish('c');
      await within(h.pool.drain(1000), 2000, 'drain');
      assert.deepEqual(h.events, ['record b', 'record c', 'recorded b', 'recorded c']);
      assert.equal(h.idles(), 0, 'a stopped pool hands nothing to the loop');
      h.pool.start();
      assert.equal(h.pool.fill().length, 0);
      assert.equal(h.idles(), 0, 'fill() itself leaves idle to the loop');
    } finally {
      h.close();
    }
  });

  it("with a reserve, starts a queued item in a freed slot before the finished item's outcome is committed, and commits the outcomes together once a slot stands idle", async () => {
    const h = harness({
      slots: 2,
      reserve: 2,
      lingerMs: 60_000, // longer than the test: only an idle slot ends the wait
      items: ['a', 'b', 'c', 'd', 'e'].map((id) => [id, id] as [string, string]),
    });
    try {
      h.pool.start();
      h.pool.fill();
      assert.deepEqual(h.events, ['claim 4'], 'the free slots and the reserve, in one claim');
      assert.deepEqual([h.running(), h.queued()], [['a', 'b'], 2]);
      h.events.length = 0;
      h.finish('a');
      await until(() => h.running().includes('c'), 2000, 'c started in the slot a freed');
      h.finish('b');
      await until(() => h.running().includes('d'), 2000, 'd started in the slot b freed');
      assert.deepEqual(h.events, [], 'nothing recorded or claimed while every slot works');
      assert.deepEqual([h.runs('a'), h.runs('b')], [0, 0]);
      h.finish('c'); // the queue is empty: c's slot stands idle, so the commit comes now and claims for it
      await until(() => h.recordedCount() === 3, 2000, 'a, b and c recorded');
      assert.deepEqual(h.events.slice(0, 3), ['record a', 'record b', 'record c']);
      assert.match(h.events[3]!, /^claim \d+$/, 'and claimed in the same transaction');
      await until(() => h.running().includes('e'), 2000, 'e started');
      h.finish('d');
      h.finish('e');
      await within(h.pool.drain(5000), 6000, 'drain');
      assert.equal(h.recordedCount(), 5);
    } finally {
      h.close();
    }
  });

  it('with a reserve, commits an outcome within lingerMs while every slot stays busy', async () => {
    const h = harness({
      slots: 1,
      reserve: 1,
      lingerMs: 40,
      items: [
        ['a', 'a'],
        ['b', 'b'],
      ],
    });
    try {
      h.pool.start();
      h.pool.fill();
      h.finish('a'); // b takes the slot: no slot is idle, only the linger ends the wait
      await until(() => h.running().includes('b'), 2000, 'b started');
      assert.equal(h.runs('a'), 0, 'a waits for its commit');
      await until(() => h.runs('a') === 1, 2000, 'a recorded once its linger ran out');
      assert.deepEqual(h.running(), ['b'], 'b still runs');
      h.finish('b');
      await within(h.pool.drain(5000), 6000, 'drain');
    } finally {
      h.close();
    }
  });

  it('with a reserve, keeps deferrable outcomes waiting while any slot works, refills an idle slot by a claim of its own, and commits them together once no slot works', async () => {
    const h = harness({
      slots: 2,
      reserve: 2,
      lingerMs: 60_000, // longer than the test; each wait below is shorter than DEFER_MS: only the slots falling idle end it
      deferrable: () => true,
      items: ['a', 'b', 'c', 'd', 'e', 'f'].map((id) => [id, id] as [string, string]),
    });
    try {
      h.pool.start();
      h.pool.fill();
      h.events.length = 0;
      for (const [done, next] of [
        ['a', 'c'],
        ['b', 'd'],
      ] as const) {
        h.finish(done);
        await until(() => h.running().includes(next), 2000, `${next} started`);
      }
      h.finish('c'); // the queue is empty: c's slot stands idle while d still works
      await until(() => h.running().includes('e'), 2000, 'e started by a claim of its own');
      assert.equal(h.events.length, 1, 'one event');
      assert.match(h.events[0]!, /^claim \d+$/, 'a claim, and nothing recorded');
      assert.equal(h.recordedCount(), 0, 'a, b and c wait for their commit');
      for (const id of ['d', 'e']) h.finish(id);
      await until(() => h.running().includes('f'), 2000, 'f started');
      assert.equal(h.recordedCount(), 0, 'still waiting while f works');
      h.finish('f');
      await until(
        () => h.recordedCount() === 6,
        DEFER_MS / 2,
        'every outcome recorded once no slot works',
      );
      const records = h.events.filter((e) => e.startsWith('record '));
      assert.deepEqual(
        h.events.slice(h.events.indexOf(records[0]!), h.events.indexOf(records[0]!) + 6),
        ['a', 'b', 'c', 'd', 'e', 'f'].map((id) => `record ${id}`),
        'in one transaction',
      );
      await within(h.pool.drain(5000), 6000, 'drain');
    } finally {
      h.close();
    }
  });

  it('with a reserve, commits a non-deferrable outcome at once when a slot stands idle, and the deferred ones with it', async () => {
    const h = harness({
      slots: 2,
      reserve: 1,
      lingerMs: 60_000,
      deferrable: (result) => result !== 'ran p',
      items: ['a', 'b', 'p', 'x'].map((id) => [id, id] as [string, string]),
    });
    try {
      h.pool.start();
      h.pool.fill();
      h.finish('a');
      await until(() => h.running().includes('p'), 2000, 'p started in the slot a freed');
      h.finish('b');
      await until(() => h.running().includes('x'), 2000, 'x started by a claim of its own');
      assert.equal(h.recordedCount(), 0, 'a and b wait while p and x work');
      h.finish('p');
      await until(
        () => h.recordedCount() === 3,
        DEFER_MS / 2,
        'p committed, with a and b (not by DEFER_MS)',
      );
      assert.deepEqual(h.running(), ['x'], 'x still works');
      h.finish('x');
      await within(h.pool.drain(5000), 6000, 'drain');
    } finally {
      h.close();
    }
  });

  it('with a reserve, grows it to what the slots start within RESERVE_MS while items run fast, up to RESERVE_SLOTS slot-fulls, and keeps it while they run slow', async () => {
    const claims = async (autoMs: number, n: number) => {
      const h = harness({
        slots: 2,
        reserve: 2,
        autoMs,
        deferrable: () => true,
        items: Array.from({ length: n }, (_, i) => [`i${i}`, `k${i}`] as [string, string]),
      });
      try {
        h.pool.start();
        h.pool.fill();
        await until(() => h.recordedCount() === n, 10_000, 'every item recorded');
        return h.events.filter((e) => e.startsWith('claim ')).map((e) => Number(e.slice(6)));
      } finally {
        h.close();
      }
    };
    const fast = await claims(1, 60);
    assert.ok(
      fast.some((n) => n > 2 + 2),
      `a claim for more than the free slots and the spec's reserve: ${fast.join(' ')}`,
    );
    assert.ok(
      fast.every((n) => n <= 2 + 2 * RESERVE_SLOTS),
      `never more than the slots and RESERVE_SLOTS slot-fulls: ${fast.join(' ')}`,
    );
    const slow = await claims(RESERVE_MS * 2, 8); // the slots start fewer than a slot-full within RESERVE_MS
    assert.ok(
      slow.every((n) => n <= 2 + 2),
      `the spec's reserve only: ${slow.join(' ')}`,
    );
  });

  it("with a reserve, queues a key's items up to its cap again but never runs more than its cap", async () => {
    const items: [string, string][] = Array.from({ length: 24 }, (_, i) => [
      `i${i}`,
      i % 2 === 0 ? 'a' : 'abcd'[i % 4]!,
    ]);
    const h = harness({ slots: 3, reserve: 3, caps: { a: 1 }, items, autoMs: 2 });
    try {
      h.pool.start();
      h.pool.fill();
      assert.equal(h.queued(), 3, 'the reserve is full');
      assert.ok(
        h.events[0] === 'claim 6' && h.running().length === 0,
        'one claim for the slots and the reserve',
      );
      await until(() => h.recordedCount() === 24, 5000, 'every item recorded');
      await within(h.pool.drain(1000), 2000, 'drain');
      assert.equal(h.inFlight.maxByKey.get('a'), 1, 'a capped key never runs past its cap');
      assert.equal(h.inFlight.max, 3, 'the slots are all used and never exceeded');
      assert.ok(
        items.every(([id]) => h.runs(id) === 1),
        'each item ran and was recorded once',
      );
    } finally {
      h.close();
    }
  });

  it('with a reserve, stop() drops the queued items and the next commit releases their leases', async () => {
    const h = harness({
      slots: 1,
      reserve: 2,
      lingerMs: 60_000,
      items: ['a', 'b', 'c'].map((id) => [id, id] as [string, string]),
    });
    try {
      h.pool.start();
      h.pool.fill();
      assert.deepEqual([h.running(), h.queued()], [['a'], 2]);
      h.pool.stop();
      h.finish('a');
      await within(h.pool.drain(5000), 6000, 'drain');
      assert.ok(h.events.includes('release b,c'), `released: ${h.events.join('; ')}`);
      assert.deepEqual(
        ['b', 'c'].map((id) => [h.runs(id), h.leased(id)]),
        [
          [0, 0],
          [0, 0],
        ],
        'never run, no longer leased',
      );
    } finally {
      h.close();
    }
  });

  it('with a reserve, drops a queued item that waited past queueMs and releases its lease before the next claim', async () => {
    const h = harness({
      slots: 1,
      reserve: 1,
      queueMs: 30,
      items: [
        ['a', 'a'],
        ['b', 'b'],
      ],
    });
    try {
      h.pool.start();
      h.pool.fill();
      assert.deepEqual([h.running(), h.queued()], [['a'], 1]);
      await new Promise((resolve) => setTimeout(resolve, 60)); // b has waited past queueMs
      h.events.length = 0;
      h.finish('a');
      await until(() => h.running().includes('b'), 2000, 'b claimed again and started');
      assert.deepEqual(h.events.slice(0, 3), ['record a', 'release b', 'claim 2']);
      h.finish('b');
      await within(h.pool.drain(5000), 6000, 'drain');
      assert.equal(h.runs('b'), 1, 'b ran once');
    } finally {
      h.close();
    }
  });

  it('drain() gives up at its timeout while an item still runs', async () => {
    const h = harness({ slots: 1, items: [['a', 'a']] });
    try {
      h.pool.fill();
      assert.equal(await within(h.pool.drain(50), 1000, 'drain'), false);
      h.finish('a');
      assert.equal(await within(h.pool.drain(1000), 2000, 'drain'), true);
    } finally {
      h.close();
    }
  });
});

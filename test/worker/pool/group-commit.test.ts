// Group commit beside another process: the write lock is taken before the first read, so a commit by another
// connection in between cannot make the outcome's transaction fail with SQLITE_BUSY.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openDatabase } from '../../../src/db/open.ts';
import { SqliteEngine } from '../../../src/db/sqlite-engine.ts';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { commitTogether, TurnBatch } from '../../../src/worker/pool/group-commit.ts';
import { until } from '../../support/deadline.ts';

describe('group commit', () => {
  it('records an outcome that reads before it writes while another connection commits in between', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'feedsub-test-'));
    const ours = new SqliteEngine(openDatabase(join(dir, 'feedsub.db')));
    const theirs = openDatabase(join(dir, 'feedsub.db')); // as `poll --once` beside `serve`
    theirs.pragma('busy_timeout = 0');
    try {
      await ours.exec('CREATE TABLE t (n INTEGER)');
      let theirsCommitted = false;
      const { results, tail } = await commitTogether(
        ours,
        [
          async (db) => {
            const [before] = await db.column<number>('SELECT count(*) FROM t');
            try {
              theirs.prepare('INSERT INTO t VALUES (1)').run(); // their own transaction, committed at once
              theirsCommitted = true;
            } catch {
              // the write lock is ours: they wait for it (here, with no busy timeout, they give up)
            }
            await db.run('INSERT INTO t VALUES (?)', [before! + 100]);
            return before;
          },
        ],
        async () => 'claimed',
      );
      assert.deepEqual(results, [{ ok: true, value: 0 }]);
      assert.deepEqual(tail, { ok: true, value: 'claimed' });
      assert.equal(theirsCommitted, false, 'the other connection could not write in between');
    } finally {
      theirs.close();
      await ours.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("hands a turn's items over at most a budget of their weight at a time, at least one, in order, the rest in the next turns", async () => {
    const flushed: number[][] = [];
    const batch = new TurnBatch<number>(
      (items) => flushed.push(items),
      (n) => n,
      500,
    );
    for (const n of [300, 300, 0, 600, 100]) batch.add(n);
    assert.deepEqual(flushed, [], 'nothing before the next turn');
    await nextTurn();
    assert.deepEqual(flushed, [[300]], 'one turn, one budget');
    batch.add(50); // added meanwhile: after what is left
    for (let i = 0; i < 4; i++) await nextTurn();
    assert.deepEqual(flushed, [[300], [300, 0], [600], [100, 50]]);
  });

  it('with a linger, keeps collecting while it holds, and flushes on the turn after an add once it no longer does', async () => {
    const flushed: number[][] = [];
    let hold = true;
    const batch = new TurnBatch<number>(
      (items) => flushed.push(items),
      () => 0,
      Infinity,
      { hold: () => hold, maxMs: () => 60_000 },
    );
    batch.add(1);
    for (let i = 0; i < 3; i++) await nextTurn();
    batch.add(2);
    for (let i = 0; i < 3; i++) await nextTurn();
    assert.deepEqual(flushed, [], 'held');
    hold = false;
    batch.add(3);
    await nextTurn();
    assert.deepEqual(flushed, [[1, 2, 3]]);
    hold = true;
    batch.add(4);
    await nextTurn();
    hold = false;
    batch.poke(); // no add: the owner says its hold changed
    await nextTurn();
    assert.deepEqual(flushed, [[1, 2, 3], [4]]);
  });

  it('with a linger, flushes a held batch by the shorter maxMs an item joining it brings', async () => {
    const flushed: number[][] = [];
    const batch = new TurnBatch<number>(
      (items) => flushed.push(items),
      () => 0,
      Infinity,
      { hold: () => true, maxMs: (items) => (items.includes(0) ? 400 : 60_000) },
    );
    batch.add(1);
    for (let i = 0; i < 3; i++) await nextTurn();
    batch.add(0); // may wait 400 ms only: the timer set for 60 s follows
    for (let i = 0; i < 3; i++) await nextTurn();
    assert.deepEqual(flushed, [], 'held');
    await until(() => flushed.length === 1, 2000, 'flushed by the shorter linger');
    assert.deepEqual(flushed, [[1, 0]]);
  });

  it('with a linger, flushes a held batch once its oldest item waited maxMs, and at once (the rest on the next turn) when over its budget', async () => {
    const flushed: number[][] = [];
    const batch = new TurnBatch<number>(
      (items) => flushed.push(items),
      (n) => n,
      100,
      { hold: () => true, maxMs: () => 400 },
    );
    batch.add(1);
    for (let i = 0; i < 3; i++) await nextTurn();
    assert.deepEqual(flushed, [], 'held');
    await until(() => flushed.length === 1, 2000, 'flushed by its linger');
    assert.deepEqual(flushed, [[1]]);
    batch.add(60);
    batch.add(61); // 121 > 100: no waiting for the linger, and what is left goes on the next turn
    await nextTurn();
    assert.deepEqual(flushed, [[1], [60]]);
    await nextTurn();
    assert.deepEqual(flushed, [[1], [60], [61]]);
  });
});

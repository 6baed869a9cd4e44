// The chart's poll counts: noted in memory by each poll, shown at once, written later sorted and in short transactions,
// never twice, never lost by a failed write, and never more than a bounded number held.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { CHUNK_ROWS, nextTurn } from '../../src/actions/chunks.ts';
import {
  feedPollHours,
  MAX_HELD_POLL_COUNTS,
  MAX_NOTED_POLL_COUNTS,
  notePoll,
  writePollCounts,
} from '../../src/actions/poll-counts.ts';
import { newPollCounts } from '../../src/context.ts';
import { sqliteConnection } from '../../src/db/sqlite-engine.ts';
import { makeWorld, type World, sqliteOnly } from '../support/world.ts';

const AT = new Date('2026-01-01T10:20:00.000Z');
const HOURS = ['2026-01-01T09', '2026-01-01T10'];
const rowsOf = (w: World) =>
  w.ctx.db.all(
    'SELECT hour, feed_id, ok, failed, throttled, new_entries FROM feed_poll_hours ORDER BY hour, feed_id',
  );
const feedId = (i: number) => `feed${String(i).padStart(6, '0')}`;

describe('poll counts of the dashboard chart', () => {
  let w: World;
  beforeEach(() => {
    w = makeWorld();
  });
  afterEach(() => w.close());

  it('shows a poll on the chart at once, writes it later, and writes it only once', async () => {
    notePoll(w.ctx.pollCounts, 'f1', 'unchanged', 0, AT);
    notePoll(w.ctx.pollCounts, 'f1', 'parsed', 3, AT);
    notePoll(w.ctx.pollCounts, 'f1', 'error', 0, new Date(+AT - 3600_000));
    notePoll(w.ctx.pollCounts, 'f1', 'throttled', 0, AT);
    const expected = [
      { hour: '2026-01-01T09', ok: 0, failed: 1, throttled: 0, new_entries: 0 },
      { hour: '2026-01-01T10', ok: 2, failed: 0, throttled: 1, new_entries: 3 },
    ];
    assert.deepEqual(
      await feedPollHours(w.ctx, 'f1', HOURS),
      expected,
      'shown before it is written',
    );
    assert.deepEqual(await rowsOf(w), [], 'a poll writes nothing to the table');

    assert.equal(await writePollCounts(w.ctx), 2);
    assert.equal((await rowsOf(w)).length, 2);
    assert.deepEqual(await feedPollHours(w.ctx, 'f1', HOURS), expected, 'the same once written');
    assert.equal(await writePollCounts(w.ctx), 0, 'nothing is written twice');

    notePoll(w.ctx.pollCounts, 'f1', 'unchanged', 0, AT);
    await writePollCounts(w.ctx);
    assert.equal(
      (await feedPollHours(w.ctx, 'f1', HOURS))[1]!.ok,
      3,
      'a later write adds to the row',
    );
  });

  it(
    'writes many counts in transactions of CHUNK_ROWS rows, sorted by hour and then feed',
    sqliteOnly,
    async () => {
      const n = CHUNK_ROWS * 2 + 7;
      for (let i = n - 1; i >= 0; i--) notePoll(w.ctx.pollCounts, feedId(i), 'unchanged', 0, AT);
      const commits: number[] = [];
      let rows = 0;
      sqliteConnection(w.ctx.store)!.function('count_row', () => ++rows);
      await w.ctx.db.exec(
        'CREATE TEMP TRIGGER counted AFTER INSERT ON feed_poll_hours BEGIN SELECT count_row(); END',
      );
      const inserted: string[] = [];
      sqliteConnection(w.ctx.store)!.function(
        'note_insert',
        (id: unknown) => void inserted.push(String(id)),
      );
      await w.ctx.db.exec(
        'CREATE TEMP TRIGGER noted AFTER INSERT ON feed_poll_hours BEGIN SELECT note_insert(new.feed_id); END',
      );
      const write = writePollCounts(w.ctx);
      // The first transaction commits before the write first yields to the event loop; the next waits for a turn.
      await nextTurn();
      commits.push((await rowsOf(w)).length);
      assert.equal(await write, n);
      assert.equal(commits[0], CHUNK_ROWS, 'the first transaction committed alone, then a turn');
      assert.equal(rows, n);
      assert.deepEqual(
        inserted,
        [...inserted].sort(),
        'rows inserted in key order, so each page of the hour is written once',
      );
    },
  );

  it(
    'notes again what a failed write could not commit, and the next write stores each count once',
    sqliteOnly,
    async () => {
      const n = CHUNK_ROWS + 10;
      for (let i = 0; i < n; i++) notePoll(w.ctx.pollCounts, feedId(i), 'unchanged', 0, AT);
      // The second transaction fails (as a full disk would), after the first committed.
      await w.ctx.db.exec(
        `CREATE TEMP TRIGGER refuse BEFORE INSERT ON feed_poll_hours WHEN new.feed_id = '${feedId(CHUNK_ROWS + 3)}'
       BEGIN SELECT RAISE(ABORT, 'disk full'); END`,
      );
      await assert.rejects(writePollCounts(w.ctx), /disk full/);
      assert.equal((await rowsOf(w)).length, CHUNK_ROWS, 'the first transaction stays committed');
      assert.equal(w.ctx.pollCounts.noted.size, 10, 'the rest is noted again');
      assert.equal(
        (await feedPollHours(w.ctx, feedId(CHUNK_ROWS + 3), HOURS))[0]!.ok,
        1,
        'and still shown',
      );
      notePoll(w.ctx.pollCounts, feedId(n - 1), 'unchanged', 0, AT); // a poll meanwhile adds to a renoted count
      await w.ctx.db.exec('DROP TRIGGER refuse');
      assert.equal(await writePollCounts(w.ctx), 10);
      const rows = (await rowsOf(w)) as { ok: number }[];
      assert.equal(rows.length, n);
      assert.deepEqual(
        rows.map((r) => r.ok),
        [...Array(n - 1).fill(1), 2],
        'each poll counted exactly once',
      );
    },
  );

  it('asks for an early write when many counts are noted, and holds a bounded number when writes keep failing', () => {
    const counts = newPollCounts();
    let asked = 0;
    counts.full = () => void asked++;
    for (let i = 0; i < MAX_NOTED_POLL_COUNTS; i++) notePoll(counts, feedId(i), 'unchanged', 0, AT);
    assert.equal(asked, 1, 'asked once, on reaching the mark');
    for (let i = MAX_NOTED_POLL_COUNTS; i < MAX_HELD_POLL_COUNTS + 100; i++)
      notePoll(counts, feedId(i), 'unchanged', 0, AT);
    assert.equal(counts.noted.size, MAX_HELD_POLL_COUNTS, 'no more feed-hours held than the bound');
    notePoll(counts, feedId(0), 'unchanged', 0, AT);
    assert.equal(counts.noted.get(`2026-01-01T10 ${feedId(0)}`)!.ok, 2, 'a held one still counts');
  });
});

// The dashboard chart's poll counts (feed_poll_hours): a poll notes its count in memory, and a timer writes the counts
// noted since the last write, sorted by hour and feed, in short transactions. An upsert per poll would write a page of
// the table for nearly every poll (each feed's row of the hour sits somewhere else); written sorted, a minute of polls
// fills the hour's range page after page. A crash loses the counts of the polls since the last write, nothing else.
import { transaction, type Ctx, type PollCount, type PollCounts } from '../context.ts';
import {
  addPollCounts,
  hourOf,
  POLL_RESULT,
  pollHours,
  type PollHourRow,
  type PollKind,
} from '../store/feed-poll-hours.ts';
import { CHUNK_ROWS, nextTurn } from './chunks.ts';

/** Counts noted before a write is asked for early: about 20,000 feed-hours, a few MiB. */
export const MAX_NOTED_POLL_COUNTS = 20_000;
/** Past this many, a poll of a feed-hour not noted yet is not counted (the writes are failing): memory stays bounded. */
export const MAX_HELD_POLL_COUNTS = 4 * MAX_NOTED_POLL_COUNTS;

/** Notes one poll of `feedId` at `at`: its result, and the new entries it found. */
export function notePoll(
  counts: PollCounts,
  feedId: string,
  kind: PollKind,
  newEntries: number,
  at: Date,
): void {
  const hour = hourOf(at);
  const key = `${hour} ${feedId}`;
  let count = counts.noted.get(key);
  if (count === undefined) {
    if (counts.noted.size + counts.writing.size >= MAX_HELD_POLL_COUNTS) return;
    count = { hour, feed_id: feedId, ok: 0, failed: 0, throttled: 0, new_entries: 0 };
    counts.noted.set(key, count);
    if (counts.noted.size === MAX_NOTED_POLL_COUNTS) counts.full();
  }
  count[POLL_RESULT[kind]] += 1;
  count.new_entries += newEntries;
}

/** Writes the noted counts, sorted by hour and feed, CHUNK_ROWS to a transaction with a turn of the event loop between
 *  two; returns how many rows it wrote to. Polls noted meanwhile wait for the next write. When a transaction fails, what
 *  it and the ones after it held are noted again and the error is thrown. */
export async function writePollCounts(ctx: Ctx): Promise<number> {
  const counts = ctx.pollCounts;
  if (counts.noted.size === 0 || counts.writing.size > 0) return 0;
  counts.writing = counts.noted;
  counts.noted = new Map();
  const sorted = [...counts.writing.keys()].sort();
  let written = 0;
  try {
    for (let i = 0; i < sorted.length; i += CHUNK_ROWS) {
      if (i > 0) await nextTurn();
      const keys = sorted.slice(i, i + CHUNK_ROWS);
      await transaction(ctx, async (tx) => {
        for (const key of keys) await addPollCounts(tx.db, counts.writing.get(key)!);
      });
      for (const key of keys) counts.writing.delete(key);
      written += keys.length;
    }
  } finally {
    for (const [key, count] of counts.writing) renote(counts, key, count);
    counts.writing = new Map();
  }
  return written;
}

/** The feed's rows of `hours`, with the counts noted and not yet written added in: what the chart shows. */
export async function feedPollHours(
  ctx: Ctx,
  feedId: string,
  hours: readonly string[],
): Promise<PollHourRow[]> {
  const rows = new Map((await pollHours(ctx.db, feedId, hours)).map((r) => [r.hour, { ...r }]));
  for (const hour of hours)
    for (const held of [ctx.pollCounts.writing, ctx.pollCounts.noted]) {
      const count = held.get(`${hour} ${feedId}`);
      if (count === undefined) continue;
      const row = rows.get(hour) ?? { hour, ok: 0, failed: 0, throttled: 0, new_entries: 0 };
      addCounts(row, count);
      rows.set(hour, row);
    }
  return [...rows.values()].sort((a, b) => (a.hour < b.hour ? -1 : 1));
}

/** Adds a count that could not be written back to the noted ones. */
function renote(counts: PollCounts, key: string, count: PollCount): void {
  const noted = counts.noted.get(key);
  if (noted === undefined) counts.noted.set(key, count);
  else addCounts(noted, count);
}

/** Adds `count`'s polls and new entries to `into`. */
function addCounts(into: PollHourRow, count: PollHourRow): void {
  into.ok += count.ok;
  into.failed += count.failed;
  into.throttled += count.throttled;
  into.new_entries += count.new_entries;
}

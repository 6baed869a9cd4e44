// The plan test's workload, continued: the entry history and backfills, the trace's lookups (held entries, keys, the
// events of an entry) and the dashboard's charts and summaries, run against the rows populate() made.
import type { Sql } from '../../src/db/engine.ts';
import { attemptHours } from '../../src/store/attempts.ts';
import * as backfill from '../../src/store/backfill-entries.ts';
import { existingEndpointIds } from '../../src/store/endpoints.ts';
import { findHeldEntry, keyFirstSeen } from '../../src/store/entries.ts';
import * as history from '../../src/store/entry-history.ts';
import { eventsOfEntry, recordEventEntries } from '../../src/store/event-entries.ts';
import { eventSummaries } from '../../src/store/events-summary.ts';
import {
  addPollCounts,
  hourOf,
  pollHours,
  prunePollHours,
} from '../../src/store/feed-poll-hours.ts';
import { pollFeedBy, pollPushedFeedBy } from '../../src/store/feeds-push.ts';
import {
  backfillTaken,
  endBackfill,
  nextBackfill,
  readyBackfills,
} from '../../src/store/subscriptions.ts';
import * as websub from '../../src/store/websub-subscriptions.ts';
import type { Fixture } from './exercise.ts';

/** Stores two history entries of the fixture's feed and runs every entry-history function, each branch once. */
export async function exerciseHistory(db: Sql, now: Date, fx: Fixture): Promise<void> {
  const row = (key: string, at: Date) => ({
    key,
    key_source: 'guid',
    entry: `{"id":"${key}"}`,
    content_hash: key,
    first_seen_at: at.toISOString(),
    via: 'poll' as const,
    fate: 'new' as const,
  });
  await history.insertHistory(db, fx.feed, [
    row('h-old', now),
    row('h-new', new Date(+now + 1000)),
  ]);
  await history.historyHashes(db, fx.feed);
  await history.knownEntries(db, fx.feed, 0);
  await history.storeNewVersion(db, fx.feed, { key: 'h-new', entry: '{}', content_hash: 'x' }, now);
  await history.recentHistory(db, fx.feed, 10);
  await history.recentHistory(db, fx.feed, 10, 'h-new');
  await history.findHistory(db, fx.feed, 'https://feeds.example/none'); // no such key nor guid: every lookup runs
  await history.countHistory(db, fx.feed);
  await history.boundHistory(db, fx.feed, { entries: 1, bytes: 1_000_000, floor: 0 }); // deletes h-old
  await history.pruneHistoryWithoutKeys(db, fx.feed);
}

/** A backfill of the fixture's subscription from the history exerciseHistory left: made ready, found, taken, read and
 *  sent, ended. */
export async function exerciseBackfill(db: Sql, now: Date, fx: Fixture): Promise<void> {
  const sub = { id: fx.sub, feed_id: fx.feed };
  await readyBackfills(db, fx.feed, now.toISOString());
  await nextBackfill(db, '');
  await backfill.takeBackfillEntries(db, sub, 10);
  await backfill.dropBackfillEntries(db, fx.sub);
  await backfill.backfillCandidates(db, sub); // a subscription with a filter takes its backfill from these
  await backfill.takeBackfillKeys(db, fx.sub, ['h-new']);
  await backfillTaken(db, fx.sub);
  await backfill.backfillSizes(db, sub, 100);
  await backfill.backfillEntries(db, sub, 10);
  await backfill.dropBackfillEntries(db, fx.sub, 1);
  await endBackfill(db, fx.sub);
}

/** The trace's lookups, the dashboard's charts and event summaries, /metrics' endpoint probe. */
export async function exerciseTraceAndCharts(db: Sql, now: Date, fx: Fixture): Promise<void> {
  await keyFirstSeen(db, fx.feed, fx.entryKey);
  await findHeldEntry(db, fx.feed, 'https://feeds.example/none'); // no such key nor guid: every lookup runs
  await recordEventEntries(db, fx.sub, fx.event, [fx.entryKey]);
  await eventsOfEntry(db, fx.sub, fx.entryKey, 10);
  await eventSummaries(db, [fx.event]);
  await attemptHours(db, fx.endpoint, '2000-01-01T00');
  await existingEndpointIds(db, [fx.endpoint, 'gone']);
  await addPollCounts(db, {
    hour: hourOf(now),
    feed_id: fx.feed,
    ok: 1,
    failed: 0,
    throttled: 0,
    new_entries: 1,
  });
  await pollHours(db, fx.feed, [hourOf(new Date(+now - 3_600_000)), hourOf(now)]);
  await prunePollHours(db, hourOf(now), 100);
}

/** The WebSub loop's rows and the push path's schedule change, for the fixture's feed. */
export async function exerciseWebSub(db: Sql, now: Date, fx: Fixture): Promise<void> {
  const hub = { feedId: fx.feed, hub: 'https://hub.example/', topic: 'https://feeds.example/f' };
  await websub.startWebSub(db, { ...hub, secret: 'a'.repeat(64), token: 't'.repeat(43) }, now);
  await websub.getWebSub(db, fx.feed);
  await websub.updateWebSub(
    db,
    fx.feed,
    { status: 'active', last_push_at: now.toISOString() },
    now,
  );
  await websub.dueWebSubs(db, now, 16);
  await websub.isPushHealthy(db, fx.feed, now);
  await websub.webSubFeedIdle(db, fx.feed, now);
  await websub.deleteWebSub(db, fx.feed);
  await pollFeedBy(db, fx.feed, now);
  await pollPushedFeedBy(db, fx.feed, now);
}

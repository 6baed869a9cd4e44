// The plan test's workload, continued: the entry history and backfills, the trace's lookups (held entries, keys, the
// events of an entry) and the dashboard's charts and summaries, run against the rows populate() made.
import type { Db } from '../../src/db/open.ts';
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
export function exerciseHistory(db: Db, now: Date, fx: Fixture): void {
  const row = (key: string, at: Date) => ({
    key,
    key_source: 'guid',
    entry: `{"id":"${key}"}`,
    content_hash: key,
    first_seen_at: at.toISOString(),
    via: 'poll' as const,
    fate: 'new' as const,
  });
  history.insertHistory(db, fx.feed, [row('h-old', now), row('h-new', new Date(+now + 1000))]);
  history.historyHashes(db, fx.feed);
  history.storeNewVersion(db, fx.feed, { key: 'h-new', entry: '{}', content_hash: 'x' }, now);
  history.recentHistory(db, fx.feed, 10);
  history.recentHistory(db, fx.feed, 10, 'h-new');
  history.findHistory(db, fx.feed, 'https://feeds.example/none'); // no such key nor guid: every lookup runs
  history.countHistory(db, fx.feed);
  history.boundHistory(db, fx.feed, { entries: 1, bytes: 1_000_000, floor: 0 }); // deletes h-old
  history.pruneHistoryWithoutKeys(db, fx.feed);
}

/** A backfill of the fixture's subscription from the history exerciseHistory left: made ready, found, taken, read and
 *  sent, ended. */
export function exerciseBackfill(db: Db, now: Date, fx: Fixture): void {
  const sub = { id: fx.sub, feed_id: fx.feed };
  readyBackfills(db, fx.feed, now.toISOString());
  nextBackfill(db, '');
  backfill.takeBackfillEntries(db, sub, 10);
  backfillTaken(db, fx.sub);
  backfill.backfillSizes(db, sub, 100);
  backfill.backfillEntries(db, sub, 10);
  backfill.dropBackfillEntries(db, fx.sub, 1);
  endBackfill(db, fx.sub);
}

/** The trace's lookups, the dashboard's charts and event summaries, /metrics' endpoint probe. */
export function exerciseTraceAndCharts(db: Db, now: Date, fx: Fixture): void {
  keyFirstSeen(db, fx.feed, fx.entryKey);
  findHeldEntry(db, fx.feed, 'https://feeds.example/none'); // no such key nor guid: every lookup runs
  recordEventEntries(db, fx.sub, fx.event, [fx.entryKey]);
  eventsOfEntry(db, fx.sub, fx.entryKey, 10);
  eventSummaries(db, [fx.event]);
  attemptHours(db, fx.endpoint, '2000-01-01T00');
  existingEndpointIds(db, [fx.endpoint, 'gone']);
  addPollCounts(db, {
    hour: hourOf(now),
    feed_id: fx.feed,
    ok: 1,
    failed: 0,
    throttled: 0,
    new_entries: 1,
  });
  pollHours(db, fx.feed, [hourOf(new Date(+now - 3_600_000)), hourOf(now)]);
  prunePollHours(db, hourOf(now), 100);
}

/** The WebSub loop's rows and the push path's schedule change, for the fixture's feed. */
export function exerciseWebSub(db: Db, now: Date, fx: Fixture): void {
  const hub = { feedId: fx.feed, hub: 'https://hub.example/', topic: 'https://feeds.example/f' };
  websub.startWebSub(db, { ...hub, secret: 'a'.repeat(64), token: 't'.repeat(43) }, now);
  websub.getWebSub(db, fx.feed);
  websub.updateWebSub(db, fx.feed, { status: 'active', last_push_at: now.toISOString() }, now);
  websub.dueWebSubs(db, now, 16);
  websub.isPushHealthy(db, fx.feed, now);
  websub.webSubFeedIdle(db, fx.feed, now);
  websub.deleteWebSub(db, fx.feed);
  pollFeedBy(db, fx.feed, now);
  pollPushedFeedBy(db, fx.feed, now);
}

// The plan test's workload: fills a database with a few applications' worth of rows, then calls every store function
// (every filter of every list), so each statement the store prepares is in its cache to be explained.
import type { Db } from '../../src/db/open.ts';
import { newId } from '../../src/ids.ts';
import * as apiKeys from '../../src/store/api-keys.ts';
import { upsertApplication } from '../../src/store/applications.ts';
import { listAttempts, recordAttempt } from '../../src/store/attempts.ts';
import * as endpoints from '../../src/store/endpoints.ts';
import * as retention from '../../src/store/entries-retention.ts';
import * as entries from '../../src/store/entries.ts';
import * as claim from '../../src/store/events-claim.ts';
import * as events from '../../src/store/events.ts';
import * as feedsList from '../../src/store/feeds-list.ts';
import * as poll from '../../src/store/feeds-poll.ts';
import * as record from '../../src/store/feeds-record.ts';
import * as feeds from '../../src/store/feeds.ts';
import * as idem from '../../src/store/idempotency.ts';
import { pingDatabase } from '../../src/store/maintenance.ts';
import * as quota from '../../src/store/quota-usage.ts';
import * as sessions from '../../src/store/sessions.ts';
import { exportSubscriptionsPage } from '../../src/store/subscriptions-export.ts';
import * as storage from '../../src/store/storage.ts';
import * as subs from '../../src/store/subscriptions.ts';
import {
  exerciseBackfill,
  exerciseHistory,
  exerciseTraceAndCharts,
  exerciseWebSub,
} from './exercise-trace.ts';

/** The last application's rows: its endpoint and key, its last feed with that feed's stored entry key, subscription
 *  and event. */
export type Fixture = {
  app: string;
  endpoint: string;
  feed: string;
  sub: string;
  event: string;
  key: string;
  entryKey: string;
};

/** Rows for `apps` applications, each with an endpoint, `feedsPer` feeds subscribed, events with attempts, keys. */
export function populate(db: Db, now: Date, apps = 3, feedsPer = 20): Fixture {
  let last: Fixture | undefined;
  db.transaction(() => {
    for (let a = 0; a < apps; a++) {
      const app = upsertApplication(db, `app-${a}`, now).id;
      const key = newId(now);
      apiKeys.insertApiKey(db, {
        id: key,
        application_id: app,
        name: null,
        prefix: 'fsk_x',
        hash: `hash-${a}`,
        created_at: now.toISOString(),
      });
      const endpoint = newId(now);
      endpoints.insertEndpoint(db, {
        id: endpoint,
        application_id: app,
        title: 'E',
        url: `https://hooks.example/${a}`,
        secret: 'whsec_x',
        created_at: now.toISOString(),
        filter_types: null,
      });
      for (let f = 0; f < feedsPer; f++) {
        const url = `https://feeds.example/${a}/${f}.xml`;
        const feed = feeds.upsertFeed(db, url, null, '', now).id;
        const sub = newId(now);
        subs.insertSubscription(db, {
          id: sub,
          application_id: app,
          endpoint_id: endpoint,
          feed_id: feed,
          url,
          metadata: null,
          created_at: now.toISOString(),
        });
        const entryKey = `k${f}`;
        entries.recordKeys(db, feed, [{ key: entryKey, fingerprint: null }], now);
        const event = newId(now);
        events.insertEvent(
          db,
          {
            id: event,
            application_id: app,
            endpoint_id: endpoint,
            subscription_id: sub,
            type: 'subscription.entries',
            sequence: subs.allocateSequences(db, sub, 1),
            body: '{}',
          },
          now,
        );
        last = { app, endpoint, feed, sub, event, key, entryKey };
      }
    }
  })();
  return last!;
}

/** Calls every store function at least once, each list with each of its filters. */
export function exerciseStore(db: Db, now: Date): void {
  const fx = populate(db, now);
  exerciseKeysAndSessions(db, now, fx);
  exerciseEndpointsAndSubscriptions(db, now, fx);
  exerciseFeeds(db, now, fx);
  exerciseEntries(db, now, fx);
  exerciseEvents(db, now, fx);
  exerciseHistory(db, now, fx);
  exerciseBackfill(db, now, fx);
  exerciseTraceAndCharts(db, now, fx);
  exerciseWebSub(db, now, fx);
  exerciseStorage(db, fx);
  exerciseDeletions(db, now, fx);
  pingDatabase(db);
}

function exerciseKeysAndSessions(db: Db, now: Date, fx: Fixture): void {
  const t = now.toISOString();
  apiKeys.findLiveKeyByHash(db, 'hash-0');
  apiKeys.recordKeyUse(db, fx.key, t);
  apiKeys.listApiKeys(db);
  const row = {
    id_hash: 'h',
    application_id: fx.app,
    api_key_id: fx.key,
    csrf_token: 'c',
    created_at: t,
    last_seen_at: t,
  };
  sessions.insertSession(db, row);
  sessions.findLiveSession(db, 'h', t);
  sessions.touchSession(db, 'h', t);
  sessions.deleteSessionsBeyond(db, fx.key, 100);
  sessions.deleteIdleSessions(db, '2000-01-01T00:00:00.000Z');
  sessions.deleteSession(db, 'h');
  apiKeys.revokeApiKey(db, fx.key, now);
  idem.saveIdempotency(db, {
    application_id: fx.app,
    key: 'k',
    method: 'POST',
    path: '/v1/endpoints',
    request_hash: 'x',
    status: 201,
    response: '{}',
    created_at: t,
  });
  idem.findIdempotency(db, fx.app, 'k', '2000-01-01T00:00:00.000Z');
  idem.pruneIdempotency(db, '2000-01-01T00:00:00.000Z', 1000);
  quota.recordQuotaUsage(db, { application_id: fx.app, quota: 'q', subject: 's', used_at: t });
  quota.countQuotaUsage(db, fx.app, 'q', '2000-01-01T00:00:00.000Z');
  quota.quotaUsesSince(db, fx.app, 'q', '2000-01-01T00:00:00.000Z');
  quota.usedQuotaOn(db, fx.app, 'q', 's', '2000-01-01T00:00:00.000Z');
  quota.pruneQuotaUsage(db, fx.app, 'q', '2000-01-01T00:00:00.000Z');
}

function exerciseEndpointsAndSubscriptions(db: Db, now: Date, fx: Fixture): void {
  endpoints.getEndpoint(db, fx.app, fx.endpoint);
  endpoints.getEndpointById(db, fx.endpoint);
  endpoints.listEndpoints(db, fx.app, { limit: 10 });
  endpoints.listEndpoints(db, fx.app, { limit: 10, after: fx.endpoint });
  endpoints.updateEndpoint(db, fx.app, fx.endpoint, { title: 'F' }, now);
  endpoints.countEndpointSubscriptions(db, fx.endpoint);
  endpoints.markEndpointFailing(db, fx.endpoint, now);
  endpoints.markEndpointHealthy(db, fx.endpoint);
  endpoints.countApplicationEndpoints(db, fx.app);
  subs.getSubscription(db, fx.app, fx.sub);
  subs.findSubscriptionToSameFeed(db, fx.endpoint, 'https://feeds.example/0/0.xml', '');
  for (const q of [{}, { endpoint: fx.endpoint }, { feed: fx.feed }, { after: fx.sub }])
    subs.listSubscriptions(db, fx.app, { limit: 10, ...q });
  subs.updateSubscription(db, fx.app, fx.sub, { metadata: '{}' }, now);
  subs.applicationUsesFeed(db, fx.app, fx.feed);
  subs.feedHasSubscription(db, fx.feed);
  subs.feedHasActiveSubscription(db, fx.feed);
  subs.activeSubscriptionsOfFeed(db, fx.feed, 'subscription.entries');
  subs.countApplicationSubscriptions(db, fx.app);
  exportSubscriptionsPage(db, fx.app, fx.endpoint, null, 200);
}

function exerciseFeeds(db: Db, now: Date, fx: Fixture): void {
  const later = new Date(now.getTime() + 60_000).toISOString();
  feeds.getFeed(db, fx.feed);
  feeds.storeFeedProbe(db, fx.feed, { identity_probe: '{}' });
  feeds.feedProbe(db, fx.feed);
  feeds.hasFeedProbe(db, fx.feed);
  feeds.recordHoldReleased(db, fx.feed, 1, now);
  feeds.addHeldDropped(db, fx.feed, 1);
  feeds.feedsAfter(db, '', 100);
  feeds.markFeedUnused(db, fx.feed, now);
  feeds.restartBaselineIfIdle(db, fx.feed, now);
  feeds.wakeFeed(db, fx.feed, now);
  feeds.parkIdleDueFeeds(db, now, 1000);
  feeds.countFeedStatusPage(db, 'active', '', 5000);
  for (const statuses of [undefined, ['error' as const], ['error' as const, 'gone' as const]])
    for (const after of [undefined, fx.feed])
      feedsList.listFeedsOfApplication(db, fx.app, { limit: 10, after, statuses });
  feeds.countFeedsOfApplication(db, fx.app);
  feeds.recordHealthAlert(db, fx.feed, { health_alert: null, health_alert_at: null });
  feeds.makeFeedDueNow(db, fx.feed, now);
  poll.claimDueFeeds(db, now, 1000, 10);
  poll.feedsToPollAfter(db, '', now, 10);
  const window = poll.dueFeedWindow(db, now, 256);
  const leased = poll.leaseFeeds(db, window.map((f) => f.id).slice(0, 3), now, 1000);
  poll.releaseFeedLeases(
    db,
    leased.map((f) => f.id),
  );
  poll.nextFeedDueAfter(db, now);
  const f = feeds.getFeed(db, leased[0]!.id)!;
  poll.leaseFeeds(db, [f.id], now, 1000);
  feeds.makeFeedDueNow(db, f.id, now); // noted on the lease: the record's endLease keeps it
  record.recordPollSuccess(db, f.id, { ...f, next_poll_at: later }, now);
  record.recordPollUnchanged(db, f.id, { ...f, next_poll_at: later }, 'active', now);
  record.recordQuietUnchanged(db, f.id, { ...f, next_poll_at: later, interval_seconds: 900 }, now);
  record.recordQuietUnchanged(db, f.id, { ...f, next_poll_at: null, interval_seconds: 900 }, now);
  record.recordPollFailure(
    db,
    f.id,
    { errorClass: 'network', message: 'm', httpStatus: null, nextPollAt: later },
    now,
  );
  record.recordPollThrottled(db, f.id, 429, later, now);
  record.recordFeedGone(db, f.id, now);
  poll.releaseAllFeedLeases(db);
}

function exerciseEntries(db: Db, now: Date, fx: Fixture): void {
  entries.storedFingerprint(db, fx.feed, 'k0');
  entries.storedKeys(db, fx.feed, ['k0', 'k1']);
  // A feed storing many more keys than asked for: the seek per key.
  entries.recordKeys(
    db,
    fx.feed,
    Array.from({ length: 70 }, (_, i) => ({ key: `x${i}`, fingerprint: null })),
    now,
  );
  entries.storedKeys(db, fx.feed, ['k0']);
  entries.markKeysSeen(db, fx.feed, ['k0'], now);
  entries.fillFingerprints(db, fx.feed, [{ key: 'k0', fingerprint: 'f' }]);
  const held = [{ key: 'h1', entry: '{}', position: 0 }];
  entries.holdEntries(db, fx.feed, held, now, { entries: 0, bytes: 0 }); // full: the "is it held?" probe
  entries.holdEntries(db, fx.feed, held, now, { entries: 10, bytes: 10_000 });
  entries.listHeldEntries(db, fx.feed);
  entries.heldEntriesFromEnd(db, fx.feed, now.toISOString(), 10);
  entries.countHeldEntries(db, fx.feed);
  entries.hasHeldEntries(db, fx.feed);
  entries.deleteHeldEntries(db, fx.feed, ['h1']);
  entries.clearHeldEntries(db, fx.feed);
  retention.keyPruneBound(db, fx.feed, 86_400_000, 0);
  retention.deleteKeysWithin(
    db,
    fx.feed,
    { windowStart: now.toISOString(), last: { seenAt: now.toISOString(), key: 'k' } },
    500,
  );
  retention.countFeedKeys(db, fx.feed);
  retention.trimHeldEntries(db, fx.feed, 500);
}

function exerciseEvents(db: Db, now: Date, fx: Fixture): void {
  const t = now.toISOString();
  events.getEvent(db, fx.app, fx.event);
  const filters = [
    {},
    { subscription: fx.sub },
    { endpoint: fx.endpoint },
    { status: 'failed' as const },
    { subscription: fx.sub, status: 'failed' as const },
    { endpoint: fx.endpoint, status: 'failed' as const },
  ];
  for (const q of filters)
    for (const after of [undefined, fx.event])
      events.listEvents(db, fx.app, { limit: 10, after, ...q });
  events.countEventsByStatus(db);
  events.countWaitingEvents(db);
  events.oldestSendableEventAt(db);
  for (const app of claim.applicationsWithDueEvents(db, now)) {
    const { taken } = claim.walkDueEvents(db, app, now, {
      full: [],
      limit: 2,
      maxRows: 100,
      take: () => true,
    });
    const leased = claim.leaseEvents(db, taken, now, 1000);
    claim.releaseEvents(
      db,
      leased.map((e) => e.id),
    );
  }
  claim.nextWaitingEventAfter(db, now);
  claim.nextEventDueAt(db);
  claim.releaseAllEventLeases(db);
  recordAttempt(
    db,
    {
      event_id: fx.event,
      endpoint_id: fx.endpoint,
      started_at: t,
      status_code: 500,
      duration_ms: 1,
      error: null,
      response_body: null,
    },
    { status: 'failed', nextAttemptAt: t },
    now,
  );
  listAttempts(db, fx.event);
  events.requeueEvent(db, fx.event, now);
  events.requeueEndpointEvents(db, fx.endpoint, '2000-01-01T00:00:00.000Z', now);
  events.hastenEndpointRetries(db, fx.endpoint, now);
  events.hasMoreEventsThan(db, fx.sub, 100);
  events.pruneFinishedEvents(db, t, 100);
}

function exerciseStorage(db: Db, fx: Fixture): void {
  storage.applicationStorage(db, fx.app);
  record.recordBudgetHold(
    db,
    fx.feed,
    { last_http_status: 200, held_at: '2026-01-01' },
    new Date(),
  );
  feeds.heldFeedsAfter(db, '', 10);
  feeds.heldFeedsOf(db, fx.app);
  feeds.countHeldFeedsOf(db, fx.app);
  feeds.retryHeldFeed(db, fx.feed, new Date());
  record.endBudgetHold(db, fx.feed);
  storage.storedKeyCount(db, fx.feed);
  retention.pruneKeysBeyond(db, fx.feed, [fx.entryKey], 1);
  storage.recountFeedStorage(db, fx.feed);
  for (const app of storage.applicationsAfter(db, '', 10))
    for (const part of ['feed', 'event'] as const) {
      const first = storage.walkStorage(db, app, part, null, 5);
      storage.walkStorage(db, app, part, first.last, 5);
      storage.finishStorageWalk(db, app, part, 0);
    }
}

function exerciseDeletions(db: Db, now: Date, fx: Fixture): void {
  events.deleteSubscriptionEvents(db, fx.sub, 100);
  subs.deleteSubscription(db, fx.app, fx.sub);
  retention.emptyFeed(db, fx.feed, 500);
  feeds.deleteUnusedFeed(db, fx.feed);
  endpoints.disableEndpoint(db, fx.endpoint, 'r', now);
  const spare = newId(now); // one no subscription uses: the others' subscriptions keep theirs
  endpoints.insertEndpoint(db, {
    id: spare,
    application_id: fx.app,
    title: 'S',
    url: 'https://hooks.example/spare',
    secret: 'whsec_x',
    created_at: now.toISOString(),
    filter_types: null,
  });
  endpoints.deleteEndpoint(db, fx.app, spare);
}

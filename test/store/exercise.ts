// The plan test's workload: fills a database with a few applications' worth of rows, then calls every store function
// (every filter of every list), so each statement the store prepares is in its cache to be explained.
import type { Sql } from '../../src/db/engine.ts';
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
import * as nodes from '../../src/store/nodes.ts';
import { serviceKey } from '../../src/store/service-keys.ts';
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

/** Rows for `apps` applications, each with an endpoint, `feedsPer` feeds subscribed, events with attempts, keys: written
 *  in one transaction (a savepoint inside one). */
export function populate(db: Sql, now: Date, apps = 3, feedsPer = 20): Promise<Fixture> {
  return db.savepoint(async (tx) => {
    let last: Fixture | undefined;
    for (let a = 0; a < apps; a++) {
      const app = (await upsertApplication(tx, `app-${a}`, now)).id;
      const key = newId(now);
      await apiKeys.insertApiKey(tx, {
        id: key,
        application_id: app,
        name: null,
        prefix: 'fsk_x',
        hash: `hash-${a}`,
        created_at: now.toISOString(),
      });
      const endpoint = newId(now);
      await endpoints.insertEndpoint(tx, {
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
        const feed = (await feeds.upsertFeed(tx, url, null, '', now)).id;
        const sub = newId(now);
        await subs.insertSubscription(tx, {
          id: sub,
          application_id: app,
          endpoint_id: endpoint,
          feed_id: feed,
          url,
          metadata: null,
          created_at: now.toISOString(),
        });
        const entryKey = `k${f}`;
        await entries.recordKeys(tx, feed, [{ key: entryKey, fingerprint: null }], now);
        const event = newId(now);
        await events.insertEvent(
          tx,
          {
            id: event,
            application_id: app,
            endpoint_id: endpoint,
            subscription_id: sub,
            type: 'subscription.entries',
            sequence: await subs.allocateSequences(tx, sub, 1),
            body: '{}',
          },
          now,
        );
        last = { app, endpoint, feed, sub, event, key, entryKey };
      }
    }
    return last!;
  });
}

/** Calls every store function at least once, each list with each of its filters. */
export async function exerciseStore(db: Sql, now: Date): Promise<void> {
  const fx = await populate(db, now);
  await exerciseKeysAndSessions(db, now, fx);
  await exerciseEndpointsAndSubscriptions(db, now, fx);
  await exerciseFeeds(db, now, fx);
  await exerciseEntries(db, now, fx);
  await exerciseEvents(db, now, fx);
  await exerciseHistory(db, now, fx);
  await exerciseBackfill(db, now, fx);
  await exerciseTraceAndCharts(db, now, fx);
  await exerciseWebSub(db, now, fx);
  await exerciseStorage(db, fx);
  await exerciseDeletions(db, now, fx);
  await exerciseNodes(db, now);
  await pingDatabase(db);
}

async function exerciseKeysAndSessions(db: Sql, now: Date, fx: Fixture): Promise<void> {
  const t = now.toISOString();
  await apiKeys.findLiveKeyByHash(db, 'hash-0');
  await apiKeys.recordKeyUse(db, fx.key, t);
  await apiKeys.listApiKeys(db);
  const row = {
    id_hash: 'h',
    application_id: fx.app,
    api_key_id: fx.key,
    csrf_token: 'c',
    created_at: t,
    last_seen_at: t,
  };
  await sessions.insertSession(db, row);
  await sessions.findLiveSession(db, 'h', t);
  await sessions.touchSession(db, 'h', t);
  await sessions.deleteSessionsBeyond(db, fx.key, 100);
  await sessions.deleteIdleSessions(db, '2000-01-01T00:00:00.000Z');
  await sessions.deleteSession(db, 'h');
  await apiKeys.revokeApiKey(db, fx.key, now);
  await idem.saveIdempotency(db, {
    application_id: fx.app,
    key: 'k',
    method: 'POST',
    path: '/v1/endpoints',
    request_hash: 'x',
    status: 201,
    response: '{}',
    created_at: t,
  });
  await idem.findIdempotency(db, fx.app, 'k', '2000-01-01T00:00:00.000Z');
  await idem.pruneIdempotency(db, '2000-01-01T00:00:00.000Z', 1000);
  await quota.recordQuotaUsage(db, {
    application_id: fx.app,
    quota: 'q',
    subject: 's',
    used_at: t,
  });
  await quota.countQuotaUsage(db, fx.app, 'q', '2000-01-01T00:00:00.000Z');
  await quota.quotaUsesSince(db, fx.app, 'q', '2000-01-01T00:00:00.000Z');
  await quota.usedQuotaOn(db, fx.app, 'q', 's', '2000-01-01T00:00:00.000Z');
  await quota.pruneQuotaUsage(db, fx.app, 'q', '2000-01-01T00:00:00.000Z');
}

async function exerciseEndpointsAndSubscriptions(db: Sql, now: Date, fx: Fixture): Promise<void> {
  await endpoints.getEndpoint(db, fx.app, fx.endpoint);
  await endpoints.getEndpointById(db, fx.endpoint);
  await endpoints.listEndpoints(db, fx.app, { limit: 10 });
  await endpoints.listEndpoints(db, fx.app, { limit: 10, after: fx.endpoint });
  await endpoints.updateEndpoint(db, fx.app, fx.endpoint, { title: 'F' }, now);
  await endpoints.countEndpointSubscriptions(db, fx.endpoint);
  await endpoints.markEndpointFailing(db, fx.endpoint, now);
  await endpoints.markEndpointHealthy(db, fx.endpoint);
  await endpoints.countApplicationEndpoints(db, fx.app);
  await subs.getSubscription(db, fx.app, fx.sub);
  await subs.findSubscriptionToSameFeed(db, fx.endpoint, 'https://feeds.example/0/0.xml', '');
  for (const q of [{}, { endpoint: fx.endpoint }, { feed: fx.feed }, { after: fx.sub }])
    await subs.listSubscriptions(db, fx.app, { limit: 10, ...q });
  await subs.updateSubscription(db, fx.app, fx.sub, { metadata: '{}' }, now);
  await subs.applicationUsesFeed(db, fx.app, fx.feed);
  await subs.feedHasSubscription(db, fx.feed);
  await subs.feedHasActiveSubscription(db, fx.feed);
  await subs.activeSubscriptionsOfFeed(db, fx.feed, 'subscription.entries');
  await subs.countFiltered(db, fx.sub, 1);
  await subs.countApplicationSubscriptions(db, fx.app);
  await exportSubscriptionsPage(db, fx.app, fx.endpoint, null, 200);
}

async function exerciseFeeds(db: Sql, now: Date, fx: Fixture): Promise<void> {
  const later = new Date(now.getTime() + 60_000).toISOString();
  await feeds.getFeed(db, fx.feed);
  await feeds.storeFeedProbe(db, fx.feed, { identity_probe: '{}' });
  await feeds.feedProbe(db, fx.feed);
  await feeds.hasFeedProbe(db, fx.feed);
  await feeds.recordHoldReleased(db, fx.feed, 1, now);
  await feeds.addHeldDropped(db, fx.feed, 1);
  await feeds.feedsAfter(db, '', 100);
  await feeds.markFeedUnused(db, fx.feed, now);
  await feeds.restartBaselineIfIdle(db, fx.feed, now);
  await feeds.wakeFeed(db, fx.feed, now);
  await feeds.parkIdleDueFeeds(db, now, 1000);
  await feeds.countFeedStatusPage(db, 'active', '', 5000);
  for (const statuses of [undefined, ['error' as const], ['error' as const, 'gone' as const]])
    for (const after of [undefined, fx.feed])
      await feedsList.listFeedsOfApplication(db, fx.app, { limit: 10, after, statuses });
  await feeds.countFeedsOfApplication(db, fx.app);
  await feeds.recordHealthAlert(db, fx.feed, { health_alert: null, health_alert_at: null });
  await feeds.makeFeedDueNow(db, fx.feed, now);
  await poll.claimDueFeeds(db, now, 1000, 10);
  await poll.feedsToPollAfter(db, '', now, 10);
  const window = await poll.dueFeedWindow(db, now, 256);
  const leased = await poll.leaseFeeds(db, window.map((f) => f.id).slice(0, 3), now, 1000);
  await poll.releaseFeedLeases(
    db,
    leased.map((f) => f.id),
  );
  await poll.nextFeedDueAfter(db, now);
  const f = (await feeds.getFeed(db, leased[0]!.id))!;
  await poll.leaseFeeds(db, [f.id], now, 1000);
  await feeds.makeFeedDueNow(db, f.id, now); // noted on the lease: the record's endLease keeps it
  await record.recordPollSuccess(db, f.id, { ...f, next_poll_at: later }, now);
  await record.recordPollUnchanged(db, f.id, { ...f, next_poll_at: later }, 'active', now);
  await record.recordQuietUnchanged(
    db,
    f.id,
    { ...f, next_poll_at: later, interval_seconds: 900 },
    now,
  );
  await record.recordQuietUnchanged(
    db,
    f.id,
    { ...f, next_poll_at: null, interval_seconds: 900 },
    now,
  );
  await record.recordPollFailure(
    db,
    f.id,
    { errorClass: 'network', message: 'm', httpStatus: null, nextPollAt: later },
    now,
  );
  await record.recordPollThrottled(db, f.id, 429, later, now);
  await record.recordFeedGone(db, f.id, now);
  await poll.releaseAllFeedLeases(db);
}

async function exerciseEntries(db: Sql, now: Date, fx: Fixture): Promise<void> {
  await entries.storedFingerprint(db, fx.feed, 'k0');
  await entries.storedKeys(db, fx.feed, ['k0', 'k1']);
  // A feed storing many more keys than asked for: the seek per key.
  await entries.recordKeys(
    db,
    fx.feed,
    Array.from({ length: 70 }, (_, i) => ({ key: `x${i}`, fingerprint: null })),
    now,
  );
  await entries.storedKeys(db, fx.feed, ['k0']);
  await entries.markKeysSeen(db, fx.feed, ['k0'], now);
  await entries.fillFingerprints(db, fx.feed, [{ key: 'k0', fingerprint: 'f' }]);
  const held = [{ key: 'h1', entry: '{}', position: 0 }];
  await entries.holdEntries(db, fx.feed, held, now, { entries: 0, bytes: 0 }); // full: the "is it held?" probe
  await entries.holdEntries(db, fx.feed, held, now, { entries: 10, bytes: 10_000 });
  await entries.listHeldEntries(db, fx.feed);
  await entries.heldEntriesFromEnd(db, fx.feed, now.toISOString(), 10);
  await entries.countHeldEntries(db, fx.feed);
  await entries.hasHeldEntries(db, fx.feed);
  await entries.deleteHeldEntries(db, fx.feed, ['h1']);
  await entries.clearHeldEntries(db, fx.feed);
  await retention.keyPruneBound(db, fx.feed, 86_400_000, 0);
  await retention.deleteKeysWithin(
    db,
    fx.feed,
    { windowStart: now.toISOString(), last: { seenAt: now.toISOString(), key: 'k' } },
    500,
  );
  await retention.countFeedKeys(db, fx.feed);
  await retention.trimHeldEntries(db, fx.feed, 500);
}

async function exerciseEvents(db: Sql, now: Date, fx: Fixture): Promise<void> {
  const t = now.toISOString();
  await events.getEvent(db, fx.app, fx.event);
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
      await events.listEvents(db, fx.app, { limit: 10, after, ...q });
  await events.countEventsByStatus(db);
  await events.countWaitingEvents(db);
  await events.oldestSendableEventAt(db);
  for (const app of await claim.applicationsWithDueEvents(db, now)) {
    const { taken } = await claim.walkDueEvents(db, app, now, {
      full: [],
      limit: 2,
      maxRows: 100,
      take: () => true,
    });
    const leased = await claim.leaseEvents(db, taken, now, 1000);
    await claim.releaseEvents(
      db,
      leased.map((e) => e.id),
    );
  }
  await claim.nextWaitingEventAfter(db, now);
  await claim.nextEventDueAt(db);
  await claim.releaseAllEventLeases(db);
  await recordAttempt(
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
  await listAttempts(db, fx.event);
  await events.requeueEvent(db, fx.event, now);
  await events.requeueEndpointEvents(db, fx.endpoint, '2000-01-01T00:00:00.000Z', now);
  await events.hastenEndpointRetries(db, fx.endpoint, now);
  await events.hasMoreEventsThan(db, fx.sub, 100);
  await events.pruneFinishedEvents(db, t, 100);
}

async function exerciseStorage(db: Sql, fx: Fixture): Promise<void> {
  await storage.applicationStorage(db, fx.app);
  await record.recordBudgetHold(
    db,
    fx.feed,
    { last_http_status: 200, held_at: '2026-01-01' },
    new Date(),
  );
  await feeds.heldFeedsAfter(db, '', 10);
  await feeds.heldFeedsOf(db, fx.app);
  await feeds.countHeldFeedsOf(db, fx.app);
  await feeds.retryHeldFeed(db, fx.feed, new Date());
  await record.endBudgetHold(db, fx.feed);
  await storage.storedKeyCount(db, fx.feed);
  await retention.pruneKeysBeyond(db, fx.feed, [fx.entryKey], 1);
  await storage.recountFeedStorage(db, fx.feed);
  for (const app of await storage.applicationsAfter(db, '', 10))
    for (const part of ['feed', 'event'] as const) {
      const first = await storage.walkStorage(db, app, part, null, 5);
      await storage.walkStorage(db, app, part, first.last, 5);
      await storage.finishStorageWalk(db, app, part, 0);
    }
}

async function exerciseDeletions(db: Sql, now: Date, fx: Fixture): Promise<void> {
  await events.deleteSubscriptionEvents(db, fx.sub, 100);
  await subs.deleteSubscription(db, fx.app, fx.sub);
  await retention.emptyFeed(db, fx.feed, 500);
  await feeds.deleteUnusedFeed(db, fx.feed);
  await endpoints.disableEndpoint(db, fx.endpoint, 'r', now);
  const spare = newId(now); // one no subscription uses: the others' subscriptions keep theirs
  await endpoints.insertEndpoint(db, {
    id: spare,
    application_id: fx.app,
    title: 'S',
    url: 'https://hooks.example/spare',
    secret: 'whsec_x',
    created_at: now.toISOString(),
    filter_types: null,
  });
  await endpoints.deleteEndpoint(db, fx.app, spare);
}

/** The node heartbeat's statements and the roles'. */
async function exerciseNodes(db: Sql, now: Date): Promise<void> {
  const later = new Date(now.getTime() + 15_000);
  const t = now.toISOString();
  await nodes.beat(db, {
    id: 'node-1',
    name: 'one',
    version: 'test',
    started_at: t,
    seen_at: t,
    polls: 0,
    deliveries: 0,
  });
  await nodes.renewLeases(db, 'node-1', now, later);
  await nodes.liveNodes(db, now);
  await nodes.pruneNodes(db, new Date(0));
  await nodes.holdRole(db, 'maintenance', 'node-1', now, later);
  await nodes.removeNode(db, 'node-1');
  await serviceKey(db, 'exercise', 'key');
}

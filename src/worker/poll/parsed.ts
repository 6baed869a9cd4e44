// Storing a parsed document, inside the poll transaction: a baseline (the first document, and the first after a time
// with no active subscription) records keys and sends nothing; identity churn is held (actions/ingest/identity.ts); otherwise
// the new entries are recorded and become events. Then the feed's state and next poll.
import type { Ctx } from '../../context.ts';
import { queueEntryEvents, toEventEntry } from '../../actions/entry-events.ts';
import {
  queueEntryUpdates,
  recordHistory,
  storeNewVersions,
  type KeyedEntry,
} from '../../actions/entry-history.ts';
import {
  isIdentityChurn,
  planKeys,
  type IdentityKey,
  type KeyPlan,
} from '../../feed/identity/keys.ts';
import { identityProbe } from '../../feed/identity/switch.ts';
import { PARSER_VERSION } from '../../feed/parse/parse.ts';
import { nextPoll, type ScheduleLimits } from '../../feed/schedule.ts';
import { advertisedLinks } from '../../feed/websub.ts';
import { clearHeldEntries, hasHeldEntries } from '../../store/entries.ts';
import type { HistoryVia } from '../../store/entry-history.ts';
import type { Entry } from '../../feed/types.ts';
import { hasFeedProbe, type FeedRow } from '../../store/feeds.ts';
import { recordPollSuccess } from '../../store/feeds-record.ts';
import { feedHasActiveSubscription, readyBackfills } from '../../store/subscriptions.ts';
import { holdOrSwitch } from '../../actions/ingest/identity.ts';
import {
  capKeys,
  keyLookup,
  remember,
  uniqueFresh,
  type EntriesResult,
  type Fresh,
  type KeyMemo,
  type Parsed,
} from '../../actions/ingest/keys.ts';
import { splitRevealed } from '../../actions/ingest/upgrade.ts';
import { redirectState } from './redirect-state.ts';

/** What storing an outcome added: new entries (none for a baseline), events queued, backfills a baseline made ready
 *  (the backfill loop queues them), and the identity the feed moved to when a churn made it switch. */
export type Stored = {
  newEntries: number;
  events: number;
  backfills?: number;
  switchedTo?: IdentityKey;
  /** The feed was deleted while it was fetched: nothing was recorded. */
  deleted?: true;
};
/** When a document was fetched (`seenAt`: when the fetch began, its entries' first sighting) and how: a poll, or
 *  content a hub pushed (`via`, default poll; the entry history records it). */
export type Sighting = { seenAt: Date; via?: HistoryVia };

/** Stores a parsed document's entries (see storeEntries), then the feed's state and next poll. `feed` is the record
 *  as it is now (re-read in this transaction). */
export function applyParsed(
  ctx: Ctx,
  feed: FeedRow,
  outcome: Parsed,
  at: { now: Date } & Sighting,
  limits: ScheduleLimits,
): Stored {
  const { parsed, meta } = outcome;
  // No active subscription any more (all deleted or paused while this fetch ran): nothing is sent, and the next
  // document, once a subscription is active again, is a fresh baseline.
  const live = feedHasActiveSubscription(ctx.db, feed.id);
  const stored = storeEntries(ctx, feed, outcome, at, live);
  const next = nextPoll(
    {
      kind: 'success',
      publishedAt: outcome.entries.publishedAt,
      ttlSeconds: parsed.ttl_seconds,
      cacheSeconds: meta.cacheSeconds,
      previousIntervalSeconds: feed.interval_seconds,
    },
    limits,
  );
  const moved = redirectState(feed, meta.permanentRedirectTo, outcome.discoveredUrl);
  recordPollSuccess(
    ctx.db,
    feed.id,
    {
      status: stored.status,
      title: parsed.title,
      site_url: parsed.site_url,
      format: parsed.format,
      etag: meta.etag,
      last_modified: meta.lastModified,
      body_hash: outcome.bodyHash,
      last_http_status: meta.status,
      // Without a subscription the feed is not polled; due now, its fresh baseline comes as soon as one is active.
      next_poll_at: new Date(
        at.now.getTime() + (live ? next.delaySeconds : 0) * 1000,
      ).toISOString(),
      interval_seconds: next.intervalSeconds,
      ttl_seconds: parsed.ttl_seconds,
      degraded: parsed.degraded,
      ...webSubColumns(outcome),
      baseline_at: live ? (feed.baseline_at ?? at.now.toISOString()) : null,
      entry_count: feed.entry_count + stored.added,
      parser_version: PARSER_VERSION,
      held_dropped:
        stored.status === 'identity_changed' ? feed.held_dropped + (stored.heldDropped ?? 0) : 0,
      ...stored.identity,
      ...moved,
    },
    at.now,
  );
  const switched = stored.identity.identity_key !== feed.identity_key;
  return {
    newEntries: stored.fresh,
    events: stored.events,
    ...(stored.backfills ? { backfills: stored.backfills } : {}),
    ...(switched ? { switchedTo: stored.identity.identity_key } : {}),
  };
}

/** The document's entries: on a baseline their keys are recorded and nothing is sent (the backfills waiting for it
 *  are made ready); when most keys are suddenly unseen (identity churn) they are held or the feed switches identity
 *  (actions/ingest/identity.ts); else the unseen ones are recorded and queued as events. Known entries whose content changed
 *  are stored in their new version and sent to the subscriptions that asked for updates. The poll and the push path
 *  both store entries here, against the same keys, so an entry pushed then polled (or polled then pushed) is one entry;
 *  `sighting.via` says which path brought the document (the entry history records it). Then the feed's keys are kept
 *  within their cap (capKeys). */
export function storeEntries(
  ctx: Ctx,
  feed: FeedRow,
  outcome: Parsed,
  sighting: Sighting,
  live: boolean,
): EntriesResult {
  const result = storeDocument(ctx, feed, outcome, sighting, live);
  capKeys(ctx, feed.id, outcome.identities);
  return result;
}

/** storeEntries without the cap on keys. */
function storeDocument(
  ctx: Ctx,
  feed: FeedRow,
  outcome: Parsed,
  sighting: Sighting,
  live: boolean,
): EntriesResult {
  const { seenAt } = sighting;
  const via = sighting.via ?? 'poll';
  const memo = keyLookup(ctx.db, feed.id, outcome.identities, feed.identity_key);
  const plans = planKeys(outcome.identities, feed.identity_key, memo.lookup);
  if (feed.baseline_at === null || !live)
    return baseline(ctx, feed, outcome, plans, memo, { seenAt, via });
  const seen = plans.filter((p) => p.seen);
  remember(ctx.db, feed.id, seen, memo, seenAt); // known only by an alias or without a fingerprint: completed
  const known = plans.flatMap((p, i) => (p.seen ? [keyed(outcome, p, i)] : []));
  const source = { feed, meta: outcome.parsed };
  const updates = queueEntryUpdates(
    ctx,
    source,
    storeNewVersions(ctx, feed.id, known, seenAt),
    seenAt,
  );
  // A newer parser may read old entries an older one could not: recorded as seen, never sent.
  const upgrade = splitRevealed(uniqueFresh(outcome.entries, plans), feed, PARSER_VERSION);
  const revealed = remember(
    ctx.db,
    feed.id,
    upgrade.revealed.map((f) => f.plan),
    memo,
    seenAt,
  );
  const firstSeenAt = seenAt.toISOString();
  recordHistory(
    ctx,
    feed.id,
    upgrade.revealed.map((f) => keyedFresh(outcome, f)),
    {
      firstSeenAt,
      fate: 'revealed',
      via,
    },
  );
  const fresh = upgrade.toSend;
  const result = storeFresh(ctx, feed, outcome, { fresh, total: plans.length, memo }, sighting);
  return { ...result, added: result.added + revealed, events: result.events + updates };
}

/** The document's entry at `position` with the key planned for it and its content hash. The entry is read from the
 *  packed document when asked for: a known entry is compared by its hash, and read only when that changed. */
function keyed(outcome: Parsed, plan: KeyPlan, position: number): KeyedEntry {
  return {
    key: plan.key,
    source: plan.source,
    get entry() {
      return outcome.entries.at(position);
    },
    hash: outcome.contentHashes[position]!,
  };
}
/** An unseen entry with its key. */
function keyedFresh(outcome: Parsed, f: Fresh): KeyedEntry {
  return keyed(outcome, f.plan, f.position);
}

/** The unseen entries to send: held (or the feed switches identity) when most of the document is unseen, else
 *  recorded and queued as events. */
function storeFresh(
  ctx: Ctx,
  feed: FeedRow,
  outcome: Parsed,
  unseen: { fresh: Fresh[]; total: number; memo: KeyMemo },
  sighting: Sighting,
): EntriesResult {
  const { fresh, total, memo } = unseen;
  const { seenAt } = sighting;
  // A hold outlives a failed poll (which records status error): held entries, not the last status, decide.
  const status = hasHeldEntries(ctx.db, feed.id) ? 'identity_changed' : 'active';
  if (isIdentityChurn({ knownBefore: feed.entry_count, total, unseen: fresh.length }))
    return holdOrSwitch(ctx, feed, outcome, fresh, seenAt);
  const identity = {
    identity_key: feed.identity_key,
    // The probe follows the last good document, so a later churn can tell which entries it already had.
    identity_probe:
      fresh.length > 0 || !hasFeedProbe(ctx.db, feed.id)
        ? JSON.stringify(identityProbe(outcome.identities, feed.identity_key))
        : undefined,
    identity_rotations: 0,
  };
  if (fresh.length === 0) return { status, added: 0, fresh: 0, events: 0, identity };
  const added = remember(
    ctx.db,
    feed.id,
    fresh.map((f) => f.plan),
    memo,
    seenAt,
  );
  recordHistory(
    ctx,
    feed.id,
    fresh.map((f) => keyedFresh(outcome, f)),
    {
      firstSeenAt: seenAt.toISOString(),
      fate: 'new',
      via: sighting.via ?? 'poll',
    },
  );
  const events = queueEntryEvents(
    ctx,
    feed,
    outcome.parsed,
    fresh.map((f) => ({
      entry: toEventEntry(f.plan.key, f.entry, seenAt),
      firstSeenAt: seenAt.toISOString(),
    })),
    seenAt,
  );
  return { status, added, fresh: fresh.length, events, identity };
}

/** A baseline: every key is recorded, nothing is sent, and any hold ends (what was held is part of what the feed
 *  holds now). The backfills that waited for it are made ready, not built: the backfill loop queues them a chunk at a
 *  time, so a baseline costs the same however many subscriptions wait for it and however much they ask. */
function baseline(
  ctx: Ctx,
  feed: FeedRow,
  outcome: Parsed,
  plans: KeyPlan[],
  memo: KeyMemo,
  sighting: Required<Sighting>,
): EntriesResult {
  const { seenAt, via } = sighting;
  const added = remember(ctx.db, feed.id, plans, memo, seenAt);
  clearHeldEntries(ctx.db, feed.id);
  const all = uniqueFresh(
    outcome.entries,
    plans.map((p) => ({ ...p, seen: false })),
  );
  recordHistory(
    ctx,
    feed.id,
    all.map((f) => keyedFresh(outcome, f)),
    {
      firstSeenAt: seenAt.toISOString(),
      fate: 'baseline',
      via,
    },
  );
  const backfills = readyBackfills(ctx.db, feed.id, seenAt.toISOString());
  return {
    status: 'active',
    added,
    fresh: 0,
    events: 0,
    backfills,
    identity: {
      identity_key: feed.identity_key,
      identity_probe: JSON.stringify(identityProbe(outcome.identities, feed.identity_key)),
      identity_rotations: 0,
    },
  };
}

/** The hub and self URL the feed records: WebSub §4, the Link headers first, then the document. */
function webSubColumns({ meta, parsed }: Parsed): Pick<FeedRow, 'hub_url' | 'self_url'> {
  const links = advertisedLinks(meta.linkHeader, meta.finalUrl, {
    hub: parsed.hub_url,
    self: parsed.self_url,
  });
  return { hub_url: links.hub, self_url: links.self };
}

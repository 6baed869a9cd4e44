// Storing a read feed document's entries, whatever brought it (a poll or a hub's push), inside the transaction that
// records it: a baseline (the first document, and the first after a time with no active subscription) records keys and
// sends nothing; identity churn is held (identity.ts); otherwise the unseen entries are recorded and become events, and
// known entries whose content changed become updates. Both paths key entries alike, so an entry pushed then polled
// (or polled then pushed) is one entry.
import type { Ctx } from '../../context.ts';
import { queueEntryEvents, toEventEntry } from '../entry-events.ts';
import {
  queueEntryUpdates,
  recordHistory,
  storeNewVersions,
  type KeyedEntry,
} from '../entry-history.ts';
import type { FeedDocument } from '../../feed/fetch/refresh.ts';
import { isIdentityChurn, type KeyPlan } from '../../feed/identity/keys.ts';
import { identityProbe } from '../../feed/identity/switch.ts';
import { PARSER_VERSION } from '../../feed/parse/parse.ts';
import { clearHeldEntries, hasHeldEntries } from '../../store/entries.ts';
import type { HistoryVia } from '../../store/entry-history.ts';
import { hasFeedProbe, type FeedRow } from '../../store/feeds.ts';
import { readyBackfills } from '../../store/subscriptions.ts';
import { holdOrSwitch } from './identity.ts';
import {
  capKeys,
  keyLookup,
  remember,
  uniqueFresh,
  type EntriesResult,
  type Fresh,
  type KeyMemo,
} from './keys.ts';
import { splitRevealed } from './upgrade.ts';

/** When a document was fetched (`seenAt`: when the fetch began, its entries' first sighting) and how: a poll, or
 *  content a hub pushed (`via`, default poll; the entry history records it). */
export type Sighting = { seenAt: Date; via?: HistoryVia };

/** The document's entries: on a baseline their keys are recorded and nothing is sent (the backfills waiting for it
 *  are made ready); when most keys are suddenly unseen (identity churn) they are held or the feed switches identity
 *  (identity.ts); else the unseen ones are recorded and queued as events. Known entries whose content changed
 *  are stored in their new version and sent to the subscriptions that asked for updates. The poll and the push path
 *  both store entries here, against the same keys, so an entry pushed then polled (or polled then pushed) is one entry;
 *  `sighting.via` says which path brought the document (the entry history records it). Then the feed's keys are kept
 *  within their cap (capKeys). The caller holds the feed's row (lockFeed) since before it read `feed`, so two
 *  transactions storing one feed's entries take turns. */
export async function storeEntries(
  ctx: Ctx,
  feed: FeedRow,
  doc: FeedDocument,
  sighting: Sighting,
  live: boolean,
): Promise<EntriesResult> {
  const result = await storeDocument(ctx, feed, doc, sighting, live);
  await capKeys(ctx, feed.id, doc.identities);
  return result;
}

/** storeEntries without the cap on keys. */
async function storeDocument(
  ctx: Ctx,
  feed: FeedRow,
  doc: FeedDocument,
  sighting: Sighting,
  live: boolean,
): Promise<EntriesResult> {
  const { seenAt } = sighting;
  const via = sighting.via ?? 'poll';
  const memo = await keyLookup(ctx.db, feed.id, doc.identities, feed.identity_key);
  const plans = await memo.plan(doc.identities, feed.identity_key);
  if (feed.baseline_at === null || !live)
    return baseline(ctx, feed, doc, plans, memo, { seenAt, via });
  const seen = plans.filter((p) => p.seen);
  await remember(ctx.db, feed.id, seen, memo, seenAt); // known only by an alias or without a fingerprint: completed
  const known = plans.flatMap((p, i) => (p.seen ? [keyed(doc, p, i)] : []));
  const source = { feed, meta: doc.parsed };
  const versions = await storeNewVersions(ctx, feed.id, known, seenAt);
  // A newer parser may read a known entry differently (a field it now falls back to, text it now decodes): the entry
  // did not change, so its new version is stored and nothing is sent.
  const updates =
    feed.parser_version < PARSER_VERSION
      ? 0
      : await queueEntryUpdates(ctx, source, versions, seenAt);
  // A newer parser may read old entries an older one could not: recorded as seen, never sent.
  const upgrade = splitRevealed(uniqueFresh(doc.entries, plans), feed, PARSER_VERSION);
  const revealed = await remember(
    ctx.db,
    feed.id,
    upgrade.revealed.map((f) => f.plan),
    memo,
    seenAt,
  );
  const firstSeenAt = seenAt.toISOString();
  await recordHistory(
    ctx,
    feed.id,
    upgrade.revealed.map((f) => keyedFresh(doc, f)),
    {
      firstSeenAt,
      fate: 'revealed',
      via,
    },
  );
  const fresh = upgrade.toSend;
  const result = await storeFresh(ctx, feed, doc, { fresh, total: plans.length, memo }, sighting);
  return {
    ...result,
    added: result.added + revealed,
    events: result.events + updates,
  };
}

/** The document's entry at `position` with the key planned for it and its content hash. The entry is read from the
 *  packed document when asked for: a known entry is compared by its hash, and read only when that changed. */
function keyed(doc: FeedDocument, plan: KeyPlan, position: number): KeyedEntry {
  return {
    key: plan.key,
    source: plan.source,
    get entry() {
      return doc.entries.at(position);
    },
    hash: doc.contentHashes[position]!,
    sourceHash: doc.sourceHashes[position] ?? null,
  };
}
/** An unseen entry with its key. */
function keyedFresh(doc: FeedDocument, f: Fresh): KeyedEntry {
  return keyed(doc, f.plan, f.position);
}

/** The unseen entries to send: held (or the feed switches identity) when most of the document is unseen, else
 *  recorded and queued as events. */
async function storeFresh(
  ctx: Ctx,
  feed: FeedRow,
  doc: FeedDocument,
  unseen: { fresh: Fresh[]; total: number; memo: KeyMemo },
  sighting: Sighting,
): Promise<EntriesResult> {
  const { fresh, total, memo } = unseen;
  const { seenAt } = sighting;
  // A hold outlives a failed poll (which records status error): held entries, not the last status, decide.
  const status = (await hasHeldEntries(ctx.db, feed.id)) ? 'identity_changed' : 'active';
  if (isIdentityChurn({ knownBefore: feed.entry_count, total, unseen: fresh.length }))
    return holdOrSwitch(ctx, feed, doc, fresh, seenAt);
  const identity = {
    identity_key: feed.identity_key,
    // The probe follows the last good document, so a later churn can tell which entries it already had.
    identity_probe:
      fresh.length > 0 || !(await hasFeedProbe(ctx.db, feed.id))
        ? JSON.stringify(identityProbe(doc.identities, feed.identity_key))
        : undefined,
    identity_rotations: 0,
  };
  if (fresh.length === 0) return { status, added: 0, fresh: 0, events: 0, identity };
  const added = await remember(
    ctx.db,
    feed.id,
    fresh.map((f) => f.plan),
    memo,
    seenAt,
  );
  await recordHistory(
    ctx,
    feed.id,
    fresh.map((f) => keyedFresh(doc, f)),
    {
      firstSeenAt: seenAt.toISOString(),
      fate: 'new',
      via: sighting.via ?? 'poll',
    },
  );
  const events = await queueEntryEvents(
    ctx,
    feed,
    doc.parsed,
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
async function baseline(
  ctx: Ctx,
  feed: FeedRow,
  doc: FeedDocument,
  plans: KeyPlan[],
  memo: KeyMemo,
  sighting: Required<Sighting>,
): Promise<EntriesResult> {
  const { seenAt, via } = sighting;
  const added = await remember(ctx.db, feed.id, plans, memo, seenAt);
  await clearHeldEntries(ctx.db, feed.id);
  const all = uniqueFresh(
    doc.entries,
    plans.map((p) => ({ ...p, seen: false })),
  );
  await recordHistory(
    ctx,
    feed.id,
    all.map((f) => keyedFresh(doc, f)),
    {
      firstSeenAt: seenAt.toISOString(),
      fate: 'baseline',
      via,
    },
  );
  const backfills = await readyBackfills(ctx.db, feed.id, seenAt.toISOString());
  return {
    status: 'active',
    added,
    fresh: 0,
    events: 0,
    backfills,
    identity: {
      identity_key: feed.identity_key,
      identity_probe: JSON.stringify(identityProbe(doc.identities, feed.identity_key)),
      identity_rotations: 0,
    },
  };
}

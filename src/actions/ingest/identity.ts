// Identity churn inside the transaction that stores a document: the unseen entries are held, up to the feed's cap;
// when the keys keep changing poll after poll, the feed switches to the first later identity source that is stable and
// the hold ends without re-sending what was seen before it began.
import type { Ctx } from '../../context.ts';
import { queueEntryEvents, toEventEntry, type SeenEntry } from '../entry-events.ts';
import { recordHistory } from '../entry-history.ts';
import { queueIdentityHold } from '../feed-events.ts';
import { contentHash } from '../../feed/identity/content-hash.ts';
import { entryIdentities, type IdentityKey } from '../../feed/identity/keys.ts';
import {
  identityProbe,
  probeKey,
  readProbe,
  ROTATIONS_TO_SWITCH,
  stableSource,
} from '../../feed/identity/switch.ts';
import type { FeedDocument } from '../../feed/fetch/refresh.ts';
import type { Entry } from '../../feed/types.ts';
import {
  clearHeldEntries,
  holdEntries,
  listHeldEntries,
  type HoldResult,
} from '../../store/entries.ts';
import { feedProbe, type FeedRow } from '../../store/feeds.ts';
import { keyLookup, remember, uniqueFresh, type EntriesResult, type Fresh } from './keys.ts';

/** Share of a document that must be newly held for a poll to count as the keys changing again. */
const ROTATION_SHARE = 0.8;

/** Holds the unseen entries, as many as the feed's cap ([retention] held_entries_per_feed, held_bytes_per_feed) lets
 *  it keep (the others are only counted: a feed that keeps churning stops growing), and marks the feed
 *  identity_changed. When most of the document was unseen and not held yet (the keys changed once more) for the
 *  ROTATIONS_TO_SWITCH-th time, and a later source is stable, switches to it. */
export async function holdOrSwitch(
  ctx: Ctx,
  feed: FeedRow,
  doc: FeedDocument,
  fresh: Fresh[],
  seenAt: Date,
): Promise<EntriesResult> {
  const { retention } = ctx.config;
  const kept = await holdEntries(
    ctx.db,
    feed.id,
    fresh.map((f) => ({
      key: f.plan.key,
      fingerprint: f.plan.fingerprint,
      key_source: f.plan.source,
      entry: JSON.stringify(f.entry),
      position: f.position,
    })),
    seenAt,
    { entries: retention.held_entries_per_feed, bytes: retention.held_bytes_per_feed },
  );
  const announced = await queueIdentityHold(ctx, feed, kept.added, seenAt); // feed.identity_hold when the hold starts
  const total = doc.identities.length;
  const rotations = feed.identity_rotations + (changedAgain(kept, total) ? 1 : 0);
  const held: EntriesResult = {
    status: 'identity_changed',
    added: 0,
    fresh: 0,
    events: announced,
    identity: {
      identity_key: feed.identity_key,
      identity_rotations: rotations,
    },
    heldDropped: kept.dropped,
  };
  if (rotations < ROTATIONS_TO_SWITCH) return held;
  const probe = readProbe(await feedProbe(ctx.db, feed.id));
  const source = stableSource(doc.identities, feed.identity_key, probe);
  return source === null
    ? held
    : await switchIdentity(ctx, feed, doc, { source, known: probe[source] ?? [] }, seenAt);
}

/** Whether a held document's keys changed once more: most of it is unseen and was not held yet. A full hold cannot
 *  tell an entry it left out before from a new one, so there most of what it holds must also be gone from the
 *  document: a one-time change of a document larger than the hold keeps being held for a person, as a smaller one. */
function changedAgain(kept: HoldResult, total: number): boolean {
  if (kept.added + kept.dropped <= total * ROTATION_SHARE) return false;
  return kept.dropped === 0 || kept.repeated <= Math.min(total, kept.before) * (1 - ROTATION_SHARE);
}

/** Keys the feed from `source` on: entries the last good document had (the probe) count as seen, every other entry of
 *  this document or of the hold is sent once, first seen when it was first held; all their keys are recorded under
 *  the new source, and the hold ends. */
async function switchIdentity(
  ctx: Ctx,
  feed: FeedRow,
  doc: FeedDocument,
  to: { source: IdentityKey; known: readonly string[] },
  seenAt: Date,
): Promise<EntriesResult> {
  const { source } = to;
  const before = new Set(to.known);
  const held = await listHeldEntries(ctx.db, feed.id);
  const heldEntries = held.map((h) => JSON.parse(h.entry) as Entry);
  const heldIds = entryIdentities(heldEntries, doc.base);
  const firstHeld = new Map<string, string>();
  held.forEach((h, i) => {
    const k = probeKey(heldIds[i]!, source);
    const t = firstHeld.get(k);
    if (t === undefined || h.held_at < t) firstHeld.set(k, h.held_at);
  });
  // Entries seen only while held (no longer in the document) are sent too, once each.
  const inDocument = new Set(doc.identities.map((id) => probeKey(id, source)));
  const onlyHeld = heldIds.flatMap((id, i) => (inDocument.has(probeKey(id, source)) ? [] : [i]));
  const ids = [...doc.identities, ...onlyHeld.map((i) => heldIds[i]!)];
  const entries = [...doc.entries.all(), ...onlyHeld.map((i) => heldEntries[i]!)];
  const memo = await keyLookup(ctx.db, feed.id);
  const plans = (await memo.plan(ids, source)).map((p, i) =>
    before.has(probeKey(ids[i]!, source)) ? { ...p, seen: true } : p,
  );
  const fresh = uniqueFresh(entries, plans);
  await remember(ctx.db, feed.id, plans, memo, seenAt);
  const firstSeen = (f: Fresh) =>
    firstHeld.get(probeKey(ids[f.position]!, source)) ?? seenAt.toISOString();
  const sent: SeenEntry[] = fresh.map((f) => {
    const at = firstSeen(f);
    return { entry: toEventEntry(f.plan.key, f.entry, new Date(at)), firstSeenAt: at };
  });
  const events = await queueEntryEvents(ctx, feed, doc.parsed, sent, seenAt);
  // The document's entries come with their hashes; the held ones are hashed here (a hold is bounded).
  const keyed = fresh.map((f) => ({
    key: f.plan.key,
    source: f.plan.source,
    entry: f.entry,
    hash: doc.contentHashes[f.position] ?? contentHash(f.entry),
    sourceHash: doc.sourceHashes[f.position] ?? null,
  }));
  await recordHistory(ctx, feed.id, keyed, {
    firstSeenAt: (e) => sent.find((s) => s.entry.id === e.key)!.firstSeenAt,
    fate: 'new',
    via: 'poll',
  });
  await clearHeldEntries(ctx.db, feed.id);
  return {
    status: 'active',
    added: fresh.length,
    fresh: fresh.length,
    events,
    identity: {
      identity_key: source,
      identity_probe: JSON.stringify(identityProbe(doc.identities, source)),
      identity_rotations: 0,
    },
  };
}

// Entry keys inside the transaction that stores a document: what the feed stored under a key (each key read once),
// the document's unseen entries, and recording planned keys so that what was known only by an old spelling, or
// without a fingerprint, is known in full afterwards.
import { CHUNK_ROWS } from '../chunks.ts';
import type { Ctx } from '../../context.ts';
import type { Sql } from '../../db/engine.ts';
import {
  planKeys,
  recordableKeys,
  sourcesFrom,
  type EntryIdentity,
  type IdentityKey,
  type KeyLookup,
  type KeyPlan,
} from '../../feed/identity/keys.ts';
import type { Entry } from '../../feed/types.ts';
import {
  fillFingerprints,
  markKeysSeen,
  recordKeys,
  SEEN_AT_GRANULARITY_MS,
  storedKeys,
} from '../../store/entries.ts';
import { pruneKeysBeyond } from '../../store/entries-retention.ts';
import type { FeedRow } from '../../store/feeds.ts';
import { storedKeyCount } from '../../store/storage.ts';

/** What storing the entries decided for the feed record. */
export type EntriesResult = {
  status: FeedRow['status'];
  /** Entries the feed now counts as seen in addition to before. */
  added: number;
  /** Entries sent (none for a baseline or a hold). */
  fresh: number;
  events: number;
  /** Backfills a baseline made ready. */
  backfills?: number;
  identity: Pick<FeedRow, 'identity_key' | 'identity_rotations'> & {
    /** The feed's new identity probe (JSON, stored apart from its row); absent: the stored one stays. */
    identity_probe?: string;
  };
  /** Unseen entries a full churn hold left out (actions/ingest/identity.ts); the feed counts them until its hold ends. */
  heldDropped?: number;
};

/** An unseen entry of the document, once per key, with its place in the document. */
export type Fresh = { plan: KeyPlan; entry: Entry; position: number };

/** A per-transaction memo of the feed's stored keys. `plan` plans a document's keys (planKeys), reading the keys it
 *  asks about that the memo does not know yet; `lookup` answers from the memo alone, for keys a plan asked about;
 *  `note` keeps it true after recording; `shownSince` says whether a document showed a stored key at or after a time
 *  (false when the memo does not know). */
export type KeyMemo = {
  plan(ids: EntryIdentity[], identityKey: IdentityKey): Promise<KeyPlan[]>;
  lookup: KeyLookup;
  note(key: string, fingerprint: string | null): void;
  shownSince(key: string, since: string): boolean;
};

type StoredKey = { fingerprint: string | null; seenAt: string | null } | undefined;

/** Reads what the feed stored under a key, once per key for the life of the memo (one poll transaction). The keys a
 *  document's entries most likely have (`identities`: each entry's key from the feed's identity source on, its link
 *  alias and legacy key) are read in one statement first, not a key at a time: for a long document, reads one by
 *  one would hold the event loop for milliseconds on every poll. */
export async function keyLookup(
  db: Sql,
  feedId: string,
  identities: readonly EntryIdentity[] = [],
  identityKey?: IdentityKey,
): Promise<KeyMemo> {
  const cache = new Map<string, StoredKey>();
  if (identityKey !== undefined && identities.length > 0) {
    const sources = sourcesFrom(identityKey);
    for (const id of identities) {
      for (const s of sources) {
        const key = id.keys[s];
        if (key === null) continue;
        cache.set(key, undefined);
        break;
      }
      if (id.linkAlias !== null) cache.set(id.linkAlias, undefined);
      if (id.legacy !== null) cache.set(id.legacy, undefined);
    }
    for (const { key, fingerprint, seen_at: seenAt } of await storedKeys(db, feedId, [
      ...cache.keys(),
    ]))
      cache.set(key, { fingerprint, seenAt });
  }
  const lookup: KeyLookup = (key) => cache.get(key)?.fingerprint;
  return {
    // planKeys is pure and synchronous: a first run notes the keys it asks about that the memo lacks (a key a document
    // falls back to past its first source), they are read in one statement, and it runs again; each run can only ask
    // about keys of a later source, so it ends within as many runs as there are sources.
    async plan(ids, identityKey) {
      for (;;) {
        const unknown = new Set<string>();
        const plans = planKeys(ids, identityKey, (key) => {
          if (!cache.has(key)) unknown.add(key);
          return lookup(key);
        });
        if (unknown.size === 0) return plans;
        for (const key of unknown) cache.set(key, undefined);
        for (const { key, fingerprint, seen_at: seenAt } of await storedKeys(db, feedId, [
          ...unknown,
        ]))
          cache.set(key, { fingerprint, seenAt });
      }
    },
    lookup,
    note: (key, fingerprint) => {
      cache.set(key, { fingerprint, seenAt: null });
    },
    shownSince: (key, since) => {
      const seenAt = cache.get(key)?.seenAt;
      return seenAt !== undefined && seenAt !== null && seenAt >= since;
    },
  };
}

/** Records the plans' keys that are not stored yet (with their aliases and fingerprints), fills the fingerprint of
 *  stored keys that have none (recorded before fingerprints existed), and notes that the document showed the stored
 *  ones (their seen_at, which keeps them from being pruned). Returns how many keys were new. */
export async function remember(
  db: Sql,
  feedId: string,
  plans: KeyPlan[],
  memo: KeyMemo,
  at: Date,
): Promise<number> {
  const missing = new Map<string, KeyPlan>();
  const unprinted: { key: string; fingerprint: string }[] = [];
  const shown: string[] = [];
  for (const p of plans) {
    const stored = memo.lookup(p.key);
    if (stored === undefined) missing.set(p.key, missing.get(p.key) ?? p);
    else shown.push(p.key);
    if (stored === null && p.fingerprint !== null)
      unprinted.push({ key: p.key, fingerprint: p.fingerprint });
  }
  await fillFingerprints(db, feedId, unprinted);
  // A key shown within the last day keeps its seen_at (markKeysSeen's rule): not even an UPDATE that changes nothing.
  const stale = new Date(at.getTime() - SEEN_AT_GRANULARITY_MS).toISOString();
  await markKeysSeen(
    db,
    feedId,
    shown.filter((key) => !memo.shownSince(key, stale)),
    at,
  );
  const added = await recordKeys(db, feedId, missing.values(), at);
  for (const p of [...missing.values(), ...unprinted]) memo.note(p.key, p.fingerprint);
  return added;
}

/** Keeps the feed within [retention] entry_keys_max_per_feed once a document's keys are stored: past it, deletes its
 *  least recently shown keys that the document does not show under any source, link alias or old spelling, refined by
 *  an identifier or not (so no entry it shows looks new at the next poll), at most CHUNK_ROWS per poll (a feed far over
 *  a lowered limit comes down over its next polls). Returns how many keys went. Call inside the poll transaction. */
export async function capKeys(
  ctx: Ctx,
  feedId: string,
  identities: readonly EntryIdentity[],
): Promise<number> {
  const over =
    (await storedKeyCount(ctx.db, feedId)) - ctx.config.retention.entry_keys_max_per_feed;
  if (over <= 0) return 0;
  const keep = identities.flatMap(recordableKeys);
  return pruneKeysBeyond(ctx.db, feedId, keep, Math.min(over, CHUNK_ROWS));
}

/** Entries whose key is unseen, once each, in document order (each read from `entries` only if it is one). */
export function uniqueFresh(
  entries: { at(position: number): Entry | undefined },
  plans: KeyPlan[],
): Fresh[] {
  const taken = new Set<string>();
  const out: Fresh[] = [];
  plans.forEach((plan, i) => {
    if (plan.seen || taken.has(plan.key)) return;
    taken.add(plan.key);
    out.push({ plan, entry: entries.at(i)!, position: i });
  });
  return out;
}

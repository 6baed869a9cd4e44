// Entry keys inside the poll transaction: what the feed stored under a key (each key read once), the document's unseen
// entries, and recording planned keys so that what was known only by an old spelling, or without a fingerprint, is
// known in full afterwards.
import type { Db } from '../db/open.ts';
import type { KeyLookup, KeyPlan } from '../feed/identity.ts';
import type { RefreshOutcome } from '../feed/refresh.ts';
import type { Entry } from '../feed/types.ts';
import { fillFingerprints, markKeysSeen, recordKeys, storedFingerprint } from '../store/entries.ts';
import type { FeedRow } from '../store/feeds.ts';

export type Parsed = Extract<RefreshOutcome, { kind: 'parsed' }>;

/** What storing the entries decided for the feed record. */
export type EntriesResult = {
  status: FeedRow['status'];
  /** Entries the feed now counts as seen in addition to before. */
  added: number;
  /** Entries sent (none for a baseline or a hold). */
  fresh: number;
  events: number;
  identity: Pick<FeedRow, 'identity_key' | 'identity_probe' | 'identity_rotations'>;
  /** Unseen entries a full churn hold left out (poll-identity.ts); the feed counts them until its hold ends. */
  heldDropped?: number;
};

/** An unseen entry of the document, once per key, with its place in the document. */
export type Fresh = { plan: KeyPlan; entry: Entry; position: number };

/** A per-transaction memo of the feed's stored keys; `note` keeps it true after recording. */
export type KeyMemo = { lookup: KeyLookup; note(key: string, fingerprint: string | null): void };

/** Reads what the feed stored under a key, once per key for the life of the memo (one poll transaction). */
export function keyLookup(db: Db, feedId: string): KeyMemo {
  const cache = new Map<string, string | null | undefined>();
  return {
    lookup: (key) => {
      if (cache.has(key)) return cache.get(key);
      const stored = storedFingerprint(db, feedId, key);
      cache.set(key, stored);
      return stored;
    },
    note: (key, fingerprint) => {
      cache.set(key, fingerprint);
    },
  };
}

/** Records the plans' keys that are not stored yet (with their aliases and fingerprints), fills the fingerprint of
 *  stored keys that have none (recorded before fingerprints existed), and notes that the document showed the stored
 *  ones (their seen_at, which keeps them from being pruned). Returns how many keys were new. */
export function remember(
  db: Db,
  feedId: string,
  plans: KeyPlan[],
  memo: KeyMemo,
  at: Date,
): number {
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
  fillFingerprints(db, feedId, unprinted);
  markKeysSeen(db, feedId, shown, at);
  const added = recordKeys(db, feedId, missing.values(), at);
  for (const p of [...missing.values(), ...unprinted]) memo.note(p.key, p.fingerprint);
  return added;
}

/** Entries whose key is unseen, once each, in document order. */
export function uniqueFresh(entries: Entry[], plans: KeyPlan[]): Fresh[] {
  const taken = new Set<string>();
  const out: Fresh[] = [];
  plans.forEach((plan, i) => {
    if (plan.seen || taken.has(plan.key)) return;
    taken.add(plan.key);
    out.push({ plan, entry: entries[i]!, position: i });
  });
  return out;
}

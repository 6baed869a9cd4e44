// Entry identity: stable per-entry keys and the GUID-churn guard decision (pure).
import { createHash } from 'node:crypto';
import { resolveUrl } from './parse-urls.ts';
import type { Entry } from './types.ts';

const DEFAULT_CHURN_THRESHOLD = 0.8;
const DEFAULT_CHURN_MIN_ITEMS = 10;

/** Stable key of each entry (32 lowercase hex chars = first 128 bits of SHA-256), same order as
 *  input: guid/id → resolved url → first enclosure url → title+content+published date.
 *  Repeated guids inside one document are disambiguated (deterministically, so the same
 *  document always yields the same keys).
 *  `feedUrl` only resolves a relative url; it is not hashed, so keys survive a feed URL change. */
export function entryKeys(entries: Entry[], feedUrl: string): string[] {
  const bases = entries.map((e) => baseIdentity(e, feedUrl));
  const counts = new Map<string, number>();
  for (const b of bases) counts.set(b, (counts.get(b) ?? 0) + 1);
  const seen = new Map<string, number>();
  return bases.map((b, i) => {
    if (counts.get(b) === 1) return hash(b);
    // Every member of a duplicate group (not just the later ones) gets a content-derived key, so a
    // reused guid at the top of a newest-first feed cannot hide the new entry behind the old key.
    const e = entries[i]!;
    const refined = [
      b,
      'dup',
      e.url ?? '',
      e.key_source.title ?? '',
      e.published_at ?? '',
      e.updated_at ?? '',
    ].join('\u0000');
    const n = (seen.get(refined) ?? 0) + 1;
    seen.set(refined, n);
    return hash(n === 1 ? refined : `${refined}\u0000#${n}`);
  });
}

/** Churn guard decision: true when a feed with real history (at least minItems keys known) presents mostly unseen
 *  keys: unseen/total > threshold (default 0.8) with total >= minItems (default 10). A young feed that gains a burst of
 *  entries is not churn: with few known keys, a big first batch is ordinary publishing. Pure. */
export function isIdentityChurn(a: {
  knownBefore: number;
  total: number;
  unseen: number;
  threshold?: number;
  minItems?: number;
}): boolean {
  const threshold = a.threshold ?? DEFAULT_CHURN_THRESHOLD;
  const minItems = a.minItems ?? DEFAULT_CHURN_MIN_ITEMS;
  if (a.knownBefore < minItems || a.total <= 0 || a.total < minItems) return false;
  return a.unseen / a.total > threshold;
}

// The first non-empty identity source, tagged so a guid never collides with an equal-looking URL.
function baseIdentity(e: Entry, feedUrl: string): string {
  const guid = e.guid?.trim();
  if (guid) return `guid\u0000${guid}`;
  const url = resolveUrl(e.url, safeBase(feedUrl));
  if (url) return `url\u0000${url}`;
  const enclosure = e.enclosures[0]?.url;
  if (enclosure) return `enclosure\u0000${enclosure}`;
  return ['text', e.key_source.title ?? '', e.key_source.body ?? '', e.published_at ?? ''].join(
    '\u0000',
  );
}

function safeBase(feedUrl: string): string | null {
  return resolveUrl(feedUrl, null);
}

function hash(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex').slice(0, 32);
}

// Entry identity: each entry's candidate keys per source (guid, link, enclosure, content) and what tells apart two
// entries that share one; the keys version 1 computed, so upgraded databases keep matching; the churn-guard decision.
import { hash as digest } from 'node:crypto';
import { refine, refinedBy } from './refine.ts';
import { shortHash as hash } from './short-hash.ts';
import { enclosureIdentity, linkKeyer, stripTracking } from './urls.ts';
import { resolveUrl } from '../parse/urls.ts';
import type { Entry } from '../types.ts';

const DEFAULT_CHURN_THRESHOLD = 0.8;
const DEFAULT_CHURN_MIN_ITEMS = 10;
/** A fingerprint's parts: link, title, published date, first enclosure (8 hex chars each, empty when absent). */
const PARTS = 4;

/** The sources an entry key can come from, in order of preference; a feed keys from its `identity_key` onward. */
export const IDENTITY_KEYS = ['guid', 'link', 'enclosure', 'content'] as const;
export type IdentityKey = (typeof IDENTITY_KEYS)[number];

/** Where a document came from: links are keyed as if resolved against `keyBase` (the subscribed or discovered URL),
 *  not against `documentUrl` (where redirects led), so a feed that starts redirecting keeps its keys. */
export type KeyBase = { keyBase: string; documentUrl: string };

/** One entry's identity candidates. Keys are 32 lowercase hex characters (the first 128 bits of SHA-256). */
export type EntryIdentity = {
  /** The key each source gives, null when the entry lacks that source; content always gives one. */
  keys: { guid: string | null; link: string | null; enclosure: string | null; content: string };
  /** The link keyed as resolved, when keying it against the subscribed URL changed it (a cross-origin redirect). */
  linkAlias: string | null;
  /** The key feedsub 1.x gave this entry when it differs from every key above (a stripped tracking parameter, an
   *  enclosure's query, a repeated guid); matching it means the entry was seen before the upgrade. */
  legacy: string | null;
  /** What tells two entries under one key apart: short hashes of link, title, published date and first enclosure. */
  fingerprint: string;
  /** What tells apart entries that share a key and a fingerprint: the hash of the identifier the feed gives besides its
   *  guid (Entry key_source.id), null when it gives none. */
  idKey: string | null;
};

/** The identity candidates of a document's entries, in document order. Pure. */
export function entryIdentities(entries: Entry[], base: KeyBase): EntryIdentity[] {
  const texts = identityTexts(entries, base);
  const legacy = legacyTexts(entries, texts);
  return texts.map((t, i) => {
    const old = legacy[i]!;
    const current = [t.guid, t.link, t.enclosure, t.content, t.alias];
    return {
      keys: {
        guid: t.guid === null ? null : hash(t.guid),
        link: t.link === null ? null : hash(t.link),
        enclosure: t.enclosure === null ? null : hash(t.enclosure),
        content: hash(t.content),
      },
      linkAlias: t.alias === null || t.alias === t.link ? null : hash(t.alias),
      legacy: current.includes(old) ? null : hash(old),
      fingerprint: t.fingerprint,
      idKey: t.id === null ? null : hash(t.id),
    };
  });
}

/** What each key hashes, tagged by source so a guid never collides with an equal-looking URL; `resolved` is the link
 *  as the parser resolved it (what version 1 keyed). */
type IdentityTexts = {
  guid: string | null;
  link: string | null;
  alias: string | null;
  enclosure: string | null;
  content: string;
  resolved: string | null;
  fingerprint: string;
  id: string | null;
};

function identityTexts(entries: Entry[], base: KeyBase): IdentityTexts[] {
  const documentBase = safeBase(base.documentUrl);
  const toKeyBase = linkKeyer(base.keyBase, base.documentUrl);
  return entries.map((e) => {
    const url = e.key_source.url === undefined ? e.url : e.key_source.url;
    const resolved = resolveUrl(url, documentBase);
    const moved = resolved === null ? null : toKeyBase(resolved);
    const link = moved ?? resolved;
    const canonical = link === null ? null : stripTracking(link);
    const enclosure = e.enclosures[0]?.url ? enclosureIdentity(e.enclosures[0].url) : null;
    const guid = e.guid?.trim() || null;
    const id = e.key_source.id?.trim() || null;
    return {
      guid: guid === null ? null : `guid\u0000${guid}`,
      link: canonical === null ? null : `url\u0000${canonical}`,
      alias: moved === null ? null : `url\u0000${stripTracking(resolved!)}`,
      enclosure: enclosure === null ? null : `enclosure\u0000${enclosure}`,
      content: contentIdentity(e),
      resolved,
      fingerprint: fingerprintOf(canonical, e, enclosure),
      id: id === null ? null : `id\u0000${id}`,
    };
  });
}

/** Keys of a document seen for the first time, guid first: what a new feed records. Pure. */
export function entryKeys(entries: Entry[], feedUrl: string): string[] {
  const ids = entryIdentities(entries, { keyBase: feedUrl, documentUrl: feedUrl });
  return planKeys(ids, 'guid', () => undefined).map((p) => p.key);
}

/** What a feed has stored under a key: undefined when it never showed the key, else the fingerprint kept with it
 *  (null when none was). */
export type KeyLookup = (key: string) => string | null | undefined;

/** How one entry is recorded: its key, the source it came from, other spellings of it to record, the fingerprint stored
 *  with it (for the sources that can be shared), and whether the feed has shown it before. */
export type KeyPlan = {
  key: string;
  source: IdentityKey;
  aliases: string[];
  fingerprint: string | null;
  seen: boolean;
};

/**
 * Each entry's key, from the first source at or after `identityKey` it has. `lookup` tells what the feed stored under
 * a key; it is asked only for the keys the decision needs (in a steady feed, one per entry).
 *
 * Several entries of one document may share a guid (or a link, or an enclosure): the one that matches what was stored
 * under that key keeps it — so a neighbour starting or stopping to share it never changes its key — and the others
 * fall back to their next source. A guid already known for an entry that is plainly another one (most of link, title,
 * date and enclosure differ) is a recycled or constant guid: the entry falls back too, so it is not mistaken for the
 * old one. A key nobody held yet goes to the last sharer in document order (the oldest, in a newest-first feed).
 * Entries that end up under one key although the feed gives them different identifiers besides their guids
 * (EntryIdentity idKey) are different entries: all but one take the key refined by their identifier (refinedBy). Pure.
 */
export function planKeys(
  ids: EntryIdentity[],
  identityKey: IdentityKey,
  lookup: KeyLookup,
): KeyPlan[] {
  const chosen: ({ key: string; source: IdentityKey } | undefined)[] = ids.map(() => undefined);
  for (const source of sourcesFrom(identityKey)) {
    const groups = new Map<string, number[]>();
    ids.forEach((id, i) => {
      const key = id.keys[source];
      if (chosen[i] !== undefined || key === null) return;
      const members = groups.get(key);
      if (members) members.push(i);
      else groups.set(key, [i]);
    });
    for (const [key, members] of groups) {
      // Identical title, text and date are one entry, however often repeated; other sources pick one holder.
      const holder =
        source === 'content' ? undefined : holderOfGroup(ids, members, lookup(key), source);
      for (const i of members)
        if (holder === undefined || ids[i]!.fingerprint === holder) chosen[i] = { key, source };
    }
  }
  const shown = (k: string) => lookup(k) !== undefined;
  const by = refinedBy(
    ids.map((id) => id.idKey),
    chosen.map((c) => c!.key),
  );
  return ids.map((id, i) => {
    const { key: shared, source } = chosen[i]!;
    const idKey = by[i]!;
    const own = (k: string) => (idKey === null ? k : refine(k, idKey));
    const key = own(shared);
    const aliases = source === 'link' && id.linkAlias !== null ? [own(id.linkAlias)] : [];
    const seen = shown(key) || aliases.some(shown) || (id.legacy !== null && shown(id.legacy));
    return {
      key,
      source,
      aliases,
      fingerprint: source === 'content' ? null : id.fingerprint,
      seen,
    };
  });
}

/** Every key an entry may be recorded under: each source's key, its link alias and its version-1 key, and each of them
 *  refined by its identifier when it has one (planKeys). */
export function recordableKeys(id: EntryIdentity): string[] {
  const keys = [...Object.values(id.keys), id.linkAlias, id.legacy].filter(
    (k): k is string => k !== null,
  );
  const idKey = id.idKey;
  return idKey === null ? keys : [...keys, ...keys.map((k) => refine(k, idKey))];
}

/** holderOf for the entries `members` of `ids` sharing a key; a key only one entry has, stored with its fingerprint or
 *  without one (a steady feed's every entry), is that entry's without building the sharers' list. */
function holderOfGroup(
  ids: EntryIdentity[],
  members: number[],
  stored: string | null | undefined,
  source: IdentityKey,
): string | null {
  if (members.length === 1) {
    const only = ids[members[0]!]!.fingerprint;
    if (stored === undefined || stored === null || stored === only) return only;
  }
  return holderOf(
    members.map((i) => ids[i]!.fingerprint),
    stored,
    source,
  );
}

/** Which fingerprint among the sharers (in document order) holds the key: the one most like the stored fingerprint,
 *  unless all are plainly other entries (then null: they all fall back); the last one when nothing usable is stored. */
function holderOf(
  sharers: string[],
  stored: string | null | undefined,
  source: IdentityKey,
): string | null {
  const distinct = [...new Set(sharers)];
  if (stored !== undefined && stored !== null && distinct.includes(stored)) return stored; // unchanged: the usual case
  if (stored === undefined || stored === null || stored.split('.').length !== PARTS)
    return distinct.at(-1)!;
  let best: { fp: string; diff: number } | null = null;
  for (const fp of distinct) {
    const c = compareFingerprints(stored, fp, source);
    if (isOtherEntry(c, source)) continue;
    if (best === null || c.diff <= best.diff) best = { fp, diff: c.diff };
  }
  return best?.fp ?? null;
}

/** Parts compared (present in both, the key's own source left out) and how many of them differ. */
function compareFingerprints(
  a: string,
  b: string,
  source: IdentityKey,
): { compared: number; diff: number } {
  const x = a.split('.');
  const y = b.split('.');
  const skip = source === 'link' ? 0 : source === 'enclosure' ? 3 : -1;
  let compared = 0;
  let diff = 0;
  for (let i = 0; i < PARTS; i++) {
    if (i === skip || !x[i] || !y[i]) continue;
    compared += 1;
    if (x[i] !== y[i]) diff += 1;
  }
  return { compared, diff };
}

/** A guid is recycled when most of what both entries show differs (an edited title or a fixed link is still the same
 *  entry). A shared link or enclosure is someone else's only when everything (and at least two things) differs: a
 *  guid-less entry whose title is edited must keep its key. */
function isOtherEntry(c: { compared: number; diff: number }, source: IdentityKey): boolean {
  if (source === 'guid') return c.compared > 0 && c.diff * 2 > c.compared;
  return c.compared >= 2 && c.diff === c.compared;
}

/** The sources a feed keys from: its identity_key and the ones after it. */
export function sourcesFrom(identityKey: IdentityKey): readonly IdentityKey[] {
  return IDENTITY_KEYS.slice(IDENTITY_KEYS.indexOf(identityKey));
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

// The content identity, for entries with nothing better: title, text and date.
function contentIdentity(e: Entry): string {
  // key_source is the text version 1 hashed (entity-decoded, untyped); hashing it keeps content keys stable.
  const { title, body } = e.key_source;
  return ['text', title ?? '', body ?? '', e.published_at ?? ''].join('\u0000');
}

function fingerprintOf(link: string | null, e: Entry, enclosure: string | null): string {
  const part = (s: string | null | undefined) => (s ? sha256(s).slice(0, 8) : '');
  return [part(link), part(e.key_source.title?.trim()), part(e.published_at), part(enclosure)].join(
    '.',
  );
}

/** What version 1 hashed for each entry (guid → resolved url → raw first enclosure url → text; every member of a
 *  repeated one refined with url, title and dates). Kept only to recognise entries recorded before the upgrade. */
function legacyTexts(entries: Entry[], texts: IdentityTexts[]): string[] {
  const bases = entries.map((e, i) => {
    const t = texts[i]!;
    if (t.guid !== null) return t.guid;
    if (t.resolved !== null) return `url\u0000${t.resolved}`;
    const enclosure = e.enclosures[0]?.url;
    return enclosure ? `enclosure\u0000${enclosure}` : t.content;
  });
  const counts = new Map<string, number>();
  for (const b of bases) counts.set(b, (counts.get(b) ?? 0) + 1);
  const seen = new Map<string, number>();
  return bases.map((b, i) => {
    if (counts.get(b) === 1) return b;
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
    return n === 1 ? refined : `${refined}\u0000#${n}`;
  });
}

function safeBase(feedUrl: string): string | null {
  return resolveUrl(feedUrl, null);
}

// crypto.hash (Node >= 20.12) is the one-shot digest: several times cheaper than createHash for strings this short.
function sha256(s: string): string {
  return digest('sha256', s, 'hex');
}

// Entries that end up under one key although the feed tells them apart by an identifier (atom:id or dc:identifier in
// RSS, an Atom link's text): which one keeps the key, and the key each other one takes instead.
import { hash as digest } from 'node:crypto';
import type { EntryIdentity } from './keys.ts';

/** For each entry, the idKey its key is refined by, or null when its key stays as chosen. Among entries given one key,
 *  those the feed tells apart by their identifiers are different entries: one keeps the key as it is (an entry without
 *  an identifier if there is one, which has nothing to refine it with; else the last in document order, as a new key's
 *  holder is), so an entry keyed before its identifier was read keeps its key, and each of the others takes the key
 *  refined by its identifier. Entries with one identifier (or none) are one entry, however often repeated. */
export function refinedBy(ids: EntryIdentity[], keys: string[]): (string | null)[] {
  const by: (string | null)[] = ids.map(() => null);
  if (ids.every((id) => id.idKey === null)) return by;
  const groups = new Map<string, number[]>();
  keys.forEach((key, i) => {
    const members = groups.get(key);
    if (members) members.push(i);
    else groups.set(key, [i]);
  });
  for (const members of groups.values()) {
    const values = new Set(members.map((i) => ids[i]!.idKey));
    if (values.size < 2) continue;
    const keeper = values.has(null) ? null : ids[members.at(-1)!]!.idKey;
    for (const i of members) if (ids[i]!.idKey !== keeper) by[i] = ids[i]!.idKey;
  }
  return by;
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

/** `key` refined by an identifier's hash: another entry's key than `key`'s. */
export function refine(key: string, idKey: string): string {
  return hash(`${key}\u0000${idKey}`);
}

// A key's form: the first 128 bits of SHA-256, in lowercase hex (keys.ts).
function hash(s: string): string {
  return digest('sha256', s, 'hex').slice(0, 32);
}

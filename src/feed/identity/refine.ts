// Entries that end up under one key although the feed tells them apart by an identifier (atom:id or dc:identifier in
// RSS, an Atom link's text): which one keeps the key, and the key each other one takes instead.
import { shortHash } from './short-hash.ts';

/** For each entry (given by its idKey, keys.ts EntryIdentity, and the key chosen for it), the idKey its key is refined
 *  by, or null when its key stays as chosen. Among entries given one key, those the feed tells apart by their
 *  identifiers are different entries: one keeps the key as it is (an entry without an identifier if there is one, which
 *  has nothing to refine it with; else the last in document order, as a new key's holder is), so an entry keyed before
 *  its identifier was read keeps its key, and each of the others takes the key refined by its identifier. Entries with
 *  one identifier (or none) are one entry, however often repeated. */
export function refinedBy(idKeys: (string | null)[], keys: string[]): (string | null)[] {
  const by: (string | null)[] = idKeys.map(() => null);
  if (idKeys.every((idKey) => idKey === null)) return by;
  const groups = new Map<string, number[]>();
  keys.forEach((key, i) => {
    const members = groups.get(key);
    if (members) members.push(i);
    else groups.set(key, [i]);
  });
  for (const members of groups.values()) {
    const values = new Set(members.map((i) => idKeys[i] ?? null));
    if (values.size < 2) continue;
    const keeper = values.has(null) ? null : (idKeys[members.at(-1)!] ?? null);
    for (const i of members) if (idKeys[i] !== keeper) by[i] = idKeys[i] ?? null;
  }
  return by;
}

/** `key` refined by an identifier's hash: another entry's key than `key`'s. */
export function refine(key: string, idKey: string): string {
  return shortHash(`${key}\u0000${idKey}`);
}

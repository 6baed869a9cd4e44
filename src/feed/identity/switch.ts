// Switching a churning feed's identity: a probe of the keys every later source gave the last good document, and the
// choice of the first source under which the churning document is still the one seen before (pure).
import { IDENTITY_KEYS, sourcesFrom, type EntryIdentity, type IdentityKey } from './keys.ts';

/** A churn hold whose keys changed again this many times (the first churn included) tries another identity. */
export const ROTATIONS_TO_SWITCH = 3;
/** The probe covers the first entries of a document only: enough to judge, bounded for huge feeds. */
const PROBE_MAX_ENTRIES = 500;
/** Probe keys are cut to 64 bits: ample to tell a few hundred entries apart, a quarter of the storage. */
const PROBE_KEY_CHARS = 16;

/** Per later source, the keys the document's entries would have under it (stored with the feed as JSON). */
export type IdentityProbe = Partial<Record<IdentityKey, string[]>>;

/** The probe of a document for a feed keyed from `identityKey`: the keys under every source after it. Pure. */
export function identityProbe(ids: EntryIdentity[], identityKey: IdentityKey): IdentityProbe {
  const probe: IdentityProbe = {};
  for (const source of laterSources(identityKey))
    probe[source] = ids.slice(0, PROBE_MAX_ENTRIES).map((id) => probeKey(id, source));
  return probe;
}

/** Reads a stored probe; anything unreadable is no probe (the switch then waits for a document with one). */
export function readProbe(text: string | null): IdentityProbe {
  if (text === null) return {};
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null) return {};
    const probe: IdentityProbe = {};
    for (const source of IDENTITY_KEYS) {
      const keys = (value as Record<string, unknown>)[source];
      if (Array.isArray(keys) && keys.every((k) => typeof k === 'string')) probe[source] = keys;
    }
    return probe;
  } catch {
    return {};
  }
}

/** The first source after `identityKey` that is stable for this document: at least half the entries have it (else the
 *  next source is what would key them), its keys are distinct across the entries (a link every entry shares is no
 *  identity) and at least half of them were in the last good document. Null when none is: the entries stay held for a
 *  person to decide. Pure. */
export function stableSource(
  ids: EntryIdentity[],
  identityKey: IdentityKey,
  probe: IdentityProbe,
): IdentityKey | null {
  if (ids.length === 0) return null;
  for (const source of laterSources(identityKey)) {
    const before = new Set(probe[source] ?? []);
    const having = ids.filter((id) => id.keys[source] !== null).length;
    if (before.size === 0 || having * 2 < ids.length) continue;
    const keys = ids.map((id) => probeKey(id, source));
    const distinct = new Set(keys).size;
    const known = keys.filter((k) => before.has(k)).length;
    if (distinct >= keys.length * 0.9 && known * 2 >= keys.length) return source;
  }
  return null;
}

/** The key an entry would have under a feed keyed from `source`, as the probe stores it (no sharing resolved). */
export function probeKey(id: EntryIdentity, source: IdentityKey): string {
  for (const s of sourcesFrom(source)) {
    const key = id.keys[s];
    if (key !== null) return key.slice(0, PROBE_KEY_CHARS);
  }
  return id.keys.content.slice(0, PROBE_KEY_CHARS);
}

function laterSources(identityKey: IdentityKey): readonly IdentityKey[] {
  return sourcesFrom(identityKey).slice(1);
}

// The one form of every hash that names an entry or a version of one: entry keys (keys.ts, refine.ts), content hashes
// (content-hash.ts) and source hashes (feed/parse/entry.ts).
import { hash } from 'node:crypto';

/** The first 128 bits of SHA-256 of `s`, in lowercase hex (32 characters). crypto.hash, the one-shot digest: the same
 *  bytes as createHash's, several times cheaper for strings this short. */
export function shortHash(s: string): string {
  return hash('sha256', s, 'hex').slice(0, 32);
}

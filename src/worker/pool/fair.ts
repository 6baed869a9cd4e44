// Fair picking inside a claim: each free slot goes to the application holding the fewest slots, then within it to the
// endpoint or host holding the fewest, earliest due first, so one backlog never keeps another's due work waiting.
import type { Room } from './spec.ts';

/** A due item a claim may pick: its capped keys (as the pool counts them), and the keys of the groups it is shared
 *  fairly in, outermost first (an application, then an endpoint or host); each group key is one of its keys. */
export type Candidate<C> = { value: C; keys: readonly string[]; groups: readonly string[] };

/** Picks up to `limit` of `candidates` (given earliest due first) and takes their keys in `room`: each pick is, among
 *  the candidates that still fit, one whose groups hold the fewest items (compared outer group first), the earliest
 *  due of those. */
export function pickFairly<C>(candidates: readonly Candidate<C>[], limit: number, room: Room): C[] {
  // Each candidate with the groups it is shared in, as one string: within one pick, a later candidate of groups already
  // scored holds the same and is due later, so it cannot win; only the first that fits is scored, which keeps the scan
  // short when a window holds many candidates of the same application and host.
  const left = candidates
    .filter((c) => room.fits(c.keys))
    .map((c) => ({ c, tuple: c.groups.join('\0') }));
  const picked: C[] = [];
  while (picked.length < limit && left.length > 0) {
    let best = -1;
    let bestHeld: number[] = [];
    const scored = new Set<string>();
    for (let i = 0; i < left.length; i++) {
      const { c, tuple } = left[i]!;
      if (scored.has(tuple)) continue;
      if (!room.fits(c.keys)) {
        left.splice(i--, 1); // it will not fit later in this claim either: holds only grow
        continue;
      }
      scored.add(tuple);
      const held = c.groups.map((g) => room.held(g));
      if (best === -1 || fewer(held, bestHeld)) {
        best = i;
        bestHeld = held;
      }
    }
    if (best === -1) break;
    const [chosen] = left.splice(best, 1);
    room.take(chosen!.c.keys);
    picked.push(chosen!.c.value);
  }
  return picked;
}

/** True when `a` holds fewer than `b`, comparing the outer group first. */
function fewer(a: readonly number[], b: readonly number[]): boolean {
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i] ?? 0;
    if (x !== y) return x < y;
  }
  return false;
}

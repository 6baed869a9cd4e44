// Fair picking inside a claim: applications first, then endpoints or hosts within one, caps respected.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pickFairly, type Candidate } from '../../../src/worker/pool/fair.ts';
import type { Room } from '../../../src/worker/pool/spec.ts';

/** A room with `held` items in flight per key and `caps` per key (others uncapped). */
function room(held: Record<string, number>, caps: Record<string, number> = {}): Room {
  const counts = new Map(Object.entries(held));
  const count = (k: string) => counts.get(k) ?? 0;
  return {
    held: count,
    fits: (keys) => keys.every((k) => count(k) < (caps[k] ?? Infinity)),
    take: (keys) => keys.forEach((k) => counts.set(k, count(k) + 1)),
  };
}

/** A candidate `name` of application `app` at endpoint `ep`, grouped by application then endpoint. */
function event(name: string, app: string, ep: string): Candidate<string> {
  return { value: name, keys: [`app:${app}`, `ep:${ep}`], groups: [`app:${app}`, `ep:${ep}`] };
}

describe('fair picking', () => {
  it("gives a free slot to the application holding the fewest, whatever the other's earlier backlog", () => {
    const due = [1, 2, 3, 4, 5].map((n) => event(`a${n}`, 'A', 'a')).concat(event('b1', 'B', 'b'));
    assert.deepEqual(pickFairly(due, 1, room({ 'app:A': 3 })), ['b1']);
    assert.deepEqual(pickFairly(due, 3, room({ 'app:A': 3 })), ['b1', 'a1', 'a2']);
  });

  it('takes turns between applications holding as many, earliest due first', () => {
    const due = [
      event('a1', 'A', 'a'),
      event('a2', 'A', 'a'),
      event('b1', 'B', 'b'),
      event('b2', 'B', 'b'),
    ];
    assert.deepEqual(pickFairly(due, 4, room({})), ['a1', 'b1', 'a2', 'b2']);
  });

  it('within an application, gives the slot to the endpoint holding the fewest', () => {
    const due = [event('x1', 'A', 'x'), event('x2', 'A', 'x'), event('y1', 'A', 'y')];
    assert.deepEqual(pickFairly(due, 2, room({ 'app:A': 2, 'ep:x': 2 })), ['y1', 'x1']);
  });

  it('skips what does not fit under a cap, counting its own picks against the caps', () => {
    const due = [
      event('x1', 'A', 'x'),
      event('x2', 'A', 'x'),
      event('x3', 'A', 'x'),
      event('y1', 'A', 'y'),
    ];
    assert.deepEqual(pickFairly(due, 4, room({ 'ep:x': 1 }, { 'ep:x': 2, 'ep:y': 1 })), [
      'y1',
      'x1',
    ]);
  });

  it('honours a cap on a key that is not a group (a shared address)', () => {
    const hosted = (name: string, host: string): Candidate<string> => ({
      value: name,
      keys: [`host:${host}`, 'addr:127.0.0.1'],
      groups: [`host:${host}`],
    });
    const due = [hosted('a', 'one'), hosted('b', 'two'), hosted('c', 'three')];
    assert.deepEqual(pickFairly(due, 3, room({}, { 'addr:127.0.0.1': 2 })), ['a', 'b']);
  });

  it('picks exactly what scoring every candidate would pick, on 200 random claims', () => {
    // The reference scores every candidate that fits, on every pick; pickFairly skips groups it already scored.
    const reference = (cands: Candidate<string>[], limit: number, r: Room): string[] => {
      const left = [...cands];
      const out: string[] = [];
      while (out.length < limit) {
        const fits = left.filter((c) => r.fits(c.keys));
        if (fits.length === 0) break;
        const score = (c: Candidate<string>) => c.groups.map((g) => r.held(g));
        // lexicographic: the outer group first; the earliest due wins a tie (reduce keeps the first)
        const less = (x: number[], y: number[]) => {
          const i = x.findIndex((v, j) => v !== y[j]);
          return i !== -1 && x[i]! < y[i]!;
        };
        const best = fits.reduce((b, c) => (less(score(c), score(b)) ? c : b));
        left.splice(left.indexOf(best), 1);
        r.take(best.keys);
        out.push(best.value);
      }
      return out;
    };
    let seed = 7;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let trial = 0; trial < 200; trial++) {
      const cands = Array.from({ length: 1 + rand(40) }, (_, i) => {
        const app = `app:${rand(4)}`;
        const host = `host:${rand(5)}`;
        return { value: `c${i}`, keys: [app, host, `ip:${rand(3)}`], groups: [app, host] };
      });
      const held = { 'app:0': rand(3), 'host:1': rand(2), 'ip:2': rand(2) };
      const caps = { 'ip:0': 1 + rand(3), 'ip:1': 1 + rand(3), 'ip:2': 2, 'host:3': 1 };
      const limit = 1 + rand(12);
      assert.deepEqual(
        pickFairly(cands, limit, room(held, caps)),
        reference(cands, limit, room(held, caps)),
        `trial ${trial}`,
      );
    }
  });
});

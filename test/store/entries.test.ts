// Entry keys: what a feed stores under a document's keys, read by a walk of the feed's keys when it stores not many more
// than asked for, else by a seek per key — the same answer either way.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { recordKeys, storedKeys } from '../../src/store/entries.ts';
import { populate } from './exercise.ts';
import { makeWorld } from '../support/world.ts';

describe('stored entry keys', () => {
  const w = makeWorld();
  after(() => w.close());
  const db = w.ctx.db;
  const now = new Date('2026-01-01T00:00:00.000Z');
  const { feed } = populate(db, now, 1, 1); // one feed, storing one key (k0)
  const asked = ['k0', 'a1', 'a2', 'missing'];
  const answer = () =>
    new Map(
      storedKeys(db, feed, asked)
        .filter(([key]) => asked.includes(key))
        .map(([key, fingerprint, seenAt]) => [key, { fingerprint, seenAt }]),
    );
  const expected = new Map([
    ['k0', { fingerprint: null, seenAt: now.toISOString() }],
    ['a1', { fingerprint: 'f1', seenAt: now.toISOString() }],
    ['a2', { fingerprint: null, seenAt: now.toISOString() }],
  ]);
  recordKeys(
    db,
    feed,
    [
      { key: 'a1', fingerprint: 'f1' },
      { key: 'a2', fingerprint: null },
    ],
    now,
  );

  it('tells the asked keys the feed stores, with fingerprint and last sighting, from a walk of a few keys', () => {
    assert.deepEqual(answer(), expected);
  });

  it('tells the same by a seek per key when the feed stores many more keys than asked for', () => {
    const other = Array.from({ length: 500 }, (_, i) => ({ key: `o${i}`, fingerprint: null }));
    recordKeys(db, feed, other, now);
    assert.deepEqual(answer(), expected);
    assert.deepEqual(
      storedKeys(db, feed, asked)
        .map(([key]) => key)
        .sort(),
      ['a1', 'a2', 'k0'],
      'only the asked keys are read',
    );
  });
});

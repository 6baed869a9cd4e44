import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isId, newId } from '../src/ids.ts';

describe('ids', () => {
  it('are 24 lowercase hex characters', () => assert.match(newId(), /^[0-9a-f]{24}$/));
  it('start with the creation second, so they sort by creation', () => {
    const a = newId(new Date('2026-01-01T00:00:00Z'));
    const b = newId(new Date('2026-01-01T00:00:01Z'));
    assert.equal(a.slice(0, 8), (Date.parse('2026-01-01T00:00:00Z') / 1000).toString(16));
    assert.ok(a < b);
  });
  it('differ within the same second', () =>
    assert.notEqual(newId(new Date(0)), newId(new Date(0))));
  it('are recognized by isId', () => {
    assert.equal(isId(newId()), true);
    for (const bad of ['', 'ABCDEF0123456789abcdef01', 'x'.repeat(24), 42, null])
      assert.equal(isId(bad), false);
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createIdGenerator, isId, newId } from '../src/ids.ts';

const at = (iso: string) => new Date(iso);

describe('ids', () => {
  it('are 24 lowercase hex characters', () => assert.match(newId(), /^[0-9a-f]{24}$/));

  it('start with the creation second, then the process part, then the counter', () => {
    const next = createIdGenerator();
    const a = next(at('2026-01-01T00:00:00Z'));
    const b = next(at('2026-01-01T00:00:00Z'));
    assert.equal(a.slice(0, 8), (Date.parse('2026-01-01T00:00:00Z') / 1000).toString(16));
    assert.equal(a.slice(8, 18), b.slice(8, 18), 'one random part per process');
    assert.equal(parseInt(b.slice(18), 16), parseInt(a.slice(18), 16) + 1);
  });

  it('increase strictly in creation order within one second, many at a time', () => {
    const next = createIdGenerator();
    const same = at('2026-01-01T00:00:00.500Z');
    const ids = Array.from({ length: 10_000 }, () => next(same));
    for (let i = 1; i < ids.length; i++)
      assert.ok(ids[i - 1]! < ids[i]!, `${ids[i - 1]} < ${ids[i]}`);
  });

  it('keep increasing when the clock steps back', () => {
    const next = createIdGenerator();
    const later = next(at('2026-01-01T00:00:10Z'));
    const earlier = next(at('2026-01-01T00:00:05Z'));
    assert.ok(later < earlier);
    assert.equal(earlier.slice(0, 8), later.slice(0, 8), 'the last second is kept');
  });

  it('move on to the next second rather than wrap the counter', () => {
    let calls = 0;
    // The process part, then a counter start of 0xffffff, halved to 0x7fffff by the generator and kept below half of
    // a counter limit of 2^12 (0x7ff), so that 0x801 more ids reach the limit.
    const next = createIdGenerator((n) => Buffer.alloc(n, ++calls === 1 ? 0xab : 0xff), 0x1000);
    const t = at('2026-01-01T00:00:00Z');
    let last = next(t);
    assert.equal(last.slice(-6), '000800', 'the counter starts at the top of the lower half');
    for (let i = 0; i < 0x800; i++) {
      const id = next(t);
      if (id <= last) assert.fail(`${id} after ${last}`);
      last = id;
    }
    assert.equal(
      last.slice(0, 8),
      (Date.parse('2026-01-01T00:00:01Z') / 1000).toString(16),
      'the counter ran out within the second, so the id moved on to the next second',
    );
  });

  it('of two processes differ within the same second', () =>
    assert.notEqual(
      createIdGenerator()(at('2026-01-01T00:00:00Z')),
      createIdGenerator()(at('2026-01-01T00:00:00Z')),
    ));

  it('are recognized by isId, old-style ids too', () => {
    assert.equal(isId(newId()), true);
    assert.equal(isId('65a1b2c3d4e5f60718293a4b'), true);
    for (const bad of ['', 'ABCDEF0123456789abcdef01', 'x'.repeat(24), 42, null])
      assert.equal(isId(bad), false);
  });
});

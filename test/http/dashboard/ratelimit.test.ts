// The failed sign-in limiter: a token bucket per address, refilled evenly, bounded in size.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FailureLimiter } from '../../../src/http/dashboard/ratelimit.ts';

const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1) + seconds * 1000);

describe('FailureLimiter', () => {
  const cases: { name: string; failures: number[]; checkAt: number; wait: number }[] = [
    { name: 'lets a fresh address try', failures: [], checkAt: 0, wait: 0 },
    {
      name: 'lets an address try while it has failures left',
      failures: [0, 0, 0, 0, 0, 0, 0, 0, 0],
      checkAt: 0,
      wait: 0,
    },
    {
      name: 'blocks after the 10th failure for one refill period',
      failures: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      checkAt: 0,
      wait: 60,
    },
    {
      name: 'counts the refill since the last failure',
      failures: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      checkAt: 45,
      wait: 15,
    },
    {
      name: 'opens again once a token has refilled',
      failures: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      checkAt: 60,
      wait: 0,
    },
    {
      name: 'refills failures spread over time',
      failures: [0, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600],
      checkAt: 600,
      wait: 0,
    },
  ];
  for (const t of cases) {
    it(t.name, () => {
      const limiter = new FailureLimiter({ capacity: 10, refillMs: 60_000 });
      for (const s of t.failures) limiter.fail('a', at(s));
      assert.equal(limiter.retryAfterSeconds('a', at(t.checkAt)), t.wait);
      assert.equal(
        limiter.retryAfterSeconds('b', at(t.checkAt)),
        0,
        'other addresses are not affected',
      );
    });
  }

  it('keeps at most maxKeys addresses, dropping refilled ones first and then the oldest', () => {
    const limiter = new FailureLimiter({ capacity: 2, refillMs: 1000, maxKeys: 3 });
    limiter.fail('old', at(0));
    for (let i = 0; i < 5; i++) {
      limiter.fail(`x${i}`, at(100));
      limiter.fail(`x${i}`, at(100));
    }
    assert.equal(limiter.size, 3);
    assert.equal(limiter.retryAfterSeconds('x4', at(100)), 1, 'the newest blocked address is kept');
  });
});

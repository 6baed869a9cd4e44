// Token buckets per key: a burst, an even refill, whole-second waits, and a bound on the keys remembered.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultConfig, withConfig } from '../../src/config.ts';
import { requestLimits, TokenBuckets } from '../../src/http/ratelimit.ts';

const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1) + seconds * 1000);

describe('TokenBuckets', () => {
  const cases: { name: string; takes: number[]; checkAt: number; wait: number }[] = [
    { name: 'lets a fresh key through', takes: [], checkAt: 0, wait: 0 },
    {
      name: 'lets a key through while it has tokens left',
      takes: [0, 0, 0, 0, 0, 0, 0, 0, 0],
      checkAt: 0,
      wait: 0,
    },
    {
      name: 'refuses a key after its 10th take for one refill period',
      takes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      checkAt: 0,
      wait: 60,
    },
    {
      name: 'counts the refill since the last take',
      takes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      checkAt: 45,
      wait: 15,
    },
    {
      name: 'lets the key through again once a token has refilled',
      takes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      checkAt: 60,
      wait: 0,
    },
    {
      name: 'refills takes spread over time',
      takes: [0, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600],
      checkAt: 600,
      wait: 0,
    },
    {
      name: 'does not push a refused key further back: refusals take nothing',
      takes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 20, 30, 40, 50],
      checkAt: 60,
      wait: 0,
    },
  ];
  for (const t of cases) {
    it(t.name, () => {
      const buckets = new TokenBuckets({ capacity: 10, refillMs: 60_000 });
      for (const s of t.takes) buckets.take('a', at(s));
      assert.equal(buckets.retryAfterSeconds('a', at(t.checkAt)), t.wait);
      assert.equal(buckets.take('a', at(t.checkAt)), t.wait, 'take answers the same wait');
      assert.equal(buckets.retryAfterSeconds('b', at(t.checkAt)), 0, 'other keys are not affected');
    });
  }

  it('answers a wait under a second as 1 (Retry-After has whole seconds)', () => {
    const buckets = new TokenBuckets({ capacity: 2, refillMs: 20 });
    assert.equal(buckets.take('a', at(0)), 0);
    assert.equal(buckets.take('a', at(0)), 0);
    assert.equal(buckets.take('a', at(0)), 1);
    assert.equal(buckets.take('a', at(0.02)), 0, 'one token back after 20 ms');
  });

  it('forgets a key once its bucket is full again', () => {
    const buckets = new TokenBuckets({ capacity: 2, refillMs: 1000 });
    buckets.take('a', at(0));
    assert.equal(buckets.size, 1);
    assert.equal(buckets.retryAfterSeconds('a', at(1)), 0);
    assert.equal(buckets.size, 0);
  });

  it('keeps at most maxKeys keys, forgetting the least recently charged', () => {
    const buckets = new TokenBuckets({ capacity: 2, refillMs: 1000, maxKeys: 20 });
    for (let i = 0; i < 1000; i++) {
      buckets.take(`x${i}`, at(100));
      buckets.take(`x${i}`, at(100));
      assert.ok(buckets.size <= 20, `${buckets.size} keys`);
    }
    assert.equal(buckets.take('x999', at(100)), 1, 'the newest refused key is kept');
    assert.equal(buckets.take('x0', at(100)), 0, 'the oldest was forgotten');
  });
});

describe('requestLimits', () => {
  it('makes no bucket for a limit set to 0', () => {
    const limits = requestLimits(
      withConfig(defaultConfig(), {
        quotas: { api_requests_per_second: 0, failed_auth_per_address: 0 },
      }),
    );
    assert.equal(limits.perApplication, undefined);
    assert.equal(limits.failedAuth, undefined);
  });

  it('gives an application a burst of quotas.api_burst, then quotas.api_requests_per_second', () => {
    const limits = requestLimits(
      withConfig(defaultConfig(), { quotas: { api_requests_per_second: 5, api_burst: 8 } }),
    );
    const passed = (s: number) => limits.perApplication!.take('app', at(s)) === 0;
    let n = 0;
    while (passed(0)) n++;
    assert.equal(n, 8);
    n = 0;
    while (passed(2)) n++;
    assert.equal(n, 8, 'refilled to the burst after 2 s at 5/s (capped at 8)');
    n = 0;
    while (passed(2.4)) n++;
    assert.equal(n, 2, '0.4 s at 5/s');
  });
});

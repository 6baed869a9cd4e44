// Retry decisions: the schedule with ±20 % jitter, dead after the last retry, Retry-After raising the delay within bounds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nextRetry } from '../../src/webhook/retry.ts';

const SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 36000];
const now = new Date('2026-01-01T00:00:00.000Z');

describe('nextRetry', () => {
  const cases: {
    name: string;
    attempt: number;
    random: number;
    retryAfter?: number | null;
    max?: number;
    delayMs: number | 'dead';
  }[] = [
    { name: 'the first failure waits 5 s', attempt: 1, random: 0.5, delayMs: 5000 },
    { name: 'the second failure waits 5 min', attempt: 2, random: 0.5, delayMs: 300_000 },
    {
      name: 'the seventh failure waits the last step (10 h)',
      attempt: 7,
      random: 0.5,
      delayMs: 36_000_000,
    },
    {
      name: 'the eighth failure (after the last retry) is dead',
      attempt: 8,
      random: 0.5,
      delayMs: 'dead',
    },
    { name: 'jitter at its lowest takes 20 % off', attempt: 2, random: 0, delayMs: 240_000 },
    { name: 'jitter at its highest adds 20 %', attempt: 2, random: 1, delayMs: 360_000 },
    {
      name: 'a longer Retry-After wins over the schedule',
      attempt: 1,
      random: 0.5,
      retryAfter: 120,
      delayMs: 120_000,
    },
    {
      name: 'a shorter Retry-After keeps the schedule',
      attempt: 2,
      random: 0.5,
      retryAfter: 10,
      delayMs: 300_000,
    },
    {
      name: 'Retry-After is bounded',
      attempt: 1,
      random: 0.5,
      retryAfter: 86_400,
      max: 3600,
      delayMs: 3_600_000,
    },
    { name: 'Retry-After: 0 is ignored', attempt: 1, random: 0.5, retryAfter: 0, delayMs: 5000 },
    {
      name: 'Retry-After does not revive a dead event',
      attempt: 8,
      random: 0.5,
      retryAfter: 60,
      delayMs: 'dead',
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const d = nextRetry({
        attempt: c.attempt,
        schedule: SCHEDULE,
        now,
        random: () => c.random,
        retryAfterSeconds: c.retryAfter ?? null,
        maxRetryAfterSeconds: c.max ?? 3600,
      });
      if (c.delayMs === 'dead') {
        assert.deepEqual(d, { kind: 'dead' });
        return;
      }
      assert.equal(d.kind, 'retry');
      if (d.kind !== 'retry') return;
      assert.equal(d.delayMs, c.delayMs);
      assert.equal(d.at.getTime(), now.getTime() + c.delayMs);
    });
  }

  it('keeps every jittered delay within ±20 % of its step', () => {
    for (let i = 0; i <= 100; i++) {
      for (const [n, step] of SCHEDULE.entries()) {
        const d = nextRetry({ attempt: n + 1, schedule: SCHEDULE, now, random: () => i / 100 });
        assert.ok(d.kind === 'retry' && d.delayMs >= step * 800 && d.delayMs <= step * 1200);
      }
    }
  });

  it('is dead at once with an empty schedule', () => {
    assert.deepEqual(nextRetry({ attempt: 1, schedule: [], now }), { kind: 'dead' });
  });
});

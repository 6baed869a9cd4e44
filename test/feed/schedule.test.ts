import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cadenceEstimate, nextPoll, type ScheduleInput } from '../../src/feed/schedule.ts';

const limits = { intervalSeconds: 900, minSeconds: 60, maxSeconds: 86_400 };
const mid = () => 0.5; // no jitter
const hoursAgo = (h: number) => new Date(Date.UTC(2026, 0, 10) - h * 3600_000).toISOString();

describe('nextPoll', () => {
  const cases: [string, ScheduleInput, number][] = [
    [
      'uses the default interval when the feed has too few dated entries',
      {
        kind: 'success',
        publishedAt: [hoursAgo(1), null],
        ttlSeconds: null,
        cacheSeconds: null,
        previousIntervalSeconds: null,
      },
      900,
    ],
    [
      'polls at half the median gap of an hourly feed',
      {
        kind: 'success',
        publishedAt: [0, 1, 2, 3, 4].map(hoursAgo),
        ttlSeconds: null,
        cacheSeconds: null,
        previousIntervalSeconds: null,
      },
      1800,
    ],
    [
      'clamps a very busy feed to the minimum',
      {
        kind: 'success',
        publishedAt: [0, 0.001, 0.002, 0.003].map(hoursAgo),
        ttlSeconds: null,
        cacheSeconds: null,
        previousIntervalSeconds: null,
      },
      60,
    ],
    [
      'clamps a feed updated monthly to the maximum',
      {
        kind: 'success',
        publishedAt: [0, 720, 1440, 2160].map(hoursAgo),
        ttlSeconds: null,
        cacheSeconds: null,
        previousIntervalSeconds: null,
      },
      86_400,
    ],
    [
      "raises the interval to the feed's ttl",
      {
        kind: 'success',
        publishedAt: [],
        ttlSeconds: 3600,
        cacheSeconds: null,
        previousIntervalSeconds: null,
      },
      3600,
    ],
    [
      'raises the interval to Cache-Control max-age',
      {
        kind: 'success',
        publishedAt: [],
        ttlSeconds: null,
        cacheSeconds: 7200,
        previousIntervalSeconds: null,
      },
      7200,
    ],
    [
      'caps ttl and caching hints at the maximum interval',
      {
        kind: 'success',
        publishedAt: [],
        ttlSeconds: 10 * 86_400,
        cacheSeconds: null,
        previousIntervalSeconds: null,
      },
      86_400,
    ],
    [
      'never goes below the estimate for a short max-age',
      {
        kind: 'success',
        publishedAt: [],
        ttlSeconds: null,
        cacheSeconds: 5,
        previousIntervalSeconds: null,
      },
      900,
    ],
    [
      'keeps the previous interval when unchanged',
      { kind: 'unchanged', cacheSeconds: null, previousIntervalSeconds: 1800 },
      1800,
    ],
    [
      'raises an unchanged feed to max-age',
      { kind: 'unchanged', cacheSeconds: 4000, previousIntervalSeconds: 1800 },
      4000,
    ],
    ['waits Retry-After when throttled', { kind: 'throttled', retryAfterSeconds: 3000 }, 3000],
    [
      'waits at least the minimum when throttled briefly',
      { kind: 'throttled', retryAfterSeconds: 1 },
      60,
    ],
    ['caps Retry-After at a day', { kind: 'throttled', retryAfterSeconds: 10 * 86_400 }, 86_400],
    [
      'backs off from the minimum after the first error',
      { kind: 'error', consecutiveErrors: 1, retryAfterSeconds: null },
      60,
    ],
    [
      'doubles the backoff with each error',
      { kind: 'error', consecutiveErrors: 4, retryAfterSeconds: null },
      480,
    ],
    [
      'caps the backoff at the maximum interval, never stopping',
      { kind: 'error', consecutiveErrors: 60, retryAfterSeconds: null },
      86_400,
    ],
    [
      'honours Retry-After on an error when it is longer',
      { kind: 'error', consecutiveErrors: 1, retryAfterSeconds: 600 },
      600,
    ],
  ];
  for (const [name, input, seconds] of cases) {
    it(name, () => assert.equal(nextPoll(input, limits, mid).delaySeconds, seconds));
  }

  it('adds at most ±10 % jitter', () => {
    const input: ScheduleInput = {
      kind: 'unchanged',
      cacheSeconds: null,
      previousIntervalSeconds: 1000,
    };
    assert.equal(nextPoll(input, limits, () => 0).delaySeconds, 900);
    assert.equal(nextPoll(input, limits, () => 0.999999).delaySeconds, 1100);
  });

  it('respects a minimum as low as one second', () => {
    const tight = { intervalSeconds: 1, minSeconds: 1, maxSeconds: 2 };
    assert.equal(
      nextPoll(
        {
          kind: 'success',
          publishedAt: [],
          ttlSeconds: null,
          cacheSeconds: null,
          previousIntervalSeconds: null,
        },
        tight,
        mid,
      ).delaySeconds,
      1,
    );
  });
});

describe('cadenceEstimate', () => {
  it('ignores undated and unparseable entries and needs three dates', () => {
    assert.equal(cadenceEstimate([null, 'garbage', hoursAgo(1), hoursAgo(2)]), null);
    assert.equal(cadenceEstimate([hoursAgo(0), hoursAgo(2), hoursAgo(4), null]), 3600);
  });
  it('uses the median gap so one long silence does not dominate', () => {
    assert.equal(cadenceEstimate([0, 1, 2, 3, 500].map(hoursAgo)), 1800);
  });
});

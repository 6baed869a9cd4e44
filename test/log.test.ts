import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger, type LogLevel } from '../src/log.ts';

function capture(level: LogLevel, format: 'json' | 'pretty') {
  const lines: string[] = [];
  return { lines, logger: createLogger({ level, format, write: (line) => lines.push(line) }) };
}

describe('createLogger in json format', () => {
  it('writes one JSON object per call with time, level, message and the fields', () => {
    const { lines, logger } = capture('debug', 'json');
    logger.info('deliver: event delivered', {
      event_id: 'e1',
      attempt: 2,
      duration_ms: 41,
      status_code: 200,
    });
    assert.equal(lines.length, 1);
    const row = JSON.parse(lines[0]!) as Record<string, unknown>;
    assert.deepEqual(Object.keys(row), [
      'time',
      'level',
      'msg',
      'event_id',
      'attempt',
      'duration_ms',
      'status_code',
    ]);
    assert.match(String(row.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(row.level, 'info');
    assert.equal(row.msg, 'deliver: event delivered');
    assert.equal(row.attempt, 2);
  });

  it('keeps a multi-line error on one line, as its message', () => {
    const { lines, logger } = capture('debug', 'json');
    logger.error('loop: tick failed', { error: new Error('first\nsecond') });
    assert.equal(lines.length, 1);
    assert.doesNotMatch(lines[0]!, /\n/);
    assert.equal((JSON.parse(lines[0]!) as { error: string }).error, 'first\nsecond');
  });

  it("adds a child's fields to every line and lets a call override them", () => {
    const { lines, logger } = capture('debug', 'json');
    const child = logger.child({ loop: 'poller', feed_id: 'f0' }).child({ worker: 1 });
    child.warn('poll: feed failed', { feed_id: 'f1' });
    const { time: _time, ...row } = JSON.parse(lines[0]!) as Record<string, unknown>;
    assert.deepEqual(row, {
      level: 'warn',
      msg: 'poll: feed failed',
      loop: 'poller',
      feed_id: 'f1',
      worker: 1,
    });
  });
});

describe('createLogger levels', () => {
  const order: LogLevel[] = ['debug', 'info', 'warn', 'error'];
  for (const threshold of order) {
    it(`at level ${threshold} writes only ${order.slice(order.indexOf(threshold)).join(', ')}`, () => {
      const { lines, logger } = capture(threshold, 'json');
      for (const level of order) logger[level](`m ${level}`);
      logger.child({ x: 1 }).debug('child debug');
      const written = lines.map((l) => (JSON.parse(l) as { level: string }).level);
      const expected = order.slice(order.indexOf(threshold));
      assert.deepEqual(written, threshold === 'debug' ? [...expected, 'debug'] : expected);
    });
  }
});

describe('createLogger in pretty format', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    [
      'plain values stay bare',
      { feed_id: 'abc', duration_ms: 12, ok: true },
      'feed_id=abc duration_ms=12 ok=true',
    ],
    [
      'a string with spaces is quoted',
      { error: 'fetch: unable to connect' },
      'error="fetch: unable to connect"',
    ],
    [
      'a string with = or a quote is quoted',
      { q: 'a=b', r: 'say "hi"' },
      'q="a=b" r="say \\"hi\\""',
    ],
    ['a newline is escaped, so one call is one line', { error: 'a\nb' }, 'error="a\\nb"'],
    ['an Error shows its message', { error: new Error('boom now') }, 'error="boom now"'],
    ['objects and null are JSON', { list: [1, 2], none: null }, 'list=[1,2] none=null'],
  ];
  for (const [what, fields, expected] of cases) {
    it(what, () => {
      const { lines, logger } = capture('info', 'pretty');
      logger.info('poll: feed polled', fields);
      assert.equal(lines.length, 1);
      assert.match(lines[0]!, /^\d\d:\d\d:\d\d\.\d{3} INFO  poll: feed polled /);
      assert.equal(lines[0]!.slice(lines[0]!.indexOf('polled ') + 'polled '.length), expected);
    });
  }

  it('writes the bare message when there are no fields, with the level padded', () => {
    const { lines, logger } = capture('debug', 'pretty');
    logger.warn('feedsub: stopping');
    assert.match(lines[0]!, /^\d\d:\d\d:\d\d\.\d{3} WARN  feedsub: stopping$/);
  });
});

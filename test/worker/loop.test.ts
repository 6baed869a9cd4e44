import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { silentLogger } from '../../src/log.ts';
import { createLoop, TICK_FAILURE_BACKOFF, type Backoff } from '../../src/worker/loop.ts';
import { within } from '../support/deadline.ts';
import { recordingLogger, type Line } from '../support/log.ts';

// Every tick below asks for its next run in 60 s (IDLE); a test that waits for a tick a nudge or a start should
// cause waits at most 2 s, so a lost wake-up fails instead of being rescued by that timer.
const IDLE = 60_000;
const WAKE_MS = 2000;

describe('loop', () => {
  it('runs a tick at start, then again when nudged, never two at once', async () => {
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    let release: () => void = () => {};
    let started: () => void = () => {};
    const nextStart = () =>
      new Promise<void>((r) => {
        started = r;
      });
    const loop = createLoop(
      't',
      async () => {
        running++;
        runs++;
        maxRunning = Math.max(maxRunning, running);
        const gate = new Promise<void>((r) => {
          release = r;
        });
        started();
        await gate;
        running--;
        return IDLE;
      },
      { idleMs: IDLE, logger: silentLogger },
    );
    let stopped = false;
    try {
      let first = nextStart();
      loop.start();
      await within(first, WAKE_MS, 'the first tick after start()');
      assert.equal(runs, 1);
      loop.nudge();
      loop.nudge();
      first = nextStart();
      release();
      await within(first, WAKE_MS, 'the tick asked for by a nudge during the running one');
      assert.equal(runs, 2, 'a nudge during a tick runs exactly one more tick after it');
      const stopping = loop.stop();
      release();
      await stopping;
      stopped = true;
      assert.equal(runs, 2, 'two nudges during one tick coalesce into one');
      assert.equal(maxRunning, 1);
    } finally {
      if (!stopped) {
        const stopping = loop.stop(100);
        release();
        await stopping;
      }
    }
  });

  it('runs the next tick at once when nudged while idle, not at its 60 s timer', async () => {
    let runs = 0;
    let ran: () => void = () => {};
    const nextRun = () =>
      new Promise<void>((r) => {
        ran = r;
      });
    const loop = createLoop(
      't',
      async () => {
        runs++;
        ran();
        return IDLE;
      },
      { idleMs: IDLE, logger: silentLogger },
    );
    try {
      const first = nextRun();
      loop.start();
      await within(first, WAKE_MS, 'the first tick after start()');
      await new Promise((r) => setImmediate(r)); // the tick has returned and the loop sleeps for IDLE
      const second = nextRun();
      loop.nudge();
      await within(second, WAKE_MS, 'the tick asked for by a nudge while idle');
      assert.equal(runs, 2);
    } finally {
      await loop.stop();
    }
  });

  it('stop() waits for the in-flight tick and stops re-arming', async () => {
    let finished = false;
    let runs = 0;
    let started: () => void = () => {};
    const first = new Promise<void>((r) => {
      started = r;
    });
    const loop = createLoop(
      't',
      async () => {
        runs++;
        started();
        await new Promise((r) => setTimeout(r, 50));
        finished = true;
        return 0;
      },
      { idleMs: 0, logger: silentLogger },
    );
    loop.start();
    await first;
    await loop.stop();
    assert.equal(finished, true);
    const after = runs;
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(runs, after);
    await loop.stop(); // idempotent
  });

  it('stop() gives up on a stuck tick after its timeout', async () => {
    let started: () => void = () => {};
    const first = new Promise<void>((r) => {
      started = r;
    });
    const loop = createLoop(
      't',
      () => {
        started();
        return new Promise<void>(() => {});
      },
      { idleMs: 0, logger: silentLogger },
    );
    loop.start();
    await first;
    const t = Date.now();
    await loop.stop(30);
    assert.ok(Date.now() - t < 1000);
  });

  it('logs a throwing tick and keeps going', async () => {
    const lines: string[] = [];
    const logger = {
      ...silentLogger,
      error: (m: string) => {
        lines.push(m);
      },
    };
    let runs = 0;
    let second: () => void = () => {};
    const secondRun = new Promise<void>((r) => {
      second = r;
    });
    const loop = createLoop(
      't',
      async () => {
        runs++;
        if (runs === 1) throw new Error('boom');
        second();
        return 60_000;
      },
      { idleMs: 0, logger },
    );
    loop.start();
    await secondRun;
    await loop.stop();
    assert.equal(runs, 2);
    assert.deepEqual(lines, ['loop: tick failed']);
  });

  it('retries a failed tick after about a second, not at its 60 s timer', async () => {
    const t = observedLoop((run) => {
      if (run === 1) throw new Error('SqliteError: database is locked');
    });
    try {
      const first = t.nextRun();
      t.loop.start();
      await within(first, WAKE_MS, 'the first tick after start()');
      // The default backoff starts at 1 s and is capped at a minute: the retry must come long before either timer.
      assert.equal(TICK_FAILURE_BACKOFF.firstMs, 1000);
      const second = t.nextRun();
      await within(second, WAKE_MS, 'the retry of the failed tick');
      assert.equal(t.runs(), 2);
    } finally {
      await t.loop.stop();
    }
  });

  it('doubles the delay after each failure in a row up to its cap, and is back to its own pace after a success', async () => {
    const lines = await linesOfLoop(
      { firstMs: 10, maxMs: 40 },
      (run, done) => {
        if (run <= 5) throw new Error(`failure ${run}`); // a new message each time, so each is logged
        done();
      },
      'the sixth tick, after five failures',
    );
    const failed = lines.filter((l) => l.msg === 'loop: tick failed');
    assert.deepEqual(
      failed.map((l) => l.fields.delay_ms),
      [10, 20, 40, 40, 40],
    );
    assert.deepEqual(
      failed.map((l) => l.fields.failures),
      [1, 2, 3, 4, 5],
    );
    const recovered = lines.filter((l) => l.msg === 'loop: tick recovered');
    assert.equal(recovered.length, 1);
    assert.equal(recovered[0]!.fields.failures, 5);
  });

  it('logs a failure once per change of its message, not on every retry, and the recovery once', async () => {
    const errors = ['disk full', 'disk full', 'disk full', 'locked', 'locked', 'disk full'];
    const lines = await linesOfLoop(
      { firstMs: 5, maxMs: 5 },
      (run, done) => {
        const error = errors[run - 1];
        if (error !== undefined) throw new Error(error);
        if (run === errors.length + 2) done();
        return 0; // a healthy loop runs again at once: a second success must not log a second recovery
      },
      'two ticks after the failures',
    );
    assert.deepEqual(
      lines.map((l) => `${l.level} ${l.msg} ${String(l.fields.error ?? '').split('\n')[0]}`),
      [
        'error loop: tick failed Error: disk full',
        'error loop: tick failed Error: locked',
        'error loop: tick failed Error: disk full',
        'info loop: tick recovered ',
      ],
    );
  });

  it('runs a nudged tick at once even while backing off from a failure', async () => {
    const t = observedLoop(
      (run) => {
        if (run === 1) throw new Error('boom');
      },
      { firstMs: IDLE, maxMs: IDLE },
    );
    try {
      const first = t.nextRun();
      t.loop.start();
      await within(first, WAKE_MS, 'the first tick after start()');
      await new Promise((r) => setImmediate(r));
      const second = t.nextRun();
      t.loop.nudge();
      await within(second, WAKE_MS, 'the nudged tick during the backoff');
    } finally {
      await t.loop.stop();
    }
  });

  it('runOnce() runs a tick without starting the loop', async () => {
    let runs = 0;
    const loop = createLoop(
      't',
      async () => {
        runs++;
        return 5;
      },
      { idleMs: 0, logger: silentLogger },
    );
    assert.equal(await loop.runOnce(), 5);
    assert.equal(runs, 1);
  });
});

/** A loop whose tick counts its runs, settles the promise `nextRun()` gave as it starts, then runs `body(run)`; every
 *  tick that does not throw asks for its next run in IDLE. */
function observedLoop(body: (run: number) => void, backoff?: Backoff) {
  let runs = 0;
  let ran: () => void = () => {};
  const loop = createLoop(
    't',
    async () => {
      runs++;
      ran();
      body(runs);
      return IDLE;
    },
    { idleMs: IDLE, logger: silentLogger, ...(backoff ? { backoff } : {}) },
  );
  return {
    loop,
    runs: () => runs,
    nextRun: () =>
      new Promise<void>((r) => {
        ran = r;
      }),
  };
}

/** Runs a loop on `backoff` until its tick (given its run number, from 1) calls `done`, then stops it; returns what it
 *  logged. A tick that returns nothing asks for its next run in IDLE. */
async function linesOfLoop(
  backoff: Backoff,
  tick: (run: number, done: () => void) => number | void,
  what: string,
): Promise<Line[]> {
  const log = recordingLogger();
  let done: () => void = () => {};
  const finished = new Promise<void>((r) => {
    done = r;
  });
  let runs = 0;
  const loop = createLoop('t', async () => tick(++runs, done) ?? IDLE, {
    idleMs: IDLE,
    logger: log.logger,
    backoff,
  });
  try {
    loop.start();
    await within(finished, WAKE_MS, what);
  } finally {
    await loop.stop();
  }
  return log.lines;
}

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { silentLogger } from '../../src/log.ts';
import { createLoop } from '../../src/worker/loop.ts';

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
        return 60_000;
      },
      { idleMs: 60_000, logger: silentLogger },
    );
    let first = nextStart();
    loop.start();
    await first;
    assert.equal(runs, 1);
    loop.nudge();
    loop.nudge();
    first = nextStart();
    release();
    await first;
    assert.equal(runs, 2, 'a nudge during a tick runs exactly one more tick after it');
    const stopping = loop.stop();
    release();
    await stopping;
    assert.equal(runs, 2, 'two nudges during one tick coalesce into one');
    assert.equal(maxRunning, 1);
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

// Tests for the fetch concurrency limiter: caps, per-host order, fairness between hosts, outcomes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLimiter } from '../../src/feed/limiter.ts';

type Gate = { promise: Promise<string>; open: (value: string) => void; fail: (err: Error) => void };

function gate(): Gate {
  let open: (value: string) => void = () => {};
  let fail: (err: Error) => void = () => {};
  const promise = new Promise<string>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

/** Lets every already-settled promise chain run (the limiter starts tasks from promise callbacks). */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

/** Submits tasks and records which ones are running, in start order. */
function harness(global: number, perHost: number) {
  const limiter = createLimiter({ global, perHost });
  const started: string[] = [];
  const running = new Map<string, { host: string; gate: Gate }>();
  let maxGlobal = 0;
  const maxPerHost = new Map<string, number>();
  const submit = (host: string, id: string): Promise<string> =>
    limiter.run(host, () => {
      const g = gate();
      started.push(id);
      running.set(id, { host, gate: g });
      maxGlobal = Math.max(maxGlobal, running.size);
      const onHost = [...running.values()].filter((r) => r.host === host).length;
      maxPerHost.set(host, Math.max(maxPerHost.get(host) ?? 0, onHost));
      return g.promise.finally(() => running.delete(id));
    });
  const finish = async (id: string): Promise<void> => {
    running.get(id)?.gate.open(id);
    await settle();
  };
  return { limiter, started, running, submit, finish, stats: () => ({ maxGlobal, maxPerHost }) };
}

describe('createLimiter', () => {
  it('never runs more than the global and per-host limits', async () => {
    const h = harness(4, 2);
    const all: Promise<string>[] = [];
    for (let i = 0; i < 40; i++) all.push(h.submit(`host${i % 5}`, `t${i}`));
    await settle();
    for (let round = 0; round < 40 && h.running.size > 0; round++) {
      assert.ok(h.limiter.active() <= 4);
      await h.finish([...h.running.keys()][0] ?? '');
    }
    assert.equal((await Promise.all(all)).length, 40);
    assert.equal(h.stats().maxGlobal, 4);
    for (const [, max] of h.stats().maxPerHost) assert.ok(max <= 2);
    assert.equal(h.limiter.active(), 0);
  });

  it('starts the tasks of one host in submission order', async () => {
    const h = harness(3, 1);
    for (let i = 0; i < 6; i++) void h.submit('a.example', `a${i}`);
    await settle();
    for (let round = 0; round < 6 && h.running.size > 0; round++)
      await h.finish([...h.running.keys()][0] ?? '');
    assert.deepEqual(h.started, ['a0', 'a1', 'a2', 'a3', 'a4', 'a5']);
  });

  it('lets a host that arrives later run before a busy host takes its third slot', async () => {
    const h = harness(2, 2);
    for (let i = 0; i < 10; i++) void h.submit('busy.example', `a${i}`);
    void h.submit('quiet.example', 'b0');
    await settle();
    assert.deepEqual(h.started, ['a0', 'a1']);
    await h.finish('a0');
    assert.deepEqual(h.started, ['a0', 'a1', 'b0']);
  });

  it('alternates between hosts when both have queued work', async () => {
    const h = harness(1, 1);
    for (let i = 0; i < 3; i++) void h.submit('x', `x${i}`);
    for (let i = 0; i < 3; i++) void h.submit('y', `y${i}`);
    await settle();
    for (let round = 0; round < 6 && h.running.size > 0; round++)
      await h.finish([...h.running.keys()][0] ?? '');
    assert.deepEqual(h.started, ['x0', 'y0', 'x1', 'y1', 'x2', 'y2']);
  });

  it('resolves with the value and rejects with the error of the task', async () => {
    const limiter = createLimiter({ global: 2, perHost: 1 });
    assert.equal(await limiter.run('h', async () => 42), 42);
    await assert.rejects(
      limiter.run('h', async () => Promise.reject(new Error('boom'))),
      /boom/,
    );
  });

  it('frees the slot when the task throws synchronously', async () => {
    const limiter = createLimiter({ global: 1, perHost: 1 });
    const throwing = (): Promise<number> => {
      throw new Error('sync');
    };
    await assert.rejects(limiter.run('h', throwing), /sync/);
    assert.equal(limiter.active(), 0);
    assert.equal(await limiter.run('h', async () => 'next'), 'next');
  });

  it('counts running tasks, not queued ones', async () => {
    const h = harness(2, 1);
    void h.submit('a', 'a0');
    void h.submit('a', 'a1');
    void h.submit('b', 'b0');
    await settle();
    assert.equal(h.limiter.active(), 2);
    await h.finish('a0');
    await h.finish('b0');
    assert.equal(h.limiter.active(), 1);
    await h.finish('a1');
    assert.equal(h.limiter.active(), 0);
  });
});

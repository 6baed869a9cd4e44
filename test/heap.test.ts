import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { heapFlags, MALLOC_ARENA_MAX, planHeap, RESTARTED_ENV, type Runtime } from '../src/heap.ts';
import { runCliAsync } from './support/daemon.ts';

const script = (over: Partial<Runtime> = {}): Runtime => ({
  execPath: '/usr/bin/node',
  execArgv: ['--import', 'tsx'],
  argv: ['/usr/bin/node', '/srv/feedsub/src/main.ts', 'serve', '--config', 'c.toml'],
  env: { PATH: '/usr/bin' },
  isSea: false,
  canExec: true,
  ...over,
});

describe('heapFlags', () => {
  it('sizes the old generation as asked and the semi-space at 1/128 of it, from 1 to 16 MB', () => {
    assert.deepEqual(heapFlags(512), ['--max-old-space-size=512', '--max-semi-space-size=4']);
    assert.deepEqual(heapFlags(64), ['--max-old-space-size=64', '--max-semi-space-size=1']);
    assert.deepEqual(heapFlags(8192), ['--max-old-space-size=8192', '--max-semi-space-size=16']);
  });

  it("matches the flags `make serve` starts node with, for the default's sake on Node 20", () => {
    const makefile = readFileSync(new URL('../Makefile', import.meta.url), 'utf8');
    const flags = /^HEAP_FLAGS \?= (.+)$/m.exec(makefile)?.[1]?.trim().split(/\s+/);
    assert.deepEqual(flags, heapFlags(loadConfig({ env: {} }).server.heap_limit_mb));
    assert.equal(
      /^serve: export MALLOC_ARENA_MAX \?= (\S+)$/m.exec(makefile)?.[1],
      MALLOC_ARENA_MAX,
    );
    assert.match(makefile, /^\tnode \$\(HEAP_FLAGS\) --import tsx src\/main\.ts serve$/m);
  });
});

describe('planHeap', () => {
  it('leaves the runtime alone when the limit is 0', () => {
    assert.deepEqual(planHeap(0, script()), { kind: 'keep', reason: 'off' });
  });

  it('keeps a process whose command line or NODE_OPTIONS already carries the flags and whose malloc arenas are capped', () => {
    const flags = heapFlags(256);
    const arenas = { PATH: '/usr/bin', MALLOC_ARENA_MAX: '4' };
    const execArgv = [...flags, '--import', 'tsx'];
    assert.equal(planHeap(256, script({ execArgv, env: arenas })).kind, 'keep');
    const env = { ...arenas, NODE_OPTIONS: `--enable-source-maps ${flags.join(' ')}` };
    assert.equal(planHeap(256, script({ env })).kind, 'keep');
    const underscores = ['--max_old_space_size=256', '--max_semi_space_size=2'];
    assert.equal(planHeap(256, script({ execArgv: underscores, env: arenas })).kind, 'keep');
  });

  it("restarts a process with the flags but no cap on malloc's arenas to set it, unless it cannot restart", () => {
    const execArgv = [...heapFlags(256), '--import', 'tsx'];
    const plan = planHeap(256, script({ execArgv }));
    assert.equal(plan.kind, 'restart');
    assert.equal(plan.kind === 'restart' && plan.env.MALLOC_ARENA_MAX, MALLOC_ARENA_MAX);
    assert.equal(plan.kind === 'restart' && plan.env.NODE_OPTIONS, heapFlags(256).join(' '));
    const own = planHeap(256, script({ env: { MALLOC_ARENA_MAX: '8' } }));
    assert.equal(
      own.kind === 'restart' && own.env.MALLOC_ARENA_MAX,
      '8',
      "the operator's own value",
    );
    assert.deepEqual(planHeap(256, script({ execArgv, canExec: false })), {
      kind: 'keep',
      reason: 'applied',
    });
  });

  it('restarts a script with the flags in NODE_OPTIONS, its own heap flags dropped and the rest kept in order', () => {
    const plan = planHeap(
      256,
      script({
        execArgv: ['--max-old-space-size=4096', '--import', 'tsx'],
        env: { PATH: '/usr/bin', NODE_OPTIONS: '--enable-source-maps --max-semi-space-size=32' },
      }),
    );
    assert.deepEqual(plan, {
      kind: 'restart',
      file: '/usr/bin/node',
      args: [
        '/usr/bin/node',
        '--import',
        'tsx',
        '/srv/feedsub/src/main.ts',
        'serve',
        '--config',
        'c.toml',
      ],
      env: {
        PATH: '/usr/bin',
        NODE_OPTIONS: '--enable-source-maps --max-old-space-size=256 --max-semi-space-size=2',
        MALLOC_ARENA_MAX,
        [RESTARTED_ENV]: '1',
      },
    });
  });

  it('restarts the single executable with its own arguments, without the repeated executable path', () => {
    const plan = planHeap(
      512,
      script({
        execPath: '/usr/local/bin/feedsub',
        execArgv: [],
        argv: ['/usr/local/bin/feedsub', '/usr/local/bin/feedsub', 'poll', '--once'],
        isSea: true,
      }),
    );
    assert.equal(plan.kind, 'restart');
    assert.deepEqual(plan.kind === 'restart' && plan.args, [
      '/usr/local/bin/feedsub',
      'poll',
      '--once',
    ]);
  });

  it('takes the last flag of a kind, as Node does: the command line over NODE_OPTIONS', () => {
    const env = { NODE_OPTIONS: heapFlags(512).join(' '), MALLOC_ARENA_MAX: '2' };
    assert.equal(planHeap(512, script({ env })).kind, 'keep');
    const plan = planHeap(512, script({ env, execArgv: ['--max-old-space-size=128'] }));
    assert.equal(plan.kind, 'restart');
    assert.equal(plan.kind === 'restart' && plan.env.MALLOC_ARENA_MAX, '2');
  });

  it('says it cannot when this Node.js has no execve, and never restarts a restarted process again', () => {
    assert.deepEqual(planHeap(256, script({ canExec: false })), {
      kind: 'cannot',
      flags: heapFlags(256),
    });
    const again = script({ env: { [RESTARTED_ENV]: '1', NODE_OPTIONS: '--max-old-space-size=9' } });
    assert.equal(planHeap(256, again).kind, 'cannot');
  });
});

describe('server.heap_limit_mb, end to end', () => {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-heap-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('applies a configured limit to poll --once run from source by restarting in place, or names the flags where Node cannot', async () => {
    const r = await runCliAsync(
      ['poll', '--once', '--data-dir', join(dir, 'data')],
      {
        FEEDSUB_SERVER_HEAP_LIMIT_MB: '256',
        FEEDSUB_LOG_FORMAT: 'json',
        FEEDSUB_LOG_LEVEL: 'debug',
      },
      60_000,
      { source: true },
    );
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const heap = lines.find((line) => String(line.msg).startsWith('heap: '));
    assert.ok(heap, `no heap line in:\n${r.stderr}`);
    if (typeof (process as { execve?: unknown }).execve === 'function') {
      assert.equal(heap.msg, 'heap: limit in effect');
      // The old generation as configured plus a young generation of a few semi-spaces of 2 MB.
      assert.ok(Number(heap.effective_mb) >= 256 && Number(heap.effective_mb) < 290, r.stderr);
    } else {
      assert.equal(heap.level, 'warn');
      assert.equal(heap.start_node_with, '--max-old-space-size=256 --max-semi-space-size=2');
      // Still the flags the test runner gave it: 512 MB and its young generation.
      assert.ok(Number(heap.effective_mb) >= 512 && Number(heap.effective_mb) < 560, r.stderr);
    }
  });
});

// Tests for src/db/assets.ts: development fallbacks and the private addon cache the executable writes.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { Worker } from 'node:worker_threads';
import {
  addonCacheRoots,
  installAddon,
  nativeBindingPath,
  readSchemaSql,
  startWorkerThread,
} from '../src/assets.ts';

const scratch = mkdtempSync(join(tmpdir(), 'feedsub-assets-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

let counter = 0;
/** A fresh, not yet existing folder under the scratch directory. */
function freshPath(): string {
  counter += 1;
  return join(scratch, `case-${counter}`);
}

const addon = new Uint8Array(Buffer.from('\x7fELF pretend addon bytes'));
const hash16 = createHash('sha256').update(addon).digest('hex').slice(0, 16);

describe('development (not a single executable)', () => {
  it('reads schema.sql from the repository', () => {
    const expected = readFileSync(new URL('../schema.sql', import.meta.url), 'utf8');
    assert.equal(readSchemaSql(), expected);
  });

  it('lets better-sqlite3 find its own addon', () => {
    assert.equal(nativeBindingPath(), undefined);
  });

  const firstMessage = (worker: Worker) =>
    new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });

  it('starts parse threads from a bundle of their TypeScript module', async () => {
    const first = startWorkerThread('parse');
    const second = startWorkerThread('parse');
    try {
      // Both listen before either is awaited: a thread's message with no listener yet is lost.
      assert.deepEqual(await Promise.all([firstMessage(first), firstMessage(second)]), [
        { type: 'ready' },
        { type: 'ready' },
      ]);
    } finally {
      await Promise.all([first.terminate(), second.terminate()]);
    }
  });
});

describe('addonCacheRoots', () => {
  const temp = join(tmpdir(), `feedsub-${process.getuid?.() ?? 'user'}`);
  const cases: Array<{ name: string; env: NodeJS.ProcessEnv; expected: string[] }> = [
    { name: 'only the temp folder when nothing is set', env: {}, expected: [temp] },
    {
      name: 'HOME/.cache before the temp folder',
      env: { HOME: '/home/a' },
      expected: ['/home/a/.cache/feedsub', temp],
    },
    {
      name: 'XDG_CACHE_HOME before HOME',
      env: { XDG_CACHE_HOME: '/x', HOME: '/home/a' },
      expected: ['/x/feedsub', '/home/a/.cache/feedsub', temp],
    },
    {
      name: "systemd's first CACHE_DIRECTORY first",
      env: { CACHE_DIRECTORY: '/var/cache/feedsub:/var/cache/other', HOME: '/home/a' },
      expected: ['/var/cache/feedsub/addon', '/home/a/.cache/feedsub', temp],
    },
    {
      name: 'relative paths ignored',
      env: { XDG_CACHE_HOME: 'rel', HOME: 'also-rel', CACHE_DIRECTORY: 'x' },
      expected: [temp],
    },
  ];
  for (const c of cases) {
    it(`lists ${c.name}`, () => assert.deepEqual(addonCacheRoots(c.env), c.expected));
  }
});

describe('installAddon', () => {
  it('writes the bytes under <root>/<version>-<hash>/ in folders only the owner can use', () => {
    const root = freshPath();
    const file = installAddon(addon, [root], '1.2.3');
    assert.equal(file, join(root, `1.2.3-${hash16}`, 'better_sqlite3.node'));
    assert.deepEqual(new Uint8Array(readFileSync(file)), addon);
    assert.equal(statSync(root).mode & 0o777, 0o700);
    assert.equal(statSync(dirname(file)).mode & 0o777, 0o700);
    assert.equal(statSync(file).mode & 0o077, 0);
  });

  it('reuses the file when its hash matches', () => {
    const root = freshPath();
    const first = installAddon(addon, [root], '1.2.3');
    const before = statSync(first);
    const second = installAddon(addon, [root], '1.2.3');
    assert.equal(second, first);
    assert.equal(statSync(second).ino, before.ino);
    assert.equal(statSync(second).mtimeMs, before.mtimeMs);
  });

  it('replaces a damaged file and leaves no temporary file behind', () => {
    const root = freshPath();
    const file = installAddon(addon, [root], '1.2.3');
    chmodSync(file, 0o600);
    writeFileSync(file, 'truncated');
    assert.equal(installAddon(addon, [root], '1.2.3'), file);
    assert.deepEqual(new Uint8Array(readFileSync(file)), addon);
    assert.deepEqual(readdirSync(dirname(file)), ['better_sqlite3.node']);
  });

  it('keeps different addon bytes in different folders', () => {
    const root = freshPath();
    const a = installAddon(addon, [root], '1.2.3');
    const b = installAddon(new Uint8Array([1, 2, 3]), [root], '1.2.3');
    assert.notEqual(dirname(a), dirname(b));
    assert.deepEqual(new Uint8Array(readFileSync(a)), addon);
  });

  it('skips a root that other users could write to and uses the next', () => {
    const shared = freshPath();
    mkdirSync(shared, { mode: 0o700 });
    chmodSync(shared, 0o777);
    const next = freshPath();
    const file = installAddon(addon, [shared, next], '1.2.3');
    assert.ok(file.startsWith(`${next}/`), file);
    assert.deepEqual(readdirSync(shared), []);
  });

  it('skips a root that is a file and uses the next', () => {
    const notDir = freshPath();
    writeFileSync(notDir, 'x');
    const next = freshPath();
    assert.ok(installAddon(addon, [notDir, next], '1.2.3').startsWith(`${next}/`));
  });

  it('throws naming every root when none is usable', () => {
    const a = freshPath();
    const b = freshPath();
    writeFileSync(a, 'x');
    writeFileSync(b, 'x');
    assert.throws(
      () => installAddon(addon, [a, b], '1.2.3'),
      (error: unknown) =>
        error instanceof Error && error.message.includes(a) && error.message.includes(b),
    );
  });
});

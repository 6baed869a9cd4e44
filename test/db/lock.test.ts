// The data directory's lock: one holder at a time, given back on release (a SIGKILLed holder: test/app-instance.test.ts).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { DataDirLockedError, LOCK_FILE, lockDataDir } from '../../src/db/lock.ts';

describe('lockDataDir', () => {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-lock-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a second holder at once, naming the directory, until the first releases it', () => {
    const first = lockDataDir(dir);
    try {
      const started = Date.now();
      assert.throws(
        () => lockDataDir(dir),
        (err: unknown) =>
          err instanceof DataDirLockedError &&
          err.message.includes(dir) &&
          /another feedsub serve is running/.test(err.message),
      );
      assert.ok(Date.now() - started < 1000, 'refused without waiting for a busy timeout');
    } finally {
      first.release();
    }
    first.release(); // idempotent
    const again = lockDataDir(dir);
    again.release();
  });

  it('keeps its lock file owner-only and empty', () => {
    const lock = lockDataDir(dir);
    try {
      const st = statSync(join(dir, LOCK_FILE));
      assert.equal(st.mode & 0o777, 0o600);
      assert.equal(st.size, 0);
    } finally {
      lock.release();
    }
  });
});

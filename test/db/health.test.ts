// The write probe behind /healthz (its HTTP side: test/http/server.test.ts).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { cachedFreeBytes, probeWrite } from '../../src/db/health.ts';
import { openDatabase } from '../../src/db/open.ts';

describe('probeWrite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-health-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reports the disk full when it has less free space than the floor', async () => {
    const db = openDatabase(join(dir, 'feedsub.db'));
    try {
      assert.deepEqual(await probeWrite(db), { ok: true });
      const tight = await probeWrite(db, { minFreeBytes: Number.MAX_SAFE_INTEGER });
      assert.equal(tight.ok, false);
      assert.match(!tight.ok ? tight.reason : '', /^disk is full: \d+ bytes free/);
    } finally {
      db.close();
    }
  });

  it('writes nothing: the database is byte for byte the same after a probe', async () => {
    const db = openDatabase(join(dir, 'same.db'));
    try {
      const changes = () => db.pragma('data_version', { simple: true });
      const before = [db.pragma('page_count', { simple: true }), changes()];
      const wal = db.pragma('wal_checkpoint(PASSIVE)');
      await probeWrite(db);
      assert.deepEqual([db.pragma('page_count', { simple: true }), changes()], before);
      assert.deepEqual(db.pragma('wal_checkpoint(PASSIVE)'), wal, 'no frame added to the WAL');
    } finally {
      db.close();
    }
  });

  it('restores the busy timeout it shortens for the probe', async () => {
    const db = openDatabase(join(dir, 'timeout.db'));
    try {
      await probeWrite(db);
      assert.equal(db.pragma('busy_timeout', { simple: true }), 5000);
    } finally {
      db.close();
    }
  });
});

describe('cachedFreeBytes', () => {
  it('reads the disk at most once a second, answering the last reading at once meanwhile', async () => {
    const reads: string[] = [];
    let bytes = 100;
    let t = 0;
    const free = cachedFreeBytes(
      async (dir) => {
        reads.push(dir);
        return bytes;
      },
      1000,
      () => t,
    );
    assert.deepEqual(
      await Promise.all([free('/d'), free('/d')]),
      [100, 100],
      'the first calls wait for one reading',
    );
    assert.equal(reads.length, 1);
    bytes = 50;
    t = 999;
    assert.equal(await free('/d'), 100, 'within the second: the last reading, no new one');
    assert.equal(reads.length, 1);
    t = 1000;
    assert.equal(await free('/d'), 100, 'past it: the last reading, while a new one starts');
    assert.equal(reads.length, 2);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(await free('/d'), 50, 'the new reading once it is in');
    assert.equal(reads.length, 2);
  });

  it('reads again at once after a failed reading', async () => {
    let fail = false;
    let t = 0;
    const free = cachedFreeBytes(
      async () => {
        if (fail) throw new Error('EIO');
        return 7;
      },
      1000,
      () => t,
    );
    assert.equal(await free('/d'), 7);
    fail = true;
    t = 1000;
    assert.equal(await free('/d'), 7);
    await new Promise((resolve) => setImmediate(resolve));
    await assert.rejects(
      free('/d'),
      /EIO/,
      'no stale reading after a failure: the error, as statfs gave it',
    );
  });
});

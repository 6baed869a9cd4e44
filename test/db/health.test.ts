// The write probe behind /healthz (its HTTP side: test/http/server.test.ts).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { probeWrite } from '../../src/db/health.ts';
import { openDatabase } from '../../src/db/open.ts';

describe('probeWrite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-health-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reports the disk full when it has less free space than the floor', async () => {
    const db = openDatabase(join(dir, 'feedsub.db'));
    try {
      assert.deepEqual(await probeWrite(db), { ok: true });
      const tight = await probeWrite(db, Number.MAX_SAFE_INTEGER);
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

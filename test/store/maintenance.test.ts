// WAL truncation on the event loop's connection: it never waits out the busy timeout on another process's lock.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { checkpointWal } from '../../src/store/maintenance.ts';
import { makeWorld } from '../support/world.ts';

describe('checkpointWal', () => {
  const w = makeWorld();
  after(() => w.close());

  it('gives up at once while another connection holds the write lock, and truncates once it is free', () => {
    const db = w.ctx.db;
    db.prepare(
      "INSERT INTO applications (id, name, created_at) VALUES ('app_x', 'x', '2026-01-01')",
    ).run();
    const other = new Database(db.name);
    try {
      other.exec('BEGIN IMMEDIATE'); // as a poll --once beside serve does while it records
      const started = Date.now();
      const held = checkpointWal(db);
      // The connection's busy timeout is 5 s: waiting it out would take that long and miss this deadline.
      assert.ok(Date.now() - started < 2000, `returned after ${Date.now() - started} ms`);
      assert.equal(held.busy, true);
      assert.equal(
        db.pragma('busy_timeout', { simple: true }),
        5000,
        'the busy timeout is put back',
      );
      other.exec('COMMIT');
      const free = checkpointWal(db);
      assert.equal(free.busy, false);
      assert.equal(free.walPages, 0, 'the WAL is truncated');
    } finally {
      other.close();
    }
  });
});

// The WAL checkpoint thread: a second connection on a worker thread copies the WAL into the database file.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { BACKSTOP_AUTOCHECKPOINT_PAGES, startCheckpointer } from '../../src/db/checkpointer.ts';
import { openDatabase, type Db } from '../../src/db/open.ts';
import { silentLogger } from '../../src/log.ts';
import type { Telemetry } from '../../src/telemetry.ts';
import { noTelemetry } from '../../src/telemetry.ts';

const autocheckpoint = (db: Db) => db.pragma('wal_autocheckpoint', { simple: true }) as number;

async function until(test: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !test(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(test(), `timed out waiting: ${what}`);
}

describe('checkpointer', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'feedsub-checkpoint-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('copies committed WAL frames into the database file on its own thread and reports the WAL to telemetry', async () => {
    const file = join(dir, 'copy.db');
    const db = openDatabase(file);
    const reported: [number, number][] = [];
    const telemetry: Telemetry = {
      ...noTelemetry,
      checkpointed: (wal, done) => reported.push([wal, done]),
    };
    const checkpointer = startCheckpointer(db, { intervalMs: 10, logger: silentLogger, telemetry });
    try {
      assert.equal(await checkpointer.ready(), true);
      const before = statSync(file).size;
      db.exec('CREATE TABLE filler (v TEXT)');
      const insert = db.prepare('INSERT INTO filler VALUES (?)');
      db.transaction(() => {
        for (let i = 0; i < 200; i++) insert.run('x'.repeat(1000));
      })();
      await until(
        () =>
          (checkpointer.lastPass?.checkpointedFrames ?? 0) > 0 &&
          checkpointer.lastPass?.checkpointedFrames === checkpointer.lastPass?.walFrames,
        'every frame checkpointed',
      );
      assert.ok(
        statSync(file).size > before + 150_000,
        'the rows are in the database file, not only in the WAL',
      );
      assert.deepEqual(reported.at(-1), [
        checkpointer.lastPass!.walFrames,
        checkpointer.lastPass!.checkpointedFrames,
      ]);
    } finally {
      await checkpointer.stop();
      db.close();
    }
  });

  it("leaves SQLite's own checkpoint on commit only as a backstop while it runs, and gives it back when stopped", async () => {
    const db = openDatabase(join(dir, 'backstop.db'));
    try {
      assert.equal(autocheckpoint(db), 1000);
      const checkpointer = startCheckpointer(db, { intervalMs: 10, logger: silentLogger });
      assert.equal(await checkpointer.ready(), true);
      assert.equal(autocheckpoint(db), BACKSTOP_AUTOCHECKPOINT_PAGES);
      await checkpointer.stop();
      assert.equal(autocheckpoint(db), 1000);
      await checkpointer.stop(); // a second stop is harmless
    } finally {
      db.close();
    }
  });

  it("falls back to SQLite's checkpoint on commit when the thread cannot start", async () => {
    const db = openDatabase(join(dir, 'fallback.db'));
    const warnings: string[] = [];
    const logger = {
      ...silentLogger,
      warn: (message: string) => {
        warnings.push(message);
      },
    };
    try {
      const checkpointer = startCheckpointer(db, {
        intervalMs: 10,
        logger,
        spawn: () => new Worker('throw new Error("no thread here")', { eval: true }),
      });
      assert.equal(await checkpointer.ready(), false);
      await until(() => autocheckpoint(db) === 1000 && warnings.length > 0, 'the fallback');
      assert.match(warnings[0] ?? '', /checkpoint thread failed/);
      await checkpointer.stop();
    } finally {
      db.close();
    }
  });

  it('logs a failing pass once per change of its error, not on every pass, and the recovery once', async () => {
    const db = openDatabase(join(dir, 'failing.db'));
    const lines: string[] = [];
    const logger = {
      ...silentLogger,
      warn: (message: string, fields?: Record<string, unknown>) => {
        lines.push(`${message} ${String(fields?.error)}`);
      },
      info: (message: string, fields?: Record<string, unknown>) => {
        lines.push(`${message} ${String(fields?.failed_passes)}`);
      },
    };
    // A thread whose passes fail as on a full disk: 50 passes (10 s at the real 200 ms), another error, then one works.
    const script = `
      const { parentPort } = require('node:worker_threads');
      parentPort.postMessage({ type: 'ready' });
      for (let i = 0; i < 50; i++) parentPort.postMessage({ type: 'error', message: 'database or disk is full' });
      parentPort.postMessage({ type: 'error', message: 'disk I/O error' });
      parentPort.postMessage({ type: 'pass', walFrames: 3, checkpointedFrames: 3 });
      parentPort.postMessage({ type: 'pass', walFrames: 5, checkpointedFrames: 5 });`;
    try {
      const checkpointer = startCheckpointer(db, {
        intervalMs: 10,
        logger,
        spawn: () => new Worker(script, { eval: true }),
      });
      await until(() => checkpointer.lastPass?.walFrames === 5, 'the last pass');
      assert.deepEqual(lines, [
        'checkpoint: unable to checkpoint the WAL; trying again database or disk is full',
        'checkpoint: unable to checkpoint the WAL; trying again disk I/O error',
        'checkpoint: checkpointing the WAL again 51',
      ]);
      await checkpointer.stop();
    } finally {
      db.close();
    }
  });

  it('needs no thread for an in-memory database', async () => {
    const db = openDatabase(':memory:');
    try {
      const checkpointer = startCheckpointer(db, { intervalMs: 10, logger: silentLogger });
      assert.equal(await checkpointer.ready(), false);
      assert.equal(checkpointer.lastPass, undefined);
      await checkpointer.stop();
    } finally {
      db.close();
    }
  });
});

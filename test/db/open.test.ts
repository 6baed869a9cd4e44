// Opening the database: the data directory and every database file are owner-only, whatever the umask.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openDatabase, WAL_SIZE_LIMIT_BYTES } from '../../src/db/open.ts';

const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

/** Runs `fn` with the process umask set to `umask`, then puts the old one back. */
function withUmask<T>(umask: number, fn: () => T): T {
  const old = process.umask(umask);
  try {
    return fn();
  } finally {
    process.umask(old);
  }
}

describe('openDatabase file modes', () => {
  const root = mkdtempSync(join(tmpdir(), 'feedsub-open-'));
  after(() => rmSync(root, { recursive: true, force: true }));

  for (const umask of [0o022, 0o000, 0o277]) {
    it(`creates the data directory 0700 and feedsub.db, -wal and -shm 0600 under umask ${umask.toString(8).padStart(3, '0')}`, () => {
      const dir = join(root, `umask-${umask.toString(8)}`, 'data');
      const file = join(dir, 'feedsub.db');
      const db = withUmask(umask, () => {
        const opened = openDatabase(file);
        opened.exec(
          "INSERT INTO applications (id, name, created_at) VALUES ('a', 'secret', 'now')",
        );
        return opened;
      });
      try {
        assert.equal(modeOf(dir), '700');
        assert.equal(modeOf(join(dir, '..')), '700', 'a parent it created too');
        for (const f of [file, `${file}-wal`, `${file}-shm`]) assert.equal(modeOf(f), '600', f);
      } finally {
        db.close();
      }
    });
  }

  it('tightens a database and its WAL left readable by others, and leaves an existing directory as it is', () => {
    const dir = join(root, 'existing');
    mkdirSync(dir, { mode: 0o755 });
    chmodSync(dir, 0o755);
    const file = join(dir, 'feedsub.db');
    openDatabase(file).close();
    chmodSync(file, 0o644);
    writeFileSync(`${file}-wal`, '');
    chmodSync(`${file}-wal`, 0o644);
    const db = openDatabase(file);
    try {
      assert.equal(modeOf(file), '600');
      assert.equal(modeOf(`${file}-wal`), '600');
      assert.equal(modeOf(dir), '755', 'a directory it did not create may be shared on purpose');
    } finally {
      db.close();
    }
  });
});

describe('openDatabase WAL size', () => {
  const root = mkdtempSync(join(tmpdir(), 'feedsub-open-wal-'));
  after(() => rmSync(root, { recursive: true, force: true }));

  it('cuts the WAL file back to WAL_SIZE_LIMIT_BYTES when it starts over after a large transaction', () => {
    const file = join(root, 'feedsub.db');
    const db = openDatabase(file);
    try {
      db.exec('CREATE TABLE big (b BLOB)');
      // About 40 MiB of pages in one transaction: the WAL file grows to hold them all.
      db.transaction(() => {
        const insert = db.prepare('INSERT INTO big (b) VALUES (randomblob(4000))');
        for (let i = 0; i < 10_000; i++) insert.run();
      })();
      const grown = statSync(`${file}-wal`).size;
      assert.ok(grown > 2 * WAL_SIZE_LIMIT_BYTES, `the WAL grew to ${grown} bytes`);
      // Everything is copied into the database file (the checkpoint thread does this in serve), so the next write
      // starts the WAL over from its beginning: the file is cut back then, with no TRUNCATE checkpoint.
      db.pragma('wal_checkpoint(PASSIVE)');
      db.exec('INSERT INTO big (b) VALUES (1)');
      const size = statSync(`${file}-wal`).size;
      assert.ok(size <= WAL_SIZE_LIMIT_BYTES, `the WAL is ${size} bytes`);
    } finally {
      db.close();
    }
  });
});

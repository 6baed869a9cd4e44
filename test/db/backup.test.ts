import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, beforeEach, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { backupDatabase, BackupExistsError } from '../../src/db/backup.ts';
import { openDatabase, type Db } from '../../src/db/open.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

// A second process that commits one application row per transaction, named w0, w1, w2… in order, until killed
// (bounded at 2 000 000 rows); it prints "ready" once 200 rows are committed.
const WRITER = `
const Database = require('better-sqlite3');
const db = new Database(process.argv[1]);
db.pragma('busy_timeout = 5000');
const insert = db.prepare('INSERT INTO applications (id, name, created_at) VALUES (?, ?, ?)');
for (let i = 0; i < 2000000; i++) {
  insert.run('f' + i.toString(16).padStart(23, '0'), 'w' + i, new Date().toISOString());
  if (i === 200) process.stdout.write('ready\\n');
}`;

function countWritten(db: Database.Database): { count: number; max: number } {
  return db
    .prepare(
      "SELECT count(*) AS count, coalesce(max(CAST(substr(name, 2) AS INTEGER)), -1) AS max FROM applications WHERE name LIKE 'w%'",
    )
    .get() as { count: number; max: number };
}

describe('backupDatabase', () => {
  let dir: string;
  let source: string;
  let db: Db;
  const children: ChildProcess[] = [];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'feedsub-backup-'));
    source = join(dir, 'feedsub.db');
    db = openDatabase(source);
  });
  afterEach(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  after(() => {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null && child.pid)
        process.kill(child.pid, 'SIGKILL');
  });

  it('copies a consistent snapshot while another process keeps writing', async () => {
    const seed = db.prepare('INSERT INTO applications (id, name, created_at) VALUES (?, ?, ?)');
    db.transaction(() => {
      for (let i = 0; i < 30_000; i++)
        seed.run(
          'e' + i.toString(16).padStart(23, '0'),
          `seed-${i}-${'x'.repeat(60)}`,
          '2026-01-01T00:00:00.000Z',
        );
    })();
    const writer = spawn(process.execPath, ['-e', WRITER, source], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(writer);
    const exited = once(writer, 'exit');
    await new Promise<void>((resolve, reject) => {
      writer.stdout!.on('data', (d: Buffer) => {
        if (d.toString().includes('ready')) resolve();
      });
      writer.once('exit', (code) => reject(new Error(`writer exited early (${code})`)));
    });
    const before = countWritten(db).count;
    const result = await backupDatabase(source, join(dir, 'copy.db'));
    const afterBackup = countWritten(db).count;
    writer.kill('SIGKILL');
    await exited;

    assert.ok(afterBackup > before, 'the writer committed rows while the backup ran');
    const copy = new Database(join(dir, 'copy.db'), { readonly: true, fileMustExist: true });
    try {
      assert.equal(copy.pragma('integrity_check', { simple: true }), 'ok');
      assert.equal(
        copy.pragma('user_version', { simple: true }),
        db.pragma('user_version', { simple: true }),
      );
      assert.equal(
        copy.prepare("SELECT count(*) FROM applications WHERE name LIKE 'seed-%'").pluck().get(),
        30_000,
      );
      const written = countWritten(copy);
      assert.ok(
        written.count >= before && written.count <= afterBackup,
        `${written.count} rows in [${before}, ${afterBackup}]`,
      );
      assert.equal(
        written.max,
        written.count - 1,
        "a snapshot holds a prefix of the writer's commits, without gaps",
      );
    } finally {
      copy.close();
    }
    assert.equal(result.file, join(dir, 'copy.db'));
    assert.equal(result.bytes, statSync(join(dir, 'copy.db')).size);
    assert.ok(result.pages > 0 && result.durationMs >= 0);
  });

  it('writes an owner-only file and leaves no temporary or WAL files beside it', async () => {
    const out = mkdtempSync(join(tmpdir(), 'feedsub-backup-out-'));
    try {
      await backupDatabase(source, join(out, 'copy.db'));
      assert.deepEqual(readdirSync(out), ['copy.db']);
      assert.equal(statSync(join(out, 'copy.db')).mode & 0o777, 0o600);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('refuses to overwrite an existing file unless forced', async () => {
    const dest = join(dir, 'existing.db');
    writeFileSync(dest, 'keep me');
    await assert.rejects(backupDatabase(source, dest), BackupExistsError);
    assert.equal(readFileSync(dest, 'utf8'), 'keep me');
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.includes('partial')),
      [],
    );
    await backupDatabase(source, dest, { force: true });
    const copy = new Database(dest, { readonly: true, fileMustExist: true });
    try {
      assert.equal(copy.pragma('quick_check', { simple: true }), 'ok');
    } finally {
      copy.close();
    }
  });

  it('refuses to write over the database it copies, even with force', async () => {
    await assert.rejects(backupDatabase(source, source, { force: true }), /is the database itself/);
    assert.equal(db.pragma('quick_check', { simple: true }), 'ok');
  });

  it('fails without creating anything when there is no database', async () => {
    await assert.rejects(
      backupDatabase(join(dir, 'missing.db'), join(dir, 'copy.db')),
      /no database at/,
    );
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.startsWith('copy') || f.includes('partial')),
      [],
    );
  });
});

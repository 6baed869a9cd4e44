// Numbered migrations take an existing database to the schema a new one gets from schema.sql.
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openDatabase } from '../../src/db/open.ts';

/** Tables and indexes with their columns, as SQLite reports them, whatever the SQL text's spacing. */
function shape(db: Database.Database, names: string[]) {
  return names.map((name) => ({
    name,
    columns: db.pragma(`table_info(${name})`),
    foreignKeys: db.pragma(`foreign_key_list(${name})`),
    indexes: (db.pragma(`index_list(${name})`) as { name: string }[]).map((i) => ({
      name: i.name,
      columns: db.pragma(`index_info(${i.name})`),
    })),
  }));
}

describe('migration 2 (quota_usage)', () => {
  it('gives a version-1 database the quota_usage table and index a new database has', () => {
    const dir = mkdtempSync(join(tmpdir(), 'feedsub-migrate-'));
    try {
      const fresh = openDatabase(join(dir, 'fresh.db'));
      // A version-1 database: the schema before the quotas, its version number, and a row that must survive.
      const file = join(dir, 'old.db');
      const old = openDatabase(file);
      old.exec('DROP TABLE quota_usage');
      old.pragma('user_version = 1');
      old
        .prepare("INSERT INTO applications (id, name, created_at) VALUES ('a', 'kept', 'now')")
        .run();
      old.close();
      const migrated = openDatabase(file);
      assert.equal(
        migrated.pragma('user_version', { simple: true }),
        fresh.pragma('user_version', { simple: true }),
      );
      assert.deepEqual(shape(migrated, ['quota_usage']), shape(fresh, ['quota_usage']));
      assert.equal(migrated.prepare('SELECT name FROM applications').pluck().get(), 'kept');
      migrated.close();
      fresh.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

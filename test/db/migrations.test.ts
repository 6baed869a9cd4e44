// Migrations: a version-1 database (test/fixtures/schema-v1.sql) migrates to exactly schema.sql, and the entry keys the
// version-1 code recorded still match after the upgrade, so nothing is re-sent.
import Database from 'better-sqlite3';
import { createHmac } from 'node:crypto';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { manualClock } from '../../src/clock.ts';
import { quietCtx, type Ctx } from '../../src/context.ts';
import { defaultConfig, withConfig } from '../../src/config.ts';
import { MIGRATIONS } from '../../src/db/migrations.ts';
import { openDatabase, type Db } from '../../src/db/open.ts';
import { SqliteEngine } from '../../src/db/sqlite-engine.ts';
import { findHeldEntry } from '../../src/store/entries.ts';
import { findHistory } from '../../src/store/entry-history.ts';
import { getWebSub } from '../../src/store/websub-subscriptions.ts';
import { silentLogger } from '../../src/log.ts';
import { createWorkers } from '../../src/worker/index.ts';
import { pollTick } from '../../src/worker/poll/round.ts';
import { V1_ITEMS, V1_KEYS } from '../support/identity.ts';
import { startOrigin } from '../support/servers.ts';
import { storageOffBy } from '../support/storage.ts';

const V1_SCHEMA = readFileSync(new URL('../fixtures/schema-v1.sql', import.meta.url), 'utf8');

/** A version-1 database file, as feedsub 1.x left it, filled by `fill`. */
function v1Database(dir: string, fill: (db: Database.Database) => void = () => {}): string {
  const file = join(dir, 'old.db');
  const db = new Database(file);
  db.exec(V1_SCHEMA);
  fill(db);
  db.pragma('user_version = 1');
  db.close();
  return file;
}

/** A database as feedsub left it at schema `version` (a version-1 file, migrated step by step), filled by `fill`. */
function databaseAt(dir: string, version: number, fill: (db: Database.Database) => void): string {
  const file = v1Database(dir);
  const old = new Database(file);
  old.pragma('foreign_keys = OFF'); // as db/open.ts migrate() runs the steps
  for (const step of MIGRATIONS.slice(0, version - 1)) step(old); // versions 2 to `version`
  old.pragma(`user_version = ${version}`);
  fill(old);
  old.close();
  return file;
}

/** Every table's columns (name, type, nullability, default, key) and every index's SQL. */
function shape(db: Db): unknown {
  const tables = db
    .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name")
    .all() as { name: string }[];
  return {
    tables: tables.map((t) => ({
      name: t.name,
      columns: db.prepare(`PRAGMA table_xinfo(${t.name})`).all(),
    })),
    indexes: db
      .prepare(
        "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name",
      )
      .all(),
  };
}

test('a version-1 database migrates to exactly the schema a new database gets', () => {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-migrate-'));
  try {
    const migrated = openDatabase(v1Database(dir));
    const fresh = openDatabase(join(dir, 'new.db'));
    assert.deepEqual(shape(migrated), shape(fresh));
    assert.equal(
      migrated.pragma('user_version', { simple: true }),
      fresh.pragma('user_version', { simple: true }),
    );
    migrated.close();
    fresh.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the upgrade to version 16 keeps the chart's poll counts, now keyed by hour and then feed", () => {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-migrate-'));
  try {
    const file = databaseAt(dir, 15, (old) => {
      old.exec(`INSERT INTO feeds (id, url, fetch_url, next_poll_at, created_at, updated_at)
                  VALUES ('f1', 'https://a.example/', 'https://a.example/', '2026-01-01', '2026-01-01', '2026-01-01')`);
      old.exec(`INSERT INTO feed_poll_hours (feed_id, hour, ok, failed, throttled, new_entries)
                  VALUES ('f1', '2026-01-01T10', 4, 1, 0, 2), ('f1', '2026-01-01T09', 3, 0, 1, 0)`);
    });
    const db = openDatabase(file);
    assert.deepEqual(
      db.prepare('SELECT * FROM feed_poll_hours').all(),
      [
        { hour: '2026-01-01T09', feed_id: 'f1', ok: 3, failed: 0, throttled: 1, new_entries: 0 },
        { hour: '2026-01-01T10', feed_id: 'f1', ok: 4, failed: 1, throttled: 0, new_entries: 2 },
      ],
      'every count kept, in hour order',
    );
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the upgrade to version 17 moves each identity probe out of the feeds row, probes kept', () => {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-migrate-'));
  try {
    const file = databaseAt(dir, 16, (old) =>
      old.exec(`INSERT INTO feeds (id, url, fetch_url, next_poll_at, created_at, updated_at, identity_probe)
                  VALUES ('f1', 'https://a.example/', 'https://a.example/', '2026-01-01', '2026-01-01', '2026-01-01', '{"link":["k1"]}'),
                         ('f2', 'https://b.example/', 'https://b.example/', '2026-01-01', '2026-01-01', '2026-01-01', NULL)`),
    );
    const db = openDatabase(file);
    assert.deepEqual(db.prepare('SELECT * FROM feed_probes').all(), [
      { feed_id: 'f1', probe: '{"link":["k1"]}' },
    ]);
    assert.equal(
      (db.prepare('PRAGMA table_info(feeds)').all() as { name: string }[]).some(
        (c) => c.name === 'identity_probe',
      ),
      false,
      'the column is gone from the row',
    );
    db.prepare("DELETE FROM feeds WHERE id = 'f1'").run();
    assert.equal(
      db.prepare('SELECT count(*) FROM feed_probes').pluck().get(),
      0,
      'deleted with its feed',
    );
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the upgrade to version 19 keeps each WebSub callback the hub knows: its token is the one derived from the secret', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-migrate-'));
  const t = '2026-01-01T00:00:00.000Z';
  try {
    const file = databaseAt(dir, 18, (old) => {
      old.exec(`INSERT INTO websub_subscriptions (feed_id, hub_url, topic_url, secret, status, lease_expires_at,
                  next_action_at, created_at, updated_at)
                VALUES ('${'a'.repeat(24)}', 'https://hub.example/', 'https://a.example/f', 'the secret', 'active',
                  '${t}', '${t}', '${t}', '${t}')`);
    });
    const store = new SqliteEngine(openDatabase(file));
    const row = (await getWebSub(store, 'a'.repeat(24)))!;
    const derived = createHmac('sha256', 'the secret')
      .update(`feedsub websub callback ${'a'.repeat(24)}`)
      .digest('base64url');
    assert.deepEqual(
      [row.callback_token, row.previous_token, row.status, row.secret],
      [derived, null, 'active', 'the secret'],
    );
    await store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the upgrade to version 20 indexes the guids and URLs of the entries stored and held before it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-migrate-'));
  const t = '2026-01-01T00:00:00.000Z';
  const entry = (n: number) => JSON.stringify({ guid: `g${n}`, url: `https://a.example/${n}` });
  try {
    const file = databaseAt(dir, 19, (old) => {
      old.exec(`INSERT INTO feeds (id, url, fetch_url, next_poll_at, created_at, updated_at)
                  VALUES ('f1', 'https://a.example/', 'https://a.example/', '${t}', '${t}', '${t}')`);
      old
        .prepare(
          `INSERT INTO entry_history (feed_id, key, content_hash, first_seen_at, fate, entry)
           VALUES ('f1', 'k1', 'h', '${t}', 'new', ?)`,
        )
        .run(entry(1));
      old
        .prepare(
          `INSERT INTO held_entries (feed_id, key, entry, position, held_at) VALUES ('f1', 'k2', ?, 0, '${t}')`,
        )
        .run(entry(2));
    });
    const store = new SqliteEngine(openDatabase(file));
    assert.deepEqual(
      [
        (await findHistory(store, 'f1', 'g1'))?.key,
        (await findHistory(store, 'f1', 'https://a.example/1'))?.key,
        (await findHeldEntry(store, 'f1', 'g2'))?.key,
        (await findHeldEntry(store, 'f1', 'https://a.example/2'))?.key,
      ],
      ['k1', 'k1', 'k2', 'k2'],
    );
    const indexed = async (index: string, value: string) =>
      (
        await store.column(
          `SELECT count(*) FROM ${index.replace(/_by_.*/, '')} INDEXED BY ${index} WHERE feed_id = 'f1' AND entry ->> '$.${index.replace(/.*_by_/, '')}' = ?`,
          [value],
        )
      )[0];
    assert.deepEqual(
      [
        await indexed('entry_history_by_guid', 'g1'),
        await indexed('entry_history_by_url', 'https://a.example/1'),
        await indexed('held_entries_by_guid', 'g2'),
        await indexed('held_entries_by_url', 'https://a.example/2'),
      ],
      [1, 1, 1, 1],
      'each row is in its indexes',
    );
    await store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the upgrade to version 22 keeps every held entry, in a rowid table that still goes with its feed', () => {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-migrate-'));
  try {
    const file = databaseAt(dir, 21, (old) => {
      old.exec(`INSERT INTO feeds (id, url, fetch_url, next_poll_at, created_at, updated_at)
                  VALUES ('f1', 'https://a.example/', 'https://a.example/', '2026-01-01', '2026-01-01', '2026-01-01')`);
      old.exec(`INSERT INTO held_entries (feed_id, key, entry, position, held_at, fingerprint, key_source)
                  VALUES ('f1', 'k1', '{"title":"One"}', 0, '2026-01-01', 'fp', 'guid'),
                         ('f1', 'k2', '{"title":"Two"}', 1, '2026-01-01', NULL, NULL)`);
    });
    const db = openDatabase(file);
    assert.deepEqual(db.prepare('SELECT * FROM held_entries ORDER BY position').all(), [
      {
        feed_id: 'f1',
        key: 'k1',
        entry: '{"title":"One"}',
        position: 0,
        held_at: '2026-01-01',
        fingerprint: 'fp',
        key_source: 'guid',
      },
      {
        feed_id: 'f1',
        key: 'k2',
        entry: '{"title":"Two"}',
        position: 1,
        held_at: '2026-01-01',
        fingerprint: null,
        key_source: null,
      },
    ]);
    assert.match(
      db
        .prepare("SELECT sql FROM sqlite_master WHERE name = 'held_entries'")
        .pluck()
        .get() as string,
      /\)$/,
      'not WITHOUT ROWID',
    );
    db.prepare("DELETE FROM feeds WHERE id = 'f1'").run();
    assert.equal(db.prepare('SELECT count(*) FROM held_entries').pluck().get(), 0);
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the upgrade to version 21 makes ready a backfill whose feed has its baseline, and ends a paused one', () => {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-migrate-'));
  try {
    const t = '2026-01-01T00:00:00.000Z';
    const file = databaseAt(dir, 20, (old) => {
      old.exec(`INSERT INTO applications (id, name, created_at) VALUES ('a1', 'app', '${t}');
        INSERT INTO endpoints (id, application_id, title, url, secret, created_at, updated_at)
          VALUES ('e1', 'a1', 'E', 'https://hooks.example/', 'whsec_x', '${t}', '${t}');
        INSERT INTO feeds (id, url, fetch_url, next_poll_at, created_at, updated_at, baseline_at)
          VALUES ('f1', 'https://a.example/', 'https://a.example/', '${t}', '${t}', '${t}', '${t}'),
                 ('f2', 'https://b.example/', 'https://b.example/', '${t}', '${t}', '${t}', NULL);
        INSERT INTO subscriptions (id, application_id, endpoint_id, feed_id, url, created_at, updated_at, status, backfill)
          VALUES ('s1', 'a1', 'e1', 'f1', 'https://a.example/', '${t}', '${t}', 'active', 5),
                 ('s2', 'a1', 'e1', 'f2', 'https://b.example/', '${t}', '${t}', 'active', 5),
                 ('s3', 'a1', 'e1', 'f2', 'https://b.example/3', '${t}', '${t}', 'paused', 5);
        INSERT INTO quota_usage (application_id, quota, subject, used_at)
          VALUES ('a1', 'test_events_per_minute', NULL, '${t}');`);
    });
    const db = openDatabase(file);
    const subs = db
      .prepare(
        'SELECT id, backfill, backfill_at IS NOT NULL AS ready FROM subscriptions ORDER BY id',
      )
      .all();
    assert.deepEqual(subs, [
      { id: 's1', backfill: 5, ready: 1 },
      { id: 's2', backfill: 5, ready: 0 },
      { id: 's3', backfill: 0, ready: 0 },
    ]);
    assert.equal(db.prepare('SELECT amount FROM quota_usage').pluck().get(), 1, 'a use counts 1');
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the upgrade to version 22 counts what every feed, event and application keeps as the writes count it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-migrate-'));
  try {
    const t = '2026-01-01T00:00:00.000Z';
    const file = databaseAt(dir, 21, (old) => {
      const run = (sql: string, ...args: unknown[]) => old.prepare(sql).run(...args);
      for (const app of ['a1', 'a2']) {
        run('INSERT INTO applications VALUES (?, ?, ?)', app, app, t);
        run(
          `INSERT INTO endpoints (id, application_id, title, url, secret, created_at, updated_at)
           VALUES (?, ?, 'E', 'https://hooks.example/', 'whsec_x', ?, ?)`,
          `e-${app}`,
          app,
          t,
          t,
        );
      }
      for (const [feed, apps] of [
        ['own', ['a1']],
        ['shared', ['a1', 'a2']],
      ] as const) {
        run(
          `INSERT INTO feeds (id, url, fetch_url, next_poll_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
          feed,
          `https://${feed}.example/`,
          `https://${feed}.example/`,
          t,
          t,
          t,
        );
        for (const app of apps)
          run(
            `INSERT INTO subscriptions (id, application_id, endpoint_id, feed_id, url, created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, ?, ?)`,
            `s-${feed}-${app}`,
            app,
            `e-${app}`,
            feed,
            `https://${feed}.example/`,
            t,
            t,
          );
        run(
          'INSERT INTO entries (feed_id, key, first_seen_at, seen_at) VALUES (?, ?, ?, ?), (?, ?, ?, ?)',
          ...[feed, 'k1', t, t, feed, 'k2', t, t],
        );
        run(
          `INSERT INTO entry_history (feed_id, key, content_hash, first_seen_at, fate, entry)
           VALUES (?, 'k1', 'h', ?, 'new', '{"id":"k1","title":"Één"}')`,
          feed,
          t,
        );
        run(
          `INSERT INTO held_entries (feed_id, key, entry, position, held_at) VALUES (?, 'h1', '{"title":"held"}', 0, ?)`,
          feed,
          t,
        );
        run('INSERT INTO feed_probes (feed_id, probe) VALUES (?, ?)', feed, '{"link":["x"]}');
      }
      run(
        `INSERT INTO events (id, application_id, endpoint_id, subscription_id, type, sequence, next_attempt_at,
           created_at, updated_at) VALUES ('ev1', 'a1', 'e-a1', 's-own-a1', 'subscription.entries', 1, ?, ?, ?)`,
        t,
        t,
        t,
      );
      run('INSERT INTO event_bodies (event_id, body) VALUES (?, ?)', 'ev1', '{"entries":["é"]}');
      run(
        "INSERT INTO event_entries (subscription_id, key, event_id) VALUES ('s-own-a1', 'k1', 'ev1')",
      );
      run(
        `INSERT INTO attempts (event_id, endpoint_id, started_at, status_code, duration_ms, response_body)
         VALUES ('ev1', 'e-a1', ?, 500, 3, 'busy'), ('ev1', 'e-a1', ?, 200, 3, NULL)`,
        t,
        t,
      );
    });
    const store = new SqliteEngine(openDatabase(file));
    assert.deepEqual(await storageOffBy(store), []);
    const feeds = await store.all('SELECT id, sole_application_id FROM feeds ORDER BY id');
    assert.deepEqual(feeds, [
      { id: 'own', sole_application_id: 'a1' },
      { id: 'shared', sole_application_id: null },
    ]);
    assert.ok(((await store.column('SELECT stored_bytes FROM events'))[0] as number) > 700);
    await store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const doc = (extra: string[]) =>
  `<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Upgrade</title><link>https://blog.example/</link>${[...extra, ...V1_ITEMS].join('\n')}</channel></rss>`;

test('after an upgrade, entries keyed by the version-1 code are not sent again; a new one is, once', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-upgrade-'));
  const origin = await startOrigin();
  const t = '2026-01-01T00:00:00.000Z';
  origin.set('/feed.xml', { body: doc(['<item><guid>new-1</guid><title>Seven</title></item>']) });
  const file = v1Database(dir, (db) => {
    db.prepare('INSERT INTO applications VALUES (?, ?, ?)').run('a'.repeat(24), 'app', t);
    db.prepare(
      'INSERT INTO endpoints (id, application_id, title, url, secret, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ).run('e'.repeat(24), 'a'.repeat(24), 'E', 'https://hooks.example/', 'whsec_x', t, t);
    db.prepare(
      `INSERT INTO feeds (id, url, fetch_url, status, baseline_at, next_poll_at, entry_count, created_at, updated_at)
       VALUES (?, ?, ?, 'active', ?, ?, 6, ?, ?)`,
    ).run('f'.repeat(24), `${origin.url}/feed.xml`, `${origin.url}/feed.xml`, t, t, t, t);
    db.prepare(
      'INSERT INTO subscriptions (id, application_id, endpoint_id, feed_id, url, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ).run(
      '5'.repeat(24),
      'a'.repeat(24),
      'e'.repeat(24),
      'f'.repeat(24),
      `${origin.url}/feed.xml`,
      t,
      t,
    );
    const key = db.prepare('INSERT INTO entries (feed_id, key, first_seen_at) VALUES (?, ?, ?)');
    for (const k of V1_KEYS) key.run('f'.repeat(24), k, t);
  });
  const store = new SqliteEngine(openDatabase(file));
  assert.deepEqual(
    await store.column('SELECT DISTINCT seen_at FROM entries'),
    [t],
    'a key recorded before the upgrade counts as last shown when first seen',
  );
  const ctx: Ctx = quietCtx(
    store,
    manualClock('2026-01-02T00:00:00.000Z'),
    withConfig(defaultConfig(), { network: { allow_private: true } }),
  );
  const workers = createWorkers(ctx, silentLogger);
  try {
    await pollTick(ctx, workers.pollerDeps);
    const bodies = await store.all<{ body: string }>('SELECT body FROM event_bodies');
    assert.deepEqual(
      bodies.map((b) =>
        (JSON.parse(b.body) as { data: { entries: { title: string }[] } }).data.entries.map(
          (e) => e.title,
        ),
      ),
      [['Seven']],
    );
    const feed = await store.get('SELECT identity_key, entry_count FROM feeds');
    assert.deepEqual(feed, { identity_key: 'guid', entry_count: 7 });
  } finally {
    await workers.close();
    await store.close();
    await origin.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

// Copying a SQLite installation into PostgreSQL (src/db/copy.ts): every table, every row and every value as it was,
// the rowids the store orders by included; an identity continues past the copied rows; a target with rows is refused.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readPostgresSchemaSql } from '../../src/assets.ts';
import { copySqliteToPostgres, NOT_COPIED, type CopyProgress } from '../../src/db/copy.ts';
import type { Sql } from '../../src/db/engine.ts';
import { SCHEMA_VERSION } from '../../src/db/migrations.ts';
import { openDatabase, type Db } from '../../src/db/open.ts';
import { PostgresEngine } from '../../src/db/postgres-engine.ts';
import { sqliteConnection } from '../../src/db/sqlite-engine.ts';
import { sharedPostgres, testEngine } from '../support/postgres.ts';
import { makeWorld, type World } from '../support/world.ts';

/** Metadata whose key order and number spelling a JSON round trip would change. */
const METADATA = '{"zeta":1,"alpha":{"b":2,"a":1},"price":1.50,"big":12345678901234567890}';

/** A row in every table that the API calls below leave empty, each pointing at real parents. */
async function fillTheRest(
  db: Sql,
  ids: { app: string; endpoint: string; feed: string; sub: string; key: string },
) {
  const t = '2026-01-01T00:00:00.000Z';
  const run = (text: string, ...params: unknown[]) => db.run(text, params);
  await run('INSERT INTO feed_leases (feed_id, until, again_at) VALUES (?, ?, NULL)', ids.feed, t);
  await run('INSERT INTO feed_probes (feed_id, probe) VALUES (?, ?)', ids.feed, '{"link":["a"]}');
  // Rowids out of order and with gaps, as deletions leave them: a copy that numbered rows afresh would change them.
  for (const [key, seen, rowid] of [
    ['guid:b', '2026-01-01T00:00:02.000Z', 7],
    ['guid:a', '2026-01-01T00:00:01.000Z', 3],
  ] as const) {
    await run(
      'INSERT INTO entries (feed_id, key, first_seen_at, fingerprint, seen_at) VALUES (?, ?, ?, ?, ?)',
      ids.feed,
      key,
      seen,
      'fp',
      seen,
    );
    await run(
      `INSERT INTO entry_history (rowid, feed_id, key, key_source, content_hash, first_seen_at, fate, entry)
       VALUES (?, ?, ?, 'guid', 'h', ?, 'new', ?)`,
      rowid,
      ids.feed,
      key,
      t,
      `{"guid":"${key}","title":"Ünïcode ✓"}`,
    );
  }
  await run(
    'INSERT INTO backfill_entries (subscription_id, position, key) VALUES (?, 1, ?)',
    ids.sub,
    'guid:a',
  );
  await run(
    'INSERT INTO held_entries (feed_id, key, entry, position, held_at) VALUES (?, ?, ?, 1, ?)',
    ids.feed,
    'guid:held',
    '{"guid":"held"}',
    t,
  );
  for (const [id, seq, rowid, attempt] of [
    ['e2', 2, 11, 20],
    ['e1', 1, 5, 9],
  ] as const) {
    await run(
      `INSERT INTO events (rowid, id, application_id, endpoint_id, subscription_id, type, sequence, status,
                           next_attempt_at, created_at, updated_at, stored_bytes)
       VALUES (?, ?, ?, ?, ?, 'subscription.entries', ?, 'pending', ?, ?, ?, 100)`,
      rowid,
      id,
      ids.app,
      ids.endpoint,
      ids.sub,
      seq,
      t,
      t,
      t,
    );
    await run(
      'INSERT INTO event_bodies (event_id, body) VALUES (?, ?)',
      id,
      `{"id":"${id}","n":1.0}`,
    );
    await run(
      `INSERT INTO attempts (id, event_id, endpoint_id, started_at, status_code, duration_ms, error, response_body)
       VALUES (?, ?, ?, ?, 500, 12, 'receiver answered 500', 'oops')`,
      attempt,
      id,
      ids.endpoint,
      t,
    );
    await run(
      'INSERT INTO event_entries (subscription_id, key, event_id) VALUES (?, ?, ?)',
      ids.sub,
      'guid:a',
      id,
    );
  }
  // Past 2^53, where a number would round it: 9007199254740993 as a double is ...992.
  await run(
    'INSERT OR IGNORE INTO application_storage (application_id, feed_bytes, event_bytes) VALUES (?, 10, 200)',
    ids.app,
  );
  await run(
    'UPDATE application_storage SET event_bytes = 9007199254740993 WHERE application_id = ?',
    ids.app,
  );
  await run(
    `INSERT INTO idempotency_keys (application_id, key, method, path, request_hash, status, response, created_at)
     VALUES (?, 'k1', 'POST', '/v1/endpoints', 'h', 201, '{}', ?)`,
    ids.app,
    t,
  );
  await run(
    `INSERT INTO sessions (id_hash, application_id, api_key_id, csrf_token, created_at, last_seen_at)
     VALUES ('s', ?, ?, 'c', ?, ?)`,
    ids.app,
    ids.key,
    t,
    t,
  );
  await run(
    "INSERT INTO quota_usage (application_id, quota, subject, used_at, amount) VALUES (?, 'backfill', NULL, ?, 5)",
    ids.app,
    t,
  );
  await run(
    "INSERT INTO feed_poll_hours (hour, feed_id, ok, failed, throttled, new_entries) VALUES ('2026-01-01T00', ?, 3, 1, 0, 2)",
    ids.feed,
  );
  await run(
    `INSERT INTO websub_subscriptions (feed_id, hub_url, topic_url, secret, callback_token, status, next_action_at,
                                       created_at, updated_at)
     VALUES (?, 'https://hub.example/', 'https://example.com/feed', 's3cret', 'tok', 'active', ?, ?, ?)`,
    ids.feed,
    t,
    t,
    t,
  );
}

/** Every row of `table` on SQLite and on PostgreSQL, in one order: the columns PostgreSQL has (rowid included). */
async function rowsOf(db: Sql, target: PostgresEngine, table: string) {
  const columns = await target.read((sql) =>
    sql.column<string>(
      `SELECT column_name FROM information_schema.columns
        WHERE table_schema = 'public' AND table_name = @table ORDER BY ordinal_position`,
      { table },
    ),
  );
  const select = `SELECT ${columns.join(', ')} FROM ${table} ORDER BY ${columns.join(', ')}`;
  return {
    sqlite: await db.all(select),
    postgres: await target.read((sql) => sql.all(select)),
  };
}

describe('copying a SQLite installation into PostgreSQL', () => {
  let world: World;
  let target: PostgresEngine;
  let counts: Record<string, number>;
  const progress: CopyProgress[] = [];

  before(async () => {
    world = makeWorld();
    const { key, applicationId } = await world.key('acme');
    const endpoint = await world.call('POST', '/v1/endpoints', {
      key,
      body: { title: 'hooks', url: 'http://127.0.0.1:9/hook' },
    });
    const sub = await world.call('POST', '/v1/subscriptions', {
      key,
      body: `{"endpoint":"${endpoint.body.id}","url":"http://127.0.0.1:9/feed.xml","metadata":${METADATA}}`,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(sub.status, 201, sub.text);
    const db = world.ctx.db;
    await fillTheRest(db, {
      app: applicationId,
      endpoint: endpoint.body.id,
      feed: sub.body.feed,
      sub: sub.body.id,
      key: (await db.column('SELECT id FROM api_keys LIMIT 1'))[0] as string,
    });
    target = testEngine(await (await sharedPostgres()).newDatabase(), {
      statementTimeoutMs: 60_000,
    });
    counts = await copySqliteToPostgres(
      sqliteConnection(world.ctx.store)!,
      target,
      readPostgresSchemaSql(),
      (p) => progress.push(p),
    );
  });
  after(async () => {
    await target?.close();
    await world?.close();
  });

  it('copies every table, each with rows here, row for row and value for value', async () => {
    const tables = (
      (await world.ctx.db.column(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
      )) as string[]
    ).filter((name) => !NOT_COPIED.includes(name));
    assert.deepEqual(Object.keys(counts).sort(), tables.sort());
    for (const table of tables) {
      assert.ok(counts[table]! > 0, `${table} has rows to copy`);
      const { sqlite, postgres } = await rowsOf(world.ctx.db, target, table);
      assert.deepEqual(postgres, sqlite, table);
    }
  });

  it('keeps the metadata text exactly as the client sent it', async () => {
    const metadata = await target.read((sql) => sql.column('SELECT metadata FROM subscriptions'));
    assert.deepEqual(metadata, [METADATA]);
  });

  it('reports its progress table by table, and numbers new attempts after the copied ones', async () => {
    assert.ok(progress.some((p) => p.table === 'events' && p.copied === 2 && p.total === 2));
    const next = await target.write((sql) =>
      sql.get<{ id: number }>(
        `INSERT INTO attempts (event_id, endpoint_id, started_at, duration_ms)
         SELECT event_id, endpoint_id, started_at, 1 FROM attempts LIMIT 1 RETURNING id`,
      ),
    );
    assert.equal(next!.id, 21, 'after the largest copied id, 20');
    // The rowids the store orders events and entry history by go on after the largest copied one too.
    const event = await target.write((sql) =>
      sql.get<{ rowid: number }>(
        `INSERT INTO events (id, application_id, endpoint_id, type, next_attempt_at, created_at, updated_at)
         SELECT 'e3', application_id, endpoint_id, type, next_attempt_at, created_at, updated_at FROM events LIMIT 1
         RETURNING rowid`,
      ),
    );
    assert.equal(event!.rowid, 12, 'after the largest copied rowid, 11');
    const history = await target.write((sql) =>
      sql.get<{ rowid: number }>(
        `INSERT INTO entry_history (feed_id, key, key_source, content_hash, first_seen_at, fate, entry)
         SELECT feed_id, 'guid:c', key_source, content_hash, first_seen_at, fate, entry FROM entry_history LIMIT 1
         RETURNING rowid`,
      ),
    );
    assert.equal(history!.rowid, 8, 'after the largest copied rowid, 7');
  });

  it('leaves every copied table analyzed, so the first queries are planned from its rows', async () => {
    const unanalyzed = await target.read((sql) =>
      sql.column(
        `SELECT relname FROM pg_stat_user_tables
          WHERE last_analyze IS NULL AND relname <> ALL(@skipped::text[]) ORDER BY relname`,
        { skipped: [...NOT_COPIED, 'feedsub_schema'] },
      ),
    );
    assert.deepEqual(unanalyzed, []);
  });

  it('copies an integer past 2^53 exactly', async () => {
    assert.deepEqual(
      await target.read((sql) => sql.column('SELECT event_bytes::text FROM application_storage')),
      ['9007199254740993'],
    );
  });

  it('refuses a target that already has rows, and leaves it as it was', async () => {
    await assert.rejects(
      copySqliteToPostgres(sqliteConnection(world.ctx.store)!, target, readPostgresSchemaSql()),
      /the PostgreSQL database is not empty \(\w+ has rows\)/,
    );
    assert.equal(
      await target.read((sql) =>
        sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM subscriptions').then((r) => r!.n),
      ),
      counts.subscriptions,
    );
  });
});

describe('what a copy refuses, and how it reads large tables', () => {
  let dir: string;
  let n = 0;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'feedsub-copy-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A new SQLite database at the current schema version, and a new PostgreSQL database. */
  async function pair(): Promise<{ db: Db; target: PostgresEngine }> {
    const db = openDatabase(join(dir, `${++n}.db`));
    const target = testEngine(await (await sharedPostgres()).newDatabase());
    return { db, target };
  }
  /** The tables of `target`, for a copy that must have written nothing. */
  const tablesOf = (target: PostgresEngine) =>
    target.column<string>("SELECT tablename FROM pg_tables WHERE schemaname = 'public'");

  it('refuses a SQLite database of another schema version, before it touches the target', async () => {
    const { db, target } = await pair();
    try {
      db.pragma(`user_version = ${SCHEMA_VERSION - 1}`);
      await assert.rejects(
        copySqliteToPostgres(db, target, readPostgresSchemaSql()),
        /schema version \d+, older than this feedsub's \d+: start this feedsub on it once/,
      );
      db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
      await assert.rejects(
        copySqliteToPostgres(db, target, readPostgresSchemaSql()),
        /copy with the feedsub that wrote it/,
      );
      assert.deepEqual(await tablesOf(target), []);
    } finally {
      db.close();
      await target.close();
    }
  });

  it('refuses to leave a column behind that PostgreSQL does not have', async () => {
    const { db, target } = await pair();
    try {
      db.exec('ALTER TABLE feeds ADD COLUMN extra TEXT');
      await assert.rejects(
        copySqliteToPostgres(db, target, readPostgresSchemaSql()),
        /the two schemas differ, so a copy would leave data behind: feeds\.extra is missing on PostgreSQL/,
      );
    } finally {
      db.close();
      await target.close();
    }
  });

  it('copies a NUL character, which PostgreSQL cannot store, as U+FFFD, as the engine stores one', async () => {
    const { db, target } = await pair();
    try {
      db.prepare("INSERT INTO applications (id, name, created_at) VALUES ('a1', ?, 't')").run(
        'nul\u0000here',
      );
      await copySqliteToPostgres(db, target, readPostgresSchemaSql());
      assert.equal(await target.value('SELECT name FROM applications'), 'nul\uFFFDhere');
    } finally {
      db.close();
      await target.close();
    }
  });

  it('sends a table of large rows a few MiB at a time, each value whole', async () => {
    const { db, target } = await pair();
    try {
      const t = '2026-01-01T00:00:00.000Z';
      db.prepare("INSERT INTO applications (id, name, created_at) VALUES ('a1', 'acme', ?)").run(t);
      db.prepare(
        `INSERT INTO endpoints (id, application_id, title, url, secret, created_at, updated_at)
         VALUES ('p1', 'a1', 'hooks', 'https://hooks.example.com/', 'whsec_x', ?, ?)`,
      ).run(t, t);
      const bodies = ['a', 'b', 'c'].map((c) => c.repeat(5 * 1024 * 1024) + 'é✓');
      for (const [i, body] of bodies.entries()) {
        db.prepare(
          `INSERT INTO events (id, application_id, endpoint_id, type, next_attempt_at, created_at, updated_at)
           VALUES (?, 'a1', 'p1', 'endpoint.test', ?, ?, ?)`,
        ).run(`e${i}`, t, t, t);
        db.prepare('INSERT INTO event_bodies (event_id, body) VALUES (?, ?)').run(`e${i}`, body);
      }
      const progress: CopyProgress[] = [];
      await copySqliteToPostgres(db, target, readPostgresSchemaSql(), (p) => progress.push(p));
      assert.deepEqual(
        progress.filter((p) => p.table === 'event_bodies').map((p) => [p.copied, p.done]),
        [
          [2, false],
          [3, false],
          [3, true],
        ],
        'two rows (10 MiB) in the first batch, the last alone',
      );
      const hash = (s: string) => createHash('sha256').update(s).digest('hex');
      const copied = await target.all<{ event_id: string; body: string }>(
        'SELECT event_id, body FROM event_bodies ORDER BY event_id',
      );
      assert.deepEqual(
        copied.map((r) => hash(r.body)),
        bodies.map(hash),
      );
    } finally {
      db.close();
      await target.close();
    }
  });
});

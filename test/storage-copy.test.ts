// `feedsub storage copy` as a function (runStorageCopy): the configured SQLite database copied into a new PostgreSQL
// database with every count checked, progress on stderr, a summary and the next step on stdout; a snapshot also beside
// a writer; a target that is not empty, a URL that is not PostgreSQL's and a missing database refused; and the URL's
// password never printed, whatever fails.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createKey } from '../src/actions/keys.ts';
import { manualClock } from '../src/clock.ts';
import { defaultConfig, withConfig, type Config } from '../src/config.ts';
import { quietCtx } from '../src/context.ts';
import { NOT_COPIED } from '../src/db/copy.ts';
import { lockDataDir } from '../src/db/lock.ts';
import { openDatabase, type Db } from '../src/db/open.ts';
import { SqliteEngine } from '../src/db/sqlite-engine.ts';
import { ConfigError } from '../src/errors.ts';
import { createHttpApp } from '../src/http/server.ts';
import { silentLogger } from '../src/log.ts';
import { runStorageCopy } from '../src/storage-copy.ts';
import { sharedPostgres, testEngine } from './support/postgres.ts';

/** The password the tests give the target's URL (the test server trusts every connection, so any password works). */
const PASSWORD = 'Sup3r/s3cret@pw';
/** Rows of quota_usage: more than one batch (1,000 rows), so a table's copy reports progress before its end. */
const QUOTA_ROWS = 2500;

/** A new database's URL with PASSWORD in it, percent-encoded as a URL must carry it. */
async function targetUrl(): Promise<string> {
  const url = await (await sharedPostgres()).newDatabase();
  return url.replace(
    'postgresql://postgres@',
    `postgresql://postgres:${encodeURIComponent(PASSWORD)}@`,
  );
}

/** Collects what the command writes. */
function output() {
  const lines = { stdout: [] as string[], stderr: [] as string[] };
  return {
    lines,
    out: {
      stdout: (l: string) => lines.stdout.push(l),
      stderr: (l: string) => lines.stderr.push(l),
    },
    all: () => [...lines.stdout, ...lines.stderr].join('\n'),
  };
}

/** Asserts that no spelling of PASSWORD is in `text`. */
function assertNoPassword(text: string) {
  for (const spelling of [PASSWORD, encodeURIComponent(PASSWORD), 'Sup3r', 's3cret'])
    assert.ok(!text.includes(spelling), `the password (${spelling}) is printed:\n${text}`);
}

describe('storage copy (runStorageCopy)', () => {
  let dir: string;
  let config: Config;
  let db: Db;
  let sqlite: SqliteEngine;
  /** quota_usage's rows: QUOTA_ROWS and those the API's calls recorded. */
  let quotaRows: number;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'feedsub-storage-copy-'));
    config = withConfig(defaultConfig(), { storage: { data_dir: dir } });
    db = openDatabase(join(dir, 'feedsub.db'));
    sqlite = new SqliteEngine(db);
    const ctx = quietCtx(sqlite, manualClock(), config);
    const made = await createKey(ctx, 'acme', null);
    const app = createHttpApp(ctx, silentLogger);
    const call = async (path: string, body: string) => {
      const res = await app.request(path, {
        method: 'POST',
        headers: { authorization: made.key, 'content-type': 'application/json' },
        body,
      });
      const text = await res.text();
      assert.equal(res.status, 201, text);
      return JSON.parse(text) as { id: string };
    };
    const endpoint = await call(
      '/v1/endpoints',
      JSON.stringify({ title: 'hooks', url: 'https://hooks.example.com/' }),
    );
    await call(
      '/v1/subscriptions',
      `{"endpoint":"${endpoint.id}","url":"https://example.com/feed.xml","metadata":{"b":1,"a":1.50}}`,
    );
    const insert = db.prepare(
      "INSERT INTO quota_usage (application_id, quota, subject, used_at, amount) VALUES (?, 'backfill', NULL, ?, 1)",
    );
    db.transaction(() => {
      for (let i = 0; i < QUOTA_ROWS; i++)
        insert.run(made.application.id, new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString());
    })();
    quotaRows = db.prepare('SELECT COUNT(*) FROM quota_usage').pluck().get() as number;
  });
  after(async () => {
    await sqlite?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('copies every table, checks its count, reports progress and says what to do next, never the password', async () => {
    const url = await targetUrl();
    const { lines, out, all } = output();
    let t = 0;
    // A clock that moves 0.6 s between two readings: a progress line once every other batch, and one at each end.
    const counts = await runStorageCopy(config, url, out, { now: () => (t += 600) });
    const tables = (
      db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .pluck()
        .all() as string[]
    ).filter((name) => !NOT_COPIED.includes(name));
    assert.deepEqual(Object.keys(counts).sort(), [...tables].sort());
    const target = testEngine(url);
    try {
      for (const table of tables) {
        const here = db.prepare(`SELECT COUNT(*) FROM ${table}`).pluck().get();
        const there = await target.value(`SELECT COUNT(*) FROM ${table}`);
        assert.equal(there, here, table);
        assert.equal(counts[table], here, table);
      }
      assert.deepEqual(await target.column('SELECT metadata FROM subscriptions'), [
        '{"b":1,"a":1.50}',
      ]);
    } finally {
      await target.close();
    }
    assert.ok(quotaRows >= QUOTA_ROWS);
    // stderr: where it copies from and to, a line at each table's end, and progress within the long table.
    assert.match(
      lines.stderr[0]!,
      /^storage copy: copying .*feedsub\.db to postgresql:\/\/postgres:\*\*\*@\//,
    );
    for (const table of tables)
      assert.ok(
        lines.stderr.includes(
          `storage copy: ${table} ${counts[table]}/${counts[table]} rows, done`,
        ),
        `a line at the end of ${table}`,
      );
    assert.ok(
      lines.stderr.includes(`storage copy: quota_usage 2000/${quotaRows} rows`),
      lines.stderr.join('\n'),
    );
    assert.ok(
      !lines.stderr.includes(`storage copy: quota_usage 1000/${quotaRows} rows`),
      'throttled',
    );
    // stdout: the summary, a row per table and the total, and the next step.
    assert.match(
      lines.stdout[0]!,
      /^Copied .*feedsub\.db to postgresql:\/\/postgres:\*\*\*@.* in [\d.]+ s: \d+ tables, \d+ rows/,
    );
    assert.ok(lines.stdout.some((l) => new RegExp(`^ {2}quota_usage +${quotaRows}$`).test(l)));
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    assert.ok(lines.stdout.some((l) => new RegExp(`^ {2}total +${total}$`).test(l)));
    assert.match(lines.stdout.at(-1)!, /storage\.database_url.*FEEDSUB_STORAGE_DATABASE_URL/);
    assertNoPassword(all());
  });

  it('copies one snapshot while another connection writes', async () => {
    const url = await targetUrl();
    const { out } = output();
    const appId = db.prepare('SELECT id FROM applications').pluck().get() as string;
    const write = db.prepare(
      "INSERT INTO quota_usage (application_id, quota, subject, used_at, amount) VALUES (?, 'backfill', 'later', '2026-02-01T00:00:00.000Z', 1)",
    );
    let wrote = 0;
    // The writer writes while the copy is half way through the table it writes to, and after.
    try {
      const counts = await runStorageCopy(
        config,
        url,
        {
          stdout: out.stdout,
          stderr: (line) => {
            if (line.includes('quota_usage') || wrote > 0) wrote += write.run(appId).changes;
            out.stderr(line);
          },
        },
        { progressEveryMs: 0 },
      );
      assert.ok(wrote >= 2);
      assert.equal(counts.quota_usage, quotaRows);
      const target = testEngine(url);
      try {
        assert.equal(await target.value('SELECT COUNT(*) FROM quota_usage'), quotaRows);
      } finally {
        await target.close();
      }
    } finally {
      db.prepare("DELETE FROM quota_usage WHERE subject = 'later'").run();
    }
  });

  it('refuses a target that is not empty, naming the table, and leaves it as it was', async () => {
    const url = await targetUrl();
    await runStorageCopy(config, url, output().out);
    const { out, all } = output();
    await assert.rejects(
      runStorageCopy(config, url, out),
      (err: Error) =>
        !(err instanceof ConfigError) &&
        /^storage copy: the PostgreSQL database is not empty \(\w+ has rows\): copy into a new, empty database$/.test(
          err.message,
        ) &&
        !err.message.includes('Sup3r'),
    );
    assertNoPassword(all());
    const target = testEngine(url);
    try {
      assert.equal(await target.value('SELECT COUNT(*) FROM quota_usage'), quotaRows);
    } finally {
      await target.close();
    }
  });

  it('refuses a database that is not feedsub’s', async () => {
    const url = await targetUrl();
    const target = testEngine(url);
    await target.exec('CREATE TABLE other (id TEXT)');
    await target.close();
    await assert.rejects(
      runStorageCopy(config, url, output().out),
      /storage copy: the PostgreSQL database is not empty and is not feedsub's/,
    );
  });

  it('refuses a URL that is not postgres:// or postgresql://, and a data directory with no database', async () => {
    for (const url of ['mysql://root:Sup3r@db/feedsub', 'db.example.com/feedsub', '']) {
      await assert.rejects(runStorageCopy(config, url, output().out), (err: Error) => {
        assert.ok(err instanceof ConfigError, err.message);
        assert.match(err.message, /--to must be a postgres:\/\/ or postgresql:\/\/ URL/);
        assertNoPassword(err.message);
        return true;
      });
    }
    const empty = mkdtempSync(join(tmpdir(), 'feedsub-storage-copy-none-'));
    try {
      await assert.rejects(
        runStorageCopy(
          withConfig(defaultConfig(), { storage: { data_dir: empty } }),
          await targetUrl(),
          output().out,
        ),
        (err: Error) =>
          err instanceof ConfigError && /no database at .*feedsub\.db/.test(err.message),
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('names no password when the server cannot be reached or the URL is malformed', async () => {
    const secret = encodeURIComponent(PASSWORD);
    const cases: [string, RegExp, boolean][] = [
      [
        `postgres://feedsub:${secret}@127.0.0.1:1/feedsub`,
        /^storage copy: unable to connect to postgres:\/\/feedsub:\*\*\*@127\.0\.0\.1:1\/feedsub: connect ECONNREFUSED/,
        false,
      ],
      [
        `postgres://feedsub@127.0.0.1:1/feedsub?password=${secret}`,
        /^storage copy: unable to connect to postgres:\/\/feedsub@127\.0\.0\.1:1\/feedsub\?password=\*\*\*: /,
        false,
      ],
      [
        `postgres://feedsub:${secret}@127.0.0.1:notaport/feedsub`,
        /^storage copy: --to is not a valid URL: postgres:\/\/feedsub:\*\*\*@127\.0\.0\.1:notaport\/feedsub$/,
        true,
      ],
    ];
    for (const [url, message, usage] of cases) {
      const { out, all } = output();
      await assert.rejects(runStorageCopy(config, url, out), (err: Error) => {
        assert.match(err.message, message);
        assert.equal(err instanceof ConfigError, usage, err.message);
        return true;
      });
      assertNoPassword(all());
    }
  });

  it('warns, and copies anyway, while a serve holds the data directory', async () => {
    const lock = lockDataDir(dir);
    const { lines, out } = output();
    try {
      await runStorageCopy(config, await targetUrl(), out);
    } finally {
      lock.release();
    }
    assert.match(
      lines.stderr[0]!,
      /^storage copy: warning: a feedsub serve .* is running on this data directory/,
    );
    // Without one, the copy holds the lock while it runs and gives it back.
    await runStorageCopy(config, await targetUrl(), output().out);
    lockDataDir(dir).release();
  });
});

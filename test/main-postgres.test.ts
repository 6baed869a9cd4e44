// The command line with storage.database_url set: every command runs on that PostgreSQL database (and none touches the
// data directory), a server it cannot reach ends a command with one line naming the URL and the cause, backup points to
// pg_dump, and the URL's password is never shown, by any command, in any output.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import pg from 'pg';
import { cliScratch, freePort, runCliAsync, startDaemon } from './support/daemon.ts';
import { sharedPostgres, type Postgres } from './support/postgres.ts';

/** The password put in every URL below, percent-encoded as a URL holds it; PostgreSQL decodes it to "xyzzy/pass". The
 *  test server trusts local connections, so it is never checked, only never to be shown. */
const PASSWORD = 'xyzzy%2Fpass';
const SECRETS = ['xyzzy', 'pass'];

/** Fails when any of `outputs` shows the password, as written or decoded, or a part of it. */
function assertNoPassword(...outputs: string[]): void {
  for (const output of outputs)
    for (const secret of SECRETS)
      assert.ok(!output.includes(secret), `the password (${secret}) is shown:\n${output}`);
}

describe('feedsub on PostgreSQL (storage.database_url)', { concurrency: 2 }, () => {
  const { tempDir, daemons } = cliScratch();
  let server: Postgres;
  before(async () => {
    server = await sharedPostgres();
  });
  /** A new database on the test server, as a URL with the password in it, and that URL as shown. */
  const database = async () => {
    const url = (await server.newDatabase()).replace(
      'postgresql://postgres@',
      `postgresql://postgres:${PASSWORD}@`,
    );
    return { url, shown: url.replace(PASSWORD, '***') };
  };

  it('runs keys create, list and revoke and serve on the database, never touching the data directory', async () => {
    const { url, shown } = await database();
    const env = { FEEDSUB_STORAGE_DATABASE_URL: url };
    const dataDir = join(tempDir(), 'unused');
    const made = await runCliAsync(
      ['keys', 'create', '--app', 'acme', '--name', 'ci', '--json', '--data-dir', dataDir],
      env,
    );
    assert.equal(made.status, 0, made.stderr);
    const key = JSON.parse(made.stdout) as { id: string; key: string };
    const listed = await runCliAsync(['keys', 'list', '--data-dir', dataDir], env);
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(`^${key.id} .*app=acme {2}name=ci`, 'm'));

    const daemon = await startDaemon({ dataDir, env });
    daemons.push(daemon);
    const call = (path: string, init: RequestInit = {}) =>
      fetch(`${daemon.url}${path}`, {
        ...init,
        headers: { authorization: key.key, 'content-type': 'application/json' },
      });
    const created = await call('/v1/endpoints', {
      method: 'POST',
      body: JSON.stringify({ title: 'On PostgreSQL', url: 'https://hooks.example.com/' }),
    });
    assert.equal(created.status, 201, await created.clone().text());
    // The key is revoked in the database the daemon reads: its next request is refused.
    const revoked = await runCliAsync(['keys', 'revoke', key.id, '--data-dir', dataDir], env);
    assert.equal(revoked.status, 0, revoked.stderr);
    assert.match(revoked.stdout, new RegExp(`^Revoked key ${key.id}\\.$`, 'm'));
    assert.equal((await call('/v1/endpoints')).status, 401);
    const relisted = await runCliAsync(['keys', 'list', '--data-dir', dataDir], env);
    assert.match(relisted.stdout, /REVOKED/);
    assert.equal(await daemon.stop('SIGTERM'), 0);

    const logged = daemon
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string; database?: string });
    assert.equal(logged.find((l) => l.msg === 'feedsub: listening')?.database, shown);
    assert.equal(existsSync(dataDir), false, 'the data directory was made');
    assertNoPassword(
      made.stderr,
      listed.stdout + listed.stderr,
      revoked.stdout + revoked.stderr,
      relisted.stdout + relisted.stderr,
      daemon.output(),
    );
  });

  it('runs poll --once on the database, beside a serve, never touching the data directory', async () => {
    const { url } = await database();
    const env = { FEEDSUB_STORAGE_DATABASE_URL: url };
    const dataDir = join(tempDir(), 'unused');
    const daemon = await startDaemon({ dataDir, env });
    daemons.push(daemon);
    const polled = await runCliAsync(['poll', '--once', '--data-dir', dataDir], env);
    assert.equal(polled.status, 0, polled.stderr);
    assert.match(polled.stdout, /^feeds fetched 0, .* events waiting 0$/m);
    assert.equal(await daemon.stop('SIGTERM'), 0);
    assert.equal(existsSync(dataDir), false, 'the data directory was made');
    assertNoPassword(polled.stdout + polled.stderr, daemon.output());
  });

  it("refuses a database that is not empty and not feedsub's, naming it with the password hidden", async () => {
    const { url, shown } = await database();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query('CREATE TABLE invoices (id integer)');
    } finally {
      await client.end();
    }
    const r = await runCliAsync(['keys', 'list'], { FEEDSUB_STORAGE_DATABASE_URL: url });
    assert.equal(r.status, 1, r.stderr);
    assert.equal(
      r.stderr,
      `feedsub: db: the PostgreSQL database is not empty and is not feedsub's (it has the tables invoices…): give feedsub an empty database of its own (PostgreSQL at ${shown})\n`,
    );
    assertNoPassword(r.stdout, r.stderr);
  });

  it('config check prints the engine and the URL with its password hidden', async () => {
    const { url, shown } = await database();
    const r = await runCliAsync(['config', 'check'], { FEEDSUB_STORAGE_DATABASE_URL: url });
    assert.equal(r.status, 0, r.stderr);
    const printed = JSON.parse(r.stdout) as { storage: Record<string, unknown> };
    assert.deepEqual(printed.storage, {
      data_dir: './data',
      database_url: shown,
      pool_size: 10,
      statement_timeout_seconds: 30,
    });
    assert.equal(r.stderr, `config: ok (PostgreSQL database ${shown})\n`);
    assertNoPassword(r.stdout, r.stderr);
  });

  it("exits 2 naming storage.database_url, not the URL, for a URL that is not PostgreSQL's", async () => {
    const r = await runCliAsync(['keys', 'list'], {
      FEEDSUB_STORAGE_DATABASE_URL: `mysql://feedsub:${PASSWORD}@127.0.0.1/feedsub`,
    });
    assert.equal(r.status, 2, r.stderr);
    assert.equal(
      r.stderr,
      'feedsub: config: storage.database_url: must be a postgres:// or postgresql:// URL, or empty for SQLite\n',
    );
    assertNoPassword(r.stdout, r.stderr);
  });

  it('backup refuses (exit 2) and points to pg_dump, without connecting', async () => {
    const port = await freePort();
    const url = `postgres://feedsub:${PASSWORD}@127.0.0.1:${port}/feedsub`;
    const file = join(tempDir(), 'feedsub.db');
    const r = await runCliAsync(['backup', file], { FEEDSUB_STORAGE_DATABASE_URL: url });
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(
        `^feedsub: backup .*PostgreSQL \\(postgres://feedsub:\\*\\*\\*@127\\.0\\.0\\.1:${port}/feedsub\\): back it up with pg_dump .*pg_dump --format=custom`,
      ),
    );
    assert.equal(existsSync(file), false);
    assertNoPassword(r.stdout, r.stderr);
  });

  it('keys, serve and poll --once exit 1 with one line naming the URL and the cause when the server is unreachable', async () => {
    const port = await freePort(); // nothing listens on it
    const socketDir = tempDir(); // no server's socket in it
    const unreachable = [
      {
        url: `postgres://feedsub:${PASSWORD}@127.0.0.1:${port}/feedsub`,
        line: `feedsub: db: unable to connect to PostgreSQL at postgres://feedsub:***@127.0.0.1:${port}/feedsub: connect ECONNREFUSED 127.0.0.1:${port}`,
      },
      {
        url: `postgresql://feedsub:${PASSWORD}@/feedsub?host=${socketDir}`,
        line: `feedsub: db: unable to connect to PostgreSQL at postgresql://feedsub:***@/feedsub?host=${socketDir}: connect ENOENT ${socketDir}/.s.PGSQL.5432`,
      },
    ];
    const dataDir = join(tempDir(), 'unused');
    for (const { url, line } of unreachable)
      for (const args of [
        ['keys', 'list'],
        ['serve', '--port', '0'],
        ['poll', '--once'],
      ]) {
        const r = await runCliAsync([...args, '--data-dir', dataDir], {
          FEEDSUB_STORAGE_DATABASE_URL: url,
          FEEDSUB_LOG_FORMAT: 'json',
        });
        const what = `${args.join(' ')} on ${line}`;
        assert.equal(r.status, 1, `${what}: ${r.stderr}`);
        // serve and poll --once may log a line about the heap limit first; the error is the last line.
        assert.equal(r.stderr.trim().split('\n').at(-1), line, what);
        assert.equal(r.stdout, '', what);
        assertNoPassword(r.stdout, r.stderr);
      }
    assert.equal(existsSync(dataDir), false, 'the data directory was made');
  });
});

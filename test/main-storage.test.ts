// `feedsub storage copy --to URL` run as the command: the copy with its summary on stdout and progress on stderr (exit
// 0), a target with rows refused (exit 1), and mistyped commands refused (exit 2), never printing the URL's password.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createKey } from '../src/actions/keys.ts';
import { systemClock } from '../src/clock.ts';
import { defaultConfig } from '../src/config.ts';
import { quietCtx } from '../src/context.ts';
import { openDatabase } from '../src/db/open.ts';
import { SqliteEngine } from '../src/db/sqlite-engine.ts';
import { cliScratch, runCliAsync } from './support/daemon.ts';
import { sharedPostgres, testEngine } from './support/postgres.ts';

/** The password given in the URLs (the test server trusts every connection, so any password works). */
const PASSWORD = 'Sup3rS3cret';

// The two tests run at once: most of their time is processes starting.
describe('feedsub storage copy', { concurrency: true }, () => {
  const { tempDir } = cliScratch();

  it('copies the data directory into PostgreSQL, then refuses the same target again', async () => {
    const dataDir = tempDir();
    const store = new SqliteEngine(openDatabase(join(dataDir, 'feedsub.db')));
    const made = await createKey(quietCtx(store, systemClock, defaultConfig()), 'acme', null);
    await store.close();
    const url = (await (await sharedPostgres()).newDatabase()).replace(
      'postgresql://postgres@',
      `postgresql://postgres:${PASSWORD}@`,
    );
    const copied = await runCliAsync(['storage', 'copy', '--to', url, '--data-dir', dataDir]);
    assert.equal(copied.status, 0, copied.stderr);
    assert.match(copied.stdout, /^Copied .*feedsub\.db to postgresql:\/\/postgres:\*\*\*@/);
    assert.match(copied.stdout, /^ {2}api_keys +1$/m);
    assert.match(copied.stdout, /^Next: .*storage\.database_url/m);
    assert.match(copied.stderr, /^storage copy: api_keys 1\/1 rows, done$/m);
    const target = testEngine(url);
    try {
      assert.equal(await target.value('SELECT COUNT(*) FROM api_keys'), 1);
      assert.equal(await target.value('SELECT application_id FROM api_keys'), made.application.id);
    } finally {
      await target.close();
    }
    const again = await runCliAsync(['storage', 'copy', '--to', url, '--data-dir', dataDir]);
    assert.equal(again.status, 1, again.stderr);
    assert.match(
      again.stderr,
      /^feedsub: storage copy: the PostgreSQL database is not empty \(\w+ has rows\)/m,
    );
    for (const r of [copied, again]) assert.ok(!(r.stdout + r.stderr).includes(PASSWORD));
  });

  it('exits 2 with one line for a mistyped command, never naming the password', async () => {
    const dataDir = tempDir();
    const cases: [string[], RegExp][] = [
      [['storage', 'copy'], /storage copy needs --to postgres:/],
      [['storage', 'move', '--to', 'postgres://h/db'], /unknown storage action "move"/],
      [
        ['storage', 'copy', '--to', `mysql://root:${PASSWORD}@db/feedsub`],
        /--to must be a postgres:\/\/ or postgresql:\/\/ URL\n$/,
      ],
      [
        ['storage', 'copy', '--to', `postgres://u:${PASSWORD}@db.example/feedsub`],
        /no database at .*feedsub\.db/,
      ],
    ];
    const runs = await Promise.all(
      cases.map(([args]) => runCliAsync([...args, '--data-dir', dataDir])),
    );
    for (const [i, r] of runs.entries()) {
      assert.equal(r.status, 2, `${cases[i]![0].join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, cases[i]![1]);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.ok(!(r.stdout + r.stderr).includes(PASSWORD));
    }
  });
});

// The command line's one-shot commands: --version, keys, config check, and the one-line refusals of a mistyped command.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { cliScratch, runCliAsync, startDaemon } from './support/daemon.ts';

// Each test has its own data directory, daemon and origin, so they run four at a time: most of their time is
// processes starting and stopping. (All at once, three copies of this file on two busy cores starved each other.)
describe('feedsub CLI', { concurrency: 4 }, () => {
  const { tempDir, daemons } = cliScratch();

  it('prints the version of feedsub and of the runtime, run from source', async () => {
    const r = await runCliAsync(['--version'], {}, 60_000, { source: true });
    assert.equal(r.status, 0);
    assert.match(r.stdout.trim(), /^feedsub \d+\.\d+\.\d+ \(node v\d+\.\d+\.\d+\)$/);
  });

  it('creates a key shown once on the last line, lists it without the secret, and the key works against a real server', async () => {
    const dataDir = tempDir();
    const made = await runCliAsync([
      'keys',
      'create',
      '--app',
      'acme',
      '--name',
      'ci',
      '--data-dir',
      dataDir,
    ]);
    assert.equal(made.status, 0, made.stderr);
    const key = made.stdout.trim().split('\n').at(-1)!;
    assert.match(key, /^fsk_[A-Za-z0-9_-]{43}$/);
    const listed = await runCliAsync(['keys', 'list', '--data-dir', dataDir]);
    assert.equal(listed.status, 0);
    assert.match(listed.stdout, /app=acme {2}name=ci/);
    assert.ok(!listed.stdout.includes(key));
    const daemon = await startDaemon({ dataDir });
    daemons.push(daemon);
    const res = await fetch(`${daemon.url}/v1/endpoints`, {
      method: 'POST',
      headers: { authorization: key, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'CLI', url: 'https://hooks.example.com/' }),
    });
    assert.equal(res.status, 201);
    assert.equal(await daemon.stop('SIGTERM'), 0);
  });

  const bad: [string, string[], RegExp][] = [
    ['an unknown command', ['frobnicate'], /unknown command "frobnicate"/],
    ['an unknown flag', ['serve', '--colour'], /Unknown option `--colour`/],
    ['a bad port', ['serve', '--port', 'eighty'], /--port must be an integer/],
    ['keys create without --app', ['keys', 'create'], /--app NAME/],
    ['an unknown keys action', ['keys', 'rotate'], /unknown keys action/],
    [
      'a missing config file',
      ['config', 'check', '--config', '/nonexistent.toml'],
      /unable to read \/nonexistent\.toml/,
    ],
    ['a bad environment value', ['config', 'check'], /FEEDSUB_SERVER_PORT must be a number/],
  ];
  it('refuses a mistyped keys command before it creates a data directory', async () => {
    const dataDir = join(tempDir(), 'never');
    for (const args of [
      ['keys', 'create'],
      ['keys', 'rotate'],
      ['keys', 'revoke'],
    ]) {
      const r = await runCliAsync([...args, '--data-dir', dataDir]);
      assert.equal(r.status, 2, r.stderr);
      assert.equal(existsSync(dataDir), false, `${args.join(' ')} created ${dataDir}`);
    }
  });
  for (const [name, args, message] of bad) {
    it(`exits 2 with a one-line error for ${name}`, async () => {
      const r = await runCliAsync(
        args,
        name.includes('environment') ? { FEEDSUB_SERVER_PORT: 'x' } : {},
      );
      assert.equal(r.status, 2, r.stderr);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, message);
    });
  }

  it('config check warns on stderr about a value another key overrides, prints the config and exits 0', async () => {
    const r = await runCliAsync(['config', 'check'], {
      FEEDSUB_POLL_INTERVAL_SECONDS: '30',
      FEEDSUB_POLL_MIN_INTERVAL_SECONDS: '120',
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(
      (JSON.parse(r.stdout) as { poll: { interval_seconds: number } }).poll.interval_seconds,
      30,
    );
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 2, r.stderr);
    assert.match(
      lines[0]!,
      /^config: warning: poll\.interval_seconds \(30\) is below poll\.min_interval_seconds \(120\)/,
    );
    assert.match(lines[1]!, /^config: ok with 1 warning\(s\) \(database /);
    const quiet = await runCliAsync(['config', 'check']);
    assert.equal(quiet.status, 0, quiet.stderr);
    assert.match(quiet.stderr, /^config: ok \(database [^\n]*\)\n$/);
  });

  it('config check prints the effective config with the token hidden', async () => {
    const r = await runCliAsync(['config', 'check', '--data-dir', '/tmp/x'], {
      FEEDSUB_METRICS_TOKEN: 'sekret',
      FEEDSUB_POLL_INTERVAL_SECONDS: '300',
    });
    assert.equal(r.status, 0, r.stderr);
    const printed = JSON.parse(r.stdout) as {
      poll: { interval_seconds: number };
      storage: { data_dir: string };
      metrics: { token: string };
    };
    assert.equal(printed.poll.interval_seconds, 300);
    assert.equal(printed.storage.data_dir, '/tmp/x');
    assert.equal(printed.metrics.token, '(set)');
  });
});

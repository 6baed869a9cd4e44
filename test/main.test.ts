import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runCli, startDaemon, type Daemon } from './support/daemon.ts';

describe('feedsub CLI', () => {
  const dirs: string[] = [];
  const daemons: Daemon[] = [];
  const tempDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'feedsub-cli-'));
    dirs.push(d);
    return d;
  };
  after(async () => {
    await Promise.all(daemons.map((d) => d.kill()));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('prints the version of feedsub and of the runtime', () => {
    const r = runCli(['--version']);
    assert.equal(r.status, 0);
    assert.match(r.stdout.trim(), /^feedsub \d+\.\d+\.\d+ \(node v\d+\.\d+\.\d+\)$/);
  });

  it('creates a key shown once on the last line, lists it without the secret, and the key works against a real server', async () => {
    const dataDir = tempDir();
    const made = runCli(['keys', 'create', '--app', 'acme', '--name', 'ci', '--data-dir', dataDir]);
    assert.equal(made.status, 0, made.stderr);
    const key = made.stdout.trim().split('\n').at(-1)!;
    assert.match(key, /^fsk_[A-Za-z0-9_-]{43}$/);
    const listed = runCli(['keys', 'list', '--data-dir', dataDir]);
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

  it('keeps data across a restart and a revoked key stops working', async () => {
    const dataDir = tempDir();
    const made = JSON.parse(
      runCli(['keys', 'create', '--app', 'acme', '--json', '--data-dir', dataDir]).stdout,
    ) as { id: string; key: string };
    let daemon = await startDaemon({ dataDir });
    daemons.push(daemon);
    const created = (await (
      await fetch(`${daemon.url}/v1/endpoints`, {
        method: 'POST',
        headers: { authorization: made.key, 'content-type': 'application/json' },
        body: JSON.stringify({ title: 'Kept', url: 'https://kept.example.com/' }),
      })
    ).json()) as { id: string };
    assert.equal(await daemon.stop('SIGINT'), 0);
    daemon = await startDaemon({ dataDir });
    daemons.push(daemon);
    const got = await fetch(`${daemon.url}/v1/endpoints/${created.id}`, {
      headers: { authorization: made.key },
    });
    assert.equal(((await got.json()) as { title: string }).title, 'Kept');
    const revoked = runCli(['keys', 'revoke', made.id, '--data-dir', dataDir]);
    assert.equal(revoked.status, 0, revoked.stderr);
    assert.equal(
      (await fetch(`${daemon.url}/v1/endpoints`, { headers: { authorization: made.key } })).status,
      401,
    );
    assert.equal(await daemon.stop(), 0);
  });

  it('logs where it listens and where the database is', async () => {
    const dataDir = tempDir();
    const daemon = await startDaemon({ dataDir });
    daemons.push(daemon);
    await daemon.stop();
    const line = daemon
      .output()
      .split('\n')
      .find((l) => l.includes('listening'))!;
    const parsed = JSON.parse(line) as { url: string; database: string };
    assert.equal(parsed.url, daemon.url);
    assert.equal(parsed.database, join(dataDir, 'feedsub.db'));
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
  for (const [name, args, message] of bad) {
    it(`exits 2 with a one-line error for ${name}`, () => {
      const r = runCli(args, name.includes('environment') ? { FEEDSUB_SERVER_PORT: 'x' } : {});
      assert.equal(r.status, 2, r.stderr);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, message);
    });
  }

  it('config check prints the effective config with the token hidden', () => {
    const r = runCli(['config', 'check', '--data-dir', '/tmp/x'], {
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

// serve and poll --once as processes on one data directory: a restart keeps the data, what serve logs at start, and
// the data directory's lock between a serve and a poll --once.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { cliScratch, runCliAsync, startDaemon } from './support/daemon.ts';
import { until, within } from './support/deadline.ts';

/** A feed origin on 127.0.0.1 that holds every request until release(), then answers 404 to them and to later ones. */
async function holdingOrigin() {
  const held: ServerResponse[] = [];
  let holding = true;
  const server = createServer((req, res) => {
    req.resume();
    if (holding) held.push(res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held,
    release() {
      holding = false;
      for (const res of held.splice(0)) if (!res.destroyed) res.writeHead(404).end();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// Each test has its own data directory, daemon and origin, so they run four at a time: most of their time is
// processes starting and stopping. (All at once, three copies of this file on two busy cores starved each other.)
describe('feedsub serve and poll --once on one data directory', { concurrency: 4 }, () => {
  const { tempDir, daemons } = cliScratch();

  it('keeps data across a restart and a revoked key stops working', async () => {
    const dataDir = tempDir();
    const made = JSON.parse(
      (await runCliAsync(['keys', 'create', '--app', 'acme', '--json', '--data-dir', dataDir]))
        .stdout,
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
    // Not runCli: blocking this process for longer than the daemon's keep-alive timeout (a loaded machine) left a
    // socket the daemon had closed in fetch's pool, and the next fetch failed on it.
    const revoked = await runCliAsync(['keys', 'revoke', made.id, '--data-dir', dataDir]);
    assert.equal(revoked.status, 0, revoked.stderr);
    assert.equal(
      (await fetch(`${daemon.url}/v1/endpoints`, { headers: { authorization: made.key } })).status,
      401,
    );
    assert.equal(await daemon.stop(), 0);
  });

  it('logs where it listens and where the database is, and is called feedsub in ps and top, run from source', async () => {
    const dataDir = tempDir();
    const daemon = await startDaemon({ dataDir, source: true });
    daemons.push(daemon);
    if (process.platform === 'linux') {
      assert.equal(readFileSync(`/proc/${daemon.child.pid}/comm`, 'utf8').trim(), 'feedsub');
      assert.equal(
        readFileSync(`/proc/${daemon.child.pid}/cmdline`, 'utf8').split('\0')[0],
        'feedsub',
      );
    }
    await daemon.stop();
    const line = daemon
      .output()
      .split('\n')
      .find((l) => l.includes('listening'))!;
    const parsed = JSON.parse(line) as { url: string; database: string };
    assert.equal(parsed.url, daemon.url);
    assert.equal(parsed.database, join(dataDir, 'feedsub.db'));
  });

  it('serve logs a value another key overrides, once, at start', async () => {
    const daemon = await startDaemon({
      dataDir: tempDir(),
      env: { FEEDSUB_POLL_PER_HOST_CONCURRENCY: '40' },
    });
    daemons.push(daemon);
    assert.equal(await daemon.stop(), 0);
    const warned = daemon
      .output()
      .split('\n')
      .filter((l) => l.includes('overridden by another key'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(warned.length, 1, daemon.output());
    assert.equal(warned[0]!.level, 'warn');
    assert.equal(warned[0]!.key, 'poll.per_host_concurrency');
    assert.equal(warned[0]!.overridden_by, 'poll.concurrency');
  });

  it('poll --once refuses while serve runs on the data directory (exit 2, one line naming it), and --force polls beside it', async () => {
    const dataDir = tempDir();
    const daemon = await startDaemon({ dataDir });
    daemons.push(daemon);
    const refused = await runCliAsync(['poll', '--once', '--data-dir', dataDir]);
    assert.equal(refused.status, 2, refused.stderr);
    assert.equal(refused.stdout, '');
    assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
    assert.ok(
      refused.stderr.startsWith(`feedsub: poll: unable to lock the data directory ${dataDir}: `),
      refused.stderr,
    );
    assert.match(refused.stderr, /a feedsub serve .* is running on it.*pass --force/);
    const forced = await runCliAsync(['poll', '--once', '--force', '--data-dir', dataDir]);
    assert.equal(forced.status, 0, forced.stderr);
    assert.match(forced.stdout, /^feeds fetched 0, /);
    assert.equal(await daemon.stop(), 0);
    const alone = await runCliAsync(['poll', '--once', '--data-dir', dataDir]);
    assert.equal(alone.status, 0, alone.stderr);
  });

  it("serve refuses to start while poll --once runs on the data directory, and poll --once takes over a dead serve's feeds", async () => {
    const dataDir = tempDir();
    const origin = await holdingOrigin();
    const env = {
      FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
      FEEDSUB_SERVER_SHUTDOWN_TIMEOUT_SECONDS: '1',
    };
    try {
      const key = (
        await runCliAsync(['keys', 'create', '--app', 'acme', '--data-dir', dataDir])
      ).stdout
        .trim()
        .split('\n')
        .at(-1)!;
      const daemon = await startDaemon({ dataDir, env });
      daemons.push(daemon);
      const post = async (path: string, body: unknown) =>
        (await (
          await fetch(`${daemon.url}${path}`, {
            method: 'POST',
            headers: { authorization: key, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          })
        ).json()) as { id: string };
      const ep = await post('/v1/endpoints', { title: 'x', url: 'https://hooks.example.com/' });
      await post('/v1/subscriptions', { endpoint: ep.id, url: `${origin.url}/feed.xml` });
      // The daemon's first fetch hangs at the origin; stopping abandons it, leaving the feed leased.
      await until(() => origin.held.length === 1, 10_000, "the daemon's first fetch");
      assert.equal(await daemon.stop(), 0);
      const poll = runCliAsync(['poll', '--once', '--data-dir', dataDir], env);
      // poll --once released the dead daemon's lease (it holds the lock) and its fetch hangs too.
      await until(() => origin.held.length === 2, 20_000, "poll --once's fetch");
      const serve = await runCliAsync(['serve', '--port', '0', '--data-dir', dataDir], env, 20_000);
      assert.equal(serve.status, 2, serve.stderr);
      assert.match(serve.stderr, /unable to lock the data directory .*or a feedsub poll --once/);
      origin.release();
      const polled = await within(poll, 20_000, 'poll --once');
      assert.equal(polled.status, 0, polled.stderr);
      assert.match(polled.stdout, /^feeds fetched 1, not modified 0, failed 1, /);
    } finally {
      origin.release();
      await origin.close();
    }
  });
});

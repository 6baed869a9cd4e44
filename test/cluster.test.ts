// Several `feedsub serve` processes (nodes) on one PostgreSQL database: each shows the live ones in /healthz and drops
// one that stops, and a subscription created through one node is fetched within a second by another, woken by the
// database's notifications.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { cliScratch, runCliAsync, startDaemon, type Daemon } from './support/daemon.ts';
import { until } from './support/deadline.ts';
import { sharedPostgres, type Postgres } from './support/postgres.ts';
import { rss, startOrigin } from './support/servers.ts';

type Health = { status: string; node: string; nodes: { id: string; name: string }[] };

const health = async (d: Daemon): Promise<Health> =>
  (await (await fetch(`${d.url}/healthz`)).json()) as Health;

/** The feeds a node fetched and parsed, from its /metrics. */
const parsed = async (d: Daemon): Promise<number> => {
  const text = await (await fetch(`${d.url}/metrics`)).text();
  return Number(/^feedsub_polls_total\{outcome="parsed"\} (\d+)$/m.exec(text)?.[1]);
};

describe('nodes sharing one PostgreSQL database', { concurrency: 1 }, () => {
  const { tempDir, daemons } = cliScratch();
  let server: Postgres;
  before(async () => {
    server = await sharedPostgres();
  });

  /** Starts a node named `name` on `url`, with `env` beside it. */
  const node = async (url: string, name: string, env: Record<string, string> = {}) => {
    const daemon = await startDaemon({
      dataDir: join(tempDir(), 'unused'),
      env: {
        FEEDSUB_STORAGE_DATABASE_URL: url,
        FEEDSUB_CLUSTER_NODE_NAME: name,
        FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
        ...env,
      },
    });
    daemons.push(daemon);
    return daemon;
  };
  const seeing = (d: Daemon, n: number) =>
    until(async () => (await health(d)).nodes.length === n, 15_000, `${n} live nodes`, 100);

  it("shows every live node in each node's /healthz, and drops one that stops at its next heartbeat", async () => {
    const url = await server.newDatabase();
    const a = await node(url, 'node-a');
    const b = await node(url, 'node-b');
    await seeing(a, 2);
    await seeing(b, 2);
    const [ha, hb] = [await health(a), await health(b)];
    assert.deepEqual(
      ha.nodes.map((n) => n.name),
      ['node-a', 'node-b'],
      'oldest first',
    );
    assert.deepEqual(
      hb.nodes.map((n) => n.id),
      ha.nodes.map((n) => n.id),
    );
    assert.notEqual(ha.node, hb.node);
    assert.equal(await b.stop('SIGTERM'), 0);
    // The stopped node removes its row; the next heartbeat (5 s) reads it gone, well before it would lapse (15 s).
    await until(async () => (await health(a)).nodes.length === 1, 7000, 'b gone', 100);
    assert.deepEqual(
      (await health(a)).nodes.map((n) => n.name),
      ['node-a'],
    );
  });

  it('fetches a subscription created through one node within a second on another, woken by a notification', async () => {
    const url = await server.newDatabase();
    const origin = await startOrigin();
    try {
      origin.set('/feed.xml', { body: rss([{ guid: 'one', title: 'One' }]) });
      // One fetch at a time per host in all: the older node has that share, the newer none, so only a nudge through
      // the database wakes the node that may fetch (its own wake would come with its idle minute).
      const env = { FEEDSUB_POLL_PER_HOST_CONCURRENCY: '1' };
      const older = await node(url, 'older', env);
      const newer = await node(url, 'newer', env);
      await seeing(older, 2);
      await seeing(newer, 2);
      const made = await runCliAsync(
        ['keys', 'create', '--app', 'acme', '--name', 'ci', '--json', '--data-dir', tempDir()],
        { FEEDSUB_STORAGE_DATABASE_URL: url },
      );
      assert.equal(made.status, 0, made.stderr);
      const { key } = JSON.parse(made.stdout) as { key: string };
      const call = async (path: string, body: unknown) => {
        const res = await fetch(`${newer.url}${path}`, {
          method: 'POST',
          headers: { authorization: key, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        assert.equal(res.status, 201, await res.clone().text());
        return (await res.json()) as { id: string };
      };
      const endpoint = await call('/v1/endpoints', {
        title: 'Hooks',
        url: 'https://hooks.example.com/',
      });
      const created = performance.now();
      await call('/v1/subscriptions', {
        url: `${origin.url}/feed.xml`,
        endpoint: endpoint.id,
      });
      await until(() => origin.requests.length > 0, 1000, 'the feed fetched', 10);
      assert.ok(origin.requests[0]!.at - created < 1000);
      await until(async () => (await parsed(older)) === 1, 2000, 'its poll recorded', 20);
      assert.equal(await parsed(newer), 0, 'the newer node has no share of the host');
      assert.equal(
        (await health(newer)).nodes.length,
        2,
        'both nodes were live throughout: the newer one could not fetch it',
      );
    } finally {
      await origin.close();
    }
  });
});

// Several `feedsub serve` processes (nodes) on one PostgreSQL database: each shows the live ones in /healthz and drops
// one that stops; a subscription created through one node is fetched within a second by another, woken by the
// database's notifications; three nodes polling every second split the work, never fetch one feed twice at once, and
// deliver each entry once per subscription; and the feed or event a node was working on when it was SIGKILLed is
// taken over by another within the node timeout, nothing lost.
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { cliScratch, runCliAsync, startDaemon, type Daemon } from './support/daemon.ts';
import { until, within } from './support/deadline.ts';
import { sharedPostgres, type Postgres } from './support/postgres.ts';
import { rss, startOrigin, startReceiver } from './support/servers.ts';

type Health = {
  status: string;
  node: string;
  nodes: { id: string; name: string; polls: number; deliveries: number }[];
};

const health = async (d: Daemon): Promise<Health> =>
  (await (await fetch(`${d.url}/healthz`)).json()) as Health;

/** The feeds a node fetched, whatever the outcome, from its /metrics. */
const pollsOf = async (d: Daemon): Promise<number> => {
  const text = await (await fetch(`${d.url}/metrics`)).text();
  return [...text.matchAll(/^feedsub_polls_total\{outcome="[a-z]+"\} (\d+)$/gm)].reduce(
    (sum, m) => sum + Number(m[1]),
    0,
  );
};

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

  /** Two nodes on a new database with a node timeout of TIMEOUT_S, a key, and an endpoint at `receiverUrl`. */
  const TIMEOUT_S = 6;
  const pairWithKey = async () => {
    const url = await server.newDatabase();
    const env = { FEEDSUB_CLUSTER_NODE_TIMEOUT_SECONDS: String(TIMEOUT_S) };
    const nodes = [await node(url, 'one', env), await node(url, 'two', env)];
    for (const n of nodes) await seeing(n, 2);
    const made = await runCliAsync(
      ['keys', 'create', '--app', 'acme', '--name', 'ci', '--json', '--data-dir', tempDir()],
      { FEEDSUB_STORAGE_DATABASE_URL: url },
    );
    assert.equal(made.status, 0, made.stderr);
    const { key } = JSON.parse(made.stdout) as { key: string };
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${nodes[1]!.url}${path}`, {
        method: 'POST',
        headers: { authorization: key, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 201, await res.clone().text());
      return (await res.json()) as { id: string };
    };
    /** The node whose last heartbeat says it holds what `holds` picks, once one does (bounded). */
    const holder = async (holds: (n: Health['nodes'][number]) => number) => {
      let found: Daemon | undefined;
      await until(
        async () => {
          const { nodes: live, node: self } = await health(nodes[0]!);
          const id = live.find((n) => holds(n) > 0)?.id;
          if (id === undefined) return false;
          found = id === self ? nodes[0] : nodes[1];
          return true;
        },
        (TIMEOUT_S * 1000) / 3 + 3000,
        'a node holding it',
        100,
      );
      return { holder: found!, survivor: nodes.find((n) => n !== found)! };
    };
    return { post, holder };
  };

  // A dead node's lease lapses TIMEOUT_S after its last heartbeat; the survivor sees it gone at its next heartbeat
  // (TIMEOUT_S / 3 later) and claims at once. Without that, the work would wait for the lease its deadline sets
  // (delivery: 15 s + 10 s; polls: 30 s + 10 s) and for the survivor's idle minute.
  const TAKEN_OVER_MS = TIMEOUT_S * 1000 + (TIMEOUT_S * 1000) / 3 + 3000;

  it('attempts again, through another node, the event a node was attempting when it was killed', async () => {
    const origin = await startOrigin();
    // Holds every request until `ok` is set, then answers 204: the killed node's attempt never ends.
    const held: ServerResponse[] = [];
    const seen: { id: string; at: number; answered: boolean }[] = [];
    let ok = false;
    const receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        seen.push({ id: String(req.headers['webhook-id']), at: performance.now(), answered: ok });
        if (ok) res.writeHead(204).end();
        else held.push(res);
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      origin.set('/backfilled.xml', {
        body: rss([{ guid: 'c' }, { guid: 'b' }, { guid: 'a' }]),
      });
      const { post, holder } = await pairWithKey();
      const endpoint = await post('/v1/endpoints', {
        title: 'Receiver',
        url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`,
      });
      // One subscription: its events go one at a time, so one node holds the attempt.
      await post('/v1/subscriptions', {
        url: `${origin.url}/backfilled.xml`,
        endpoint: endpoint.id,
        backfill: 3,
      });
      await until(() => seen.length === 1, 15_000, 'the first attempt', 20);
      const { holder: victim } = await holder((n) => n.deliveries);
      ok = true;
      await victim.kill();
      const killed = performance.now();
      await until(
        () => seen.some((s) => s.answered && s.id === seen[0]!.id),
        TAKEN_OVER_MS,
        'the event attempted again',
        20,
      );
      assert.ok(performance.now() - killed < TAKEN_OVER_MS);
      assert.deepEqual(
        [...new Set(seen.map((s) => s.id))],
        [seen[0]!.id],
        'the one event, attempted by the killed node and then by the other',
      );
    } finally {
      ok = true;
      for (const res of held) res.destroy();
      receiver.closeAllConnections();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
      await origin.close();
    }
  });

  it('fetches again, through another node, the feed a node was fetching when it was killed', async () => {
    const origin = await startOrigin();
    try {
      origin.set('/slow.xml', { body: rss([{ guid: 'one' }]) });
      const hold = origin.hold('/slow.xml');
      const { post, holder } = await pairWithKey();
      const endpoint = await post('/v1/endpoints', {
        title: 'Hooks',
        url: 'https://hooks.example.com/',
      });
      await post('/v1/subscriptions', { url: `${origin.url}/slow.xml`, endpoint: endpoint.id });
      await within(hold.arrived, 5000, 'the first fetch');
      const { holder: victim } = await holder((n) => n.polls);
      await victim.kill();
      const killed = performance.now();
      hold.release();
      await until(
        () => origin.requests.filter((r) => r.path === '/slow.xml').length === 2,
        TAKEN_OVER_MS,
        'the feed fetched again',
        20,
      );
      assert.ok(performance.now() - killed < TAKEN_OVER_MS);
    } finally {
      await origin.close();
    }
  });

  it('splits the polls of three nodes, fetching no feed twice at once and delivering each entry once per subscription', async () => {
    const FEEDS = 12;
    const ROUNDS = 3;
    const url = await server.newDatabase();
    const origin = await startOrigin();
    const receiver = await startReceiver();
    try {
      const items = (n: number) => Array.from({ length: n }, (_, i) => ({ guid: `e${n - i}` }));
      for (let f = 0; f < FEEDS; f++) origin.set(`/f${f}.xml`, { body: rss(items(1)) });
      // Every feed due every second or two, so the nodes claim the same due feeds over and over; the origin's host
      // (every feed's) split two fetches at a time to each node.
      const env = {
        FEEDSUB_POLL_PER_HOST_CONCURRENCY: '6',
        FEEDSUB_POLL_INTERVAL_SECONDS: '1',
        FEEDSUB_POLL_MIN_INTERVAL_SECONDS: '1',
        FEEDSUB_POLL_MAX_INTERVAL_SECONDS: '2',
      };
      const nodes = [
        await node(url, 'n1', env),
        await node(url, 'n2', env),
        await node(url, 'n3', env),
      ];
      for (const n of nodes) await seeing(n, 3);
      const made = await runCliAsync(
        ['keys', 'create', '--app', 'acme', '--name', 'ci', '--json', '--data-dir', tempDir()],
        { FEEDSUB_STORAGE_DATABASE_URL: url },
      );
      const { key } = JSON.parse(made.stdout) as { key: string };
      const post = async (through: Daemon, path: string, body: unknown) => {
        const res = await fetch(`${through.url}${path}`, {
          method: 'POST',
          headers: { authorization: key, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        assert.equal(res.status, 201, await res.clone().text());
        return (await res.json()) as { id: string };
      };
      const endpoints = [
        await post(nodes[0]!, '/v1/endpoints', { title: 'R1', url: `${receiver.url}/r1` }),
        await post(nodes[1]!, '/v1/endpoints', { title: 'R2', url: `${receiver.url}/r2` }),
      ];
      const subscriptions = new Set<string>();
      for (let f = 0; f < FEEDS; f++)
        for (const [i, endpoint] of endpoints.entries())
          subscriptions.add(
            (
              await post(nodes[(f + i) % 3]!, '/v1/subscriptions', {
                url: `${origin.url}/f${f}.xml`,
                endpoint: endpoint.id,
              })
            ).id,
          );
      const fetched = (f: number) => origin.requests.filter((r) => r.path === `/f${f}.xml`).length;
      await until(
        () => Array.from({ length: FEEDS }, (_, f) => fetched(f)).every((n) => n > 0),
        10_000,
        'every feed baselined',
        50,
      );
      for (let round = 2; round <= ROUNDS + 1; round++) {
        for (let f = 0; f < FEEDS; f++) origin.set(`/f${f}.xml`, { body: rss(items(round)) });
        await receiver.waitFor(FEEDS * 2 * (round - 1), 15_000);
      }
      await new Promise((r) => setTimeout(r, 1500)); // a second of polls more: none may send anything again
      const sent = receiver.deliveries.flatMap((d) => {
        const event = JSON.parse(d.body) as {
          data: { subscription: { id: string }; entries: { guid: string }[] };
        };
        return event.data.entries.map((e) => `${event.data.subscription.id} ${e.guid}`);
      });
      assert.equal(sent.length, FEEDS * 2 * ROUNDS, 'as many entries sent as made');
      assert.equal(new Set(sent).size, sent.length, 'none sent twice');
      assert.deepEqual(new Set(sent.map((s) => s.split(' ')[0])), subscriptions);
      for (let f = 0; f < FEEDS; f++) {
        const at = origin.requests
          .filter((r) => r.path === `/f${f}.xml`)
          .map((r) => r.at)
          .sort((a, b) => a - b);
        const closest = Math.min(...at.slice(1).map((t, i) => t - at[i]!));
        assert.ok(closest > 300, `/f${f}.xml fetched twice ${closest.toFixed(0)} ms apart`);
      }
      const polled = await Promise.all(nodes.map((n) => pollsOf(n)));
      assert.ok(
        polled.every((n) => n > 0),
        `every node fetched (${polled.join(', ')})`,
      );
    } finally {
      await receiver.close();
      await origin.close();
    }
  });

  it('counts an application’s quota across nodes: of six creates at once, three through each node, the quota’s three succeed', async () => {
    const url = await server.newDatabase();
    const env = { FEEDSUB_QUOTAS_SUBSCRIPTIONS_PER_APPLICATION: '3' };
    const nodes = [await node(url, 'q1', env), await node(url, 'q2', env)];
    const made = await runCliAsync(
      ['keys', 'create', '--app', 'acme', '--name', 'ci', '--json', '--data-dir', tempDir()],
      { FEEDSUB_STORAGE_DATABASE_URL: url },
    );
    const { key } = JSON.parse(made.stdout) as { key: string };
    const post = (through: Daemon, path: string, body: unknown) =>
      fetch(`${through.url}${path}`, {
        method: 'POST',
        headers: { authorization: key, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const endpoint = (await (
      await post(nodes[0]!, '/v1/endpoints', { title: 'E', url: 'https://hooks.example.com/' })
    ).json()) as { id: string };
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        post(nodes[i % 2]!, '/v1/subscriptions', {
          url: `https://feeds.example.com/${i}.xml`,
          endpoint: endpoint.id,
        }).then((r) => r.status),
      ),
    );
    assert.deepEqual(answers.sort(), [201, 201, 201, 429, 429, 429]);
  });

  it('signs in to the dashboard with a form one node served and another received, and keeps the session on both', async () => {
    const url = await server.newDatabase();
    const [a, b] = [await node(url, 'd1'), await node(url, 'd2')];
    const made = await runCliAsync(
      ['keys', 'create', '--app', 'acme', '--name', 'ci', '--json', '--data-dir', tempDir()],
      { FEEDSUB_STORAGE_DATABASE_URL: url },
    );
    const { key } = JSON.parse(made.stdout) as { key: string };
    const cookies = new Map<string, string>();
    const remember = (res: Response) => {
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const at = pair!.indexOf('=');
        cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
      }
    };
    const cookie = () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const form = await fetch(`${a.url}/dashboard`);
    remember(form);
    const login = /name="_login" value="([^"]+)"/.exec(await form.text())?.[1];
    assert.ok(login, 'the sign-in form carries its token');
    const signedIn = await fetch(`${b.url}/dashboard`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        cookie: cookie(),
        origin: b.url,
      },
      body: new URLSearchParams({ _action: 'signin', _login: login, key, next: '' }).toString(),
    });
    assert.equal(signedIn.status, 303, await signedIn.text());
    remember(signedIn);
    for (const n of [a, b]) {
      const page = await fetch(`${n.url}/dashboard`, { headers: { cookie: cookie() } });
      assert.match(await page.text(), /<h1>Overview<\/h1>/);
    }
  });
});

// The daemon in this process, through its HTTP API: a host that never answers holds up no other application's feed,
// and a poll or an attempt whose outcome could not be written runs again as soon as the database takes writes again.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createKey } from '../src/actions/keys.ts';
import { startApp, type RunningApp } from '../src/app.ts';
import { defaultConfig, withConfig, type Config } from '../src/config.ts';
import { until, within } from './support/deadline.ts';
import { startGatedOrigin } from './support/gated-origin.ts';
import { recordingLogger } from './support/log.ts';
import { rss, startModalReceiver, startOrigin, startReceiver } from './support/servers.ts';

/** A server on `host` that accepts every request and never answers until closed. */
async function silentServer(host: string) {
  const open: ServerResponse[] = [];
  let max = 0;
  const server = createServer((req, res) => {
    req.resume();
    open.push(res);
    max = Math.max(max, open.length);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    url: `http://${host}:${(server.address() as AddressInfo).port}`,
    open: () => open.length,
    max: () => max,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** An application with a key, an endpoint, and a way to subscribe it to feed URLs through the API. */
async function tenant(app: RunningApp, name: string, hook: string) {
  const key = createKey(app.ctx, name, null).key;
  const post = async (path: string, body: unknown) => {
    const res = await fetch(app.url + path, {
      method: 'POST',
      headers: { authorization: key, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 201, await res.clone().text());
    return (await res.json()) as { id: string; feed?: string };
  };
  const endpoint = await post('/v1/endpoints', { title: name, url: hook });
  return {
    subscribe: (url: string, to = endpoint.id) => post('/v1/subscriptions', { endpoint: to, url }),
    /** Another endpoint of this application: its id. */
    endpoint: async (url: string) => (await post('/v1/endpoints', { title: name, url })).id,
    get: async (path: string) =>
      (await (await fetch(app.url + path, { headers: { authorization: key } })).json()) as Record<
        string,
        unknown
      >,
  };
}

describe('the daemon on its work pools', () => {
  const dirs: string[] = [];
  const configFor = (patch: Parameters<typeof withConfig>[1] = {}): Config => {
    const dir = mkdtempSync(join(tmpdir(), 'feedsub-pool-'));
    dirs.push(dir);
    return withConfig(
      withConfig(defaultConfig(), {
        storage: { data_dir: dir },
        server: { port: 0 },
        network: { allow_private: true },
      }),
      patch,
    );
  };
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("fetches another application's new feed at once, and again at its interval, while twelve feeds of one host never answer", async () => {
    const slow = await silentServer('127.0.0.1');
    // Another host, at another address (127.0.0.0/8 is all loopback on Linux).
    let fetched = 0;
    const healthy = createServer((_req, res) => {
      fetched += 1;
      res.writeHead(200, { 'content-type': 'application/rss+xml' }).end(rss([{ guid: 'g1' }]));
    });
    await new Promise<void>((resolve) => healthy.listen(0, '127.0.0.2', resolve));
    const app = await startApp(
      configFor({
        poll: { interval_seconds: 1, min_interval_seconds: 1, max_interval_seconds: 1 },
      }),
      recordingLogger().logger,
    );
    try {
      const a = await tenant(app, 'a', 'https://hooks.example/a');
      for (let i = 0; i < 12; i++) await a.subscribe(`${slow.url}/feed-${i}.xml`);
      await until(() => slow.open() === 2, 3000, "A's fetches held by the silent host");
      const b = await tenant(app, 'b', 'https://hooks.example/b');
      // Before the pool, a tick waited for its whole batch: B's feed waited for the silent host's 30 s timeout.
      await b.subscribe(`http://127.0.0.2:${(healthy.address() as AddressInfo).port}/feed.xml`);
      await until(() => fetched > 0, 3000, "B's new feed fetched");
      // Its next polls come at its one-second interval, not after the silent host's 30 s timeout.
      await until(() => fetched >= 3, 4000, "B's feed polled twice more");
      assert.equal(slow.max(), 2, 'the silent host holds its two per-host slots, no more');
    } finally {
      await slow.close();
      await app.stop();
      healthy.closeAllConnections();
      await new Promise<void>((resolve) => healthy.close(() => resolve()));
    }
  });

  it("delivers another application's new entry within seconds while eight slow-drip receivers hold their attempts open", async () => {
    const origin = await startOrigin();
    const drip = await startModalReceiver('drip');
    const receiver = await startReceiver();
    const app = await startApp(
      configFor({
        poll: { interval_seconds: 1, min_interval_seconds: 1, max_interval_seconds: 1 },
        delivery: { concurrency: 8, timeout_seconds: 15 },
        server: { shutdown_timeout_seconds: 1 },
      }),
      recordingLogger().logger,
    );
    try {
      const feeds = Array.from({ length: 8 }, (_, i) => `/a-${i}.xml`);
      for (const path of [...feeds, '/b.xml']) origin.set(path, { body: rss([{ guid: 'g1' }]) });
      const a = await tenant(app, 'a', `${drip.url}/a-0`);
      for (const [i, path] of feeds.entries())
        await a.subscribe(`${origin.url}${path}`, await a.endpoint(`${drip.url}/a-${i}`));
      const b = await tenant(app, 'b', `${receiver.url}/b`);
      await b.subscribe(`${origin.url}/b.xml`);
      const fetched = (path: string) => origin.requests.filter((r) => r.path === path).length;
      await until(
        () => fetched('/b.xml') >= 1 && feeds.every((p) => fetched(p) >= 1),
        5000,
        'the baselines',
      );
      // A's eight feeds each get an entry, every second: their events drip into A's eight endpoints until the 15 s
      // deadline. Before the pool's unproven share, they took all eight slots, and B's event waited for the deadline.
      for (const path of feeds)
        origin.set(path, { body: rss([{ guid: `${path}-${Date.now()}` }, { guid: 'g1' }]) });
      await until(() => drip.state.open >= 4, 5000, "A's drips holding their slots");
      origin.set('/b.xml', { body: rss([{ guid: 'g2' }, { guid: 'g1' }]) });
      await within(receiver.waitFor(1, 10_000), 4000, "B's entry delivered");
      assert.match(receiver.deliveries[0]!.body, /"g2"/);
      assert.equal(
        drip.state.max,
        4,
        'never-proven endpoints of one application share half the slots',
      );
    } finally {
      await drip.close();
      await app.stop();
      await receiver.close();
      await origin.close();
    }
  });

  it('answers POST /v1/endpoints/:id/test to a slow-drip receiver at delivery.timeout_seconds, with why', async () => {
    const drip = await startModalReceiver('drip');
    const app = await startApp(
      configFor({ delivery: { timeout_seconds: 2 }, server: { shutdown_timeout_seconds: 1 } }),
      recordingLogger().logger,
    );
    try {
      const key = createKey(app.ctx, 'tests', null).key;
      const headers = { authorization: key, 'content-type': 'application/json' };
      const created = await fetch(`${app.url}/v1/endpoints`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ title: 'drip', url: `${drip.url}/hook` }),
      });
      const { id } = (await created.json()) as { id: string };
      // Before, the attempt's timeout only bounded the gaps between bytes: the test had not answered after 90 s.
      const res = await within(
        fetch(`${app.url}/v1/endpoints/${id}/test`, { method: 'POST', headers }),
        5000,
        'the test answered',
      );
      const body = (await res.json()) as { attempt: { status_code: number; error: string } };
      assert.equal(res.status, 200);
      assert.equal(body.attempt.status_code, 200);
      assert.match(body.attempt.error, /did not end within 2000 ms/);
    } finally {
      await drip.close();
      await app.stop();
    }
  });

  it('refuses a 10 MiB garbage body from its head, fails a feed past the parse heap as a parse error, and goes on', async () => {
    const origin = await startOrigin();
    origin.set('/garbage.xml', { body: randomBytes(10 * 1024 * 1024) });
    // An 11 MB feed of 20,000 items: its text, XML tree and entries need more than the 32 MiB parse heap.
    const item = (i: number) =>
      `<item><guid>id-${i}</guid><title>Item ${i}</title><description>${'lorem ipsum '.repeat(40)}</description></item>`;
    const huge = `<?xml version="1.0"?><rss version="2.0"><channel><title>Huge</title>${Array.from({ length: 20_000 }, (_, i) => item(i)).join('')}</channel></rss>`;
    origin.set('/huge.xml', { body: huge });
    origin.set('/feed.xml', { body: rss([{ guid: 'g1' }]) });
    const app = await startApp(
      configFor({ poll: { parse_heap_mb: 32 } }),
      recordingLogger().logger,
    );
    try {
      const a = await tenant(app, 'a', 'https://hooks.example/a');
      const failed = async (url: string) => {
        const sub = await a.subscribe(url);
        let feed: Record<string, unknown> = {};
        await until(
          async () => (feed = await a.get(`/v1/feeds/${sub.feed}`)).last_error !== null,
          20_000,
          `${url} polled`,
        );
        return String(feed.last_error);
      };
      // Before issue 13 it was decoded on the main thread (RSS from 216 to 794 MiB); then it filled the parse heap.
      assert.match(await failed(`${origin.url}/garbage.xml`), /^parse: not a feed/);
      assert.match(await failed(`${origin.url}/huge.xml`), /needs more than 32 MiB to read/);
      const next = await a.subscribe(`${origin.url}/feed.xml`);
      await until(
        async () => (await a.get(`/v1/feeds/${next.feed}`)).last_success_at !== null,
        10_000,
        'a feed read after the worker was replaced',
      );
    } finally {
      await app.stop();
      await origin.close();
    }
  });

  it('polls a feed again within seconds of the database taking writes again when its poll could not be recorded', async () => {
    const origin = await startGatedOrigin();
    origin.set('/feed.xml', rss([{ guid: 'g1' }]));
    const { logger, lines } = recordingLogger();
    const app = await startApp(configFor(), logger);
    try {
      const gate = origin.hold('/feed.xml');
      const a = await tenant(app, 'a', 'https://hooks.example/a');
      await a.subscribe(`${origin.url}/feed.xml`);
      await gate.arrived;
      app.ctx.db.pragma('query_only = 1');
      const second = origin.hold('/feed.xml');
      gate.release();
      await until(
        () => lines.some((l) => l.msg === 'poll: unable to record outcomes'),
        5000,
        'the failed record logged',
      );
      app.ctx.db.pragma('query_only = 0');
      // Before: the claimed feed kept its lease (poll.timeout_seconds x 5 + 10 s = 160 s) after the database recovered.
      await Promise.race([
        second.arrived,
        until(() => false, 8000, 'the feed polled again after writes work again'),
      ]);
      second.release();
      await until(
        () => lines.some((l) => l.msg === 'poll: recording outcomes again'),
        5000,
        'the recovery logged',
      );
      assert.equal(lines.filter((l) => l.msg === 'poll: unable to record outcomes').length, 1);
    } finally {
      app.ctx.db.pragma('query_only = 0');
      await app.stop();
      await origin.close();
    }
  });

  it('sends an event again within seconds of the database taking writes again when its attempt could not be recorded', async () => {
    const origin = await startOrigin();
    const receiver = await startReceiver();
    const { logger, lines } = recordingLogger();
    let failNext = false;
    receiver.respond(() => {
      if (failNext) {
        failNext = false;
        app.ctx.db.pragma('query_only = 1'); // the answer arrives, and its outcome cannot be written
      }
      return { status: 204 };
    });
    const app = await startApp(
      configFor({
        poll: { interval_seconds: 1, min_interval_seconds: 1, max_interval_seconds: 1 },
      }),
      logger,
    );
    try {
      origin.set('/feed.xml', { body: rss([{ guid: 'g1' }]) });
      const a = await tenant(app, 'a', `${receiver.url}/hook`);
      await a.subscribe(`${origin.url}/feed.xml`);
      await until(() => origin.requests.length >= 1, 5000, 'the baseline');
      await new Promise((r) => setTimeout(r, 200));
      failNext = true;
      origin.set('/feed.xml', { body: rss([{ guid: 'g2' }, { guid: 'g1' }]) });
      await until(() => receiver.deliveries.length === 1, 5000, 'the first attempt');
      await until(
        () => lines.some((l) => l.msg === 'deliver: unable to record outcomes'),
        5000,
        'the failed record logged',
      );
      app.ctx.db.pragma('query_only = 0');
      // Before: the event kept its lease (delivery.timeout_seconds + 10 s = 25 s).
      await until(() => receiver.deliveries.length === 2, 8000, 'the event sent again');
      assert.equal(receiver.deliveries[1]!.id, receiver.deliveries[0]!.id, 'the same webhook-id');
      assert.equal(lines.filter((l) => l.msg === 'deliver: unable to record outcomes').length, 1);
    } finally {
      app.ctx.db.pragma('query_only = 0');
      await app.stop();
      await receiver.close();
      await origin.close();
    }
  });
});

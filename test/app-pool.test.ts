// The daemon in this process, through its HTTP API: a host that never answers and receivers that drip their answers hold
// up no other application's feed or delivery, and an endpoint test ends at delivery.timeout_seconds.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { createKey } from '../src/actions/keys.ts';
import { startApp } from '../src/app.ts';
import { until, within } from './support/deadline.ts';
import { recordingLogger } from './support/log.ts';
import { rss, startModalReceiver, startOrigin, startReceiver } from './support/servers.ts';
import { appConfig, tenant } from './support/tenant.ts';

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

const dirs: string[] = [];
const configFor = (patch: Parameters<typeof appConfig>[1] = {}) => appConfig(dirs, patch);
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

// Each test starts its own app on its own data directory, origins and receivers: they run at once.
describe('the daemon on its work pools', { concurrency: true }, () => {
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
      // A tick that waited for its whole batch would hold B's feed for the silent host's 30 s timeout.
      await b.subscribe(`http://127.0.0.2:${(healthy.address() as AddressInfo).port}/feed.xml`);
      await until(() => fetched > 0, 3000, "B's new feed fetched");
      // Its next polls come at its one-second interval, not after the silent host's 30 s timeout (the deadline leaves
      // room for a machine running two suites at once, and stays short of that timeout).
      await until(() => fetched >= 3, 20_000, "B's feed polled twice more");
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
});

// Alone: the attempt's 2 s timeout must not run out before the drip receiver in this process sends its headers.
describe('the daemon testing an endpoint', () => {
  it('answers POST /v1/endpoints/:id/test to a slow-drip receiver at delivery.timeout_seconds, with why', async () => {
    const drip = await startModalReceiver('drip');
    const app = await startApp(
      configFor({ delivery: { timeout_seconds: 2 }, server: { shutdown_timeout_seconds: 1 } }),
      recordingLogger().logger,
    );
    try {
      const key = (await createKey(app.ctx, 'tests', null)).key;
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
});

// WebSub end to end through the real `feedsub serve`: a feed advertising the test hub is subscribed at the hub on its
// first poll, the hub's verification reaches the callback under server.public_url, and a signed distribution arrives
// at the receiver as a webhook within seconds although polling is set to an hour; deleting the subscription
// unsubscribes at the hub.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createKey } from '../src/actions/keys.ts';
import { systemClock } from '../src/clock.ts';
import { defaultConfig } from '../src/config.ts';
import { quietCtx } from '../src/context.ts';
import { openDatabase } from '../src/db/open.ts';
import { SqliteEngine } from '../src/db/sqlite-engine.ts';
import { freePort, startDaemon, type Daemon } from './support/daemon.ts';
import { until, within } from './support/deadline.ts';
import { startOrigin, startReceiver, type Origin, type Receiver } from './support/servers.ts';
import { pushRaw, startHub, type Hub } from './support/websub-hub.ts';
import { apiCaller } from './support/subscriber.ts';

/** Polling is an hour apart: an entry at the receiver within this came by push. Not a speed assertion (the issue's
 *  "within one second" is measured and reported: make bench, and the latency line this test prints); the margin
 *  keeps the test true on a loaded machine. */
const PUSH_DEADLINE_MS = 5000;
/** Within this a fallback poll, a verification or a webhook that should come "at once" has come; the loops' own
 *  fallback timers (the poller's 60 s idle wake, a hub request's 10 s deadline) are longer. */
const AT_ONCE_MS = 5000;
/** The lease the lapse test's hub grants: push ends this long after the verification unless renewed. */
const SHORT_LEASE_SECONDS = 2;

/** An Atom feed with entries `ids` advertising `hub`, its self URL `self`. */
function atom(ids: number[], hub: string, self: string): string {
  const entries = ids
    .map(
      (i) =>
        `<entry><id>urn:e2e:${i}</id><title>E${i}</title><updated>2026-01-0${i}T00:00:00Z</updated></entry>`,
    )
    .join('');
  return `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>T</title><id>urn:t</id><updated>2026-01-01T00:00:00Z</updated><link rel="hub" href="${hub}"/><link rel="self" href="${self}"/>${entries}</feed>`;
}

// The two daemons' suites, and the tests of the second (each with its own hub, feed and, where it counts deliveries, its
// own receiver), run at once: most of their time is waiting on a lease, a drip or the WebSub loop's tick.
describe('end to end: WebSub through feedsub serve', { concurrency: true }, () => {
  describe('end to end: WebSub push through feedsub serve', () => {
    let dir: string;
    let daemon: Daemon;
    let origin: Origin;
    let receiver: Receiver;
    let hub: Hub;
    let key: string;
    const api = apiCaller(
      () => daemon.url,
      () => key,
    );

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'feedsub-websub-'));
      const store = new SqliteEngine(openDatabase(join(dir, 'feedsub.db')));
      key = (await createKey(quietCtx(store, systemClock, defaultConfig()), 'websub', null)).key;
      await store.close();
      origin = await startOrigin();
      receiver = await startReceiver();
      hub = await startHub();
      const port = await freePort();
      daemon = await startDaemon({
        dataDir: dir,
        port,
        env: {
          FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
          FEEDSUB_SERVER_PUBLIC_URL: `http://127.0.0.1:${port}`,
          // Polling an hour apart: whatever arrives within seconds came by push.
          FEEDSUB_POLL_INTERVAL_SECONDS: '3600',
          FEEDSUB_POLL_MIN_INTERVAL_SECONDS: '3600',
        },
      });
    });
    after(async () => {
      await daemon?.stop();
      await Promise.all([origin?.close(), receiver?.close(), hub?.close()]);
      rmSync(dir, { recursive: true, force: true });
    });

    it('delivers a pushed entry as a webhook in seconds although polling is hourly, and unsubscribes when the subscription goes', async () => {
      const self = `${origin.url}/push.xml`;
      origin.set('/push.xml', {
        body: atom([1], hub.url, self),
        contentType: 'application/atom+xml',
      });
      const endpoint = await api('POST', '/v1/endpoints', { title: 'R', url: receiver.url });
      const sub = await api('POST', '/v1/subscriptions', { endpoint: endpoint.id, url: self });
      // The first poll (its baseline) finds the hub; the WebSub loop subscribes; the hub verifies through the callback.
      await until(() => hub.subscriptions.size === 1, 10_000, 'subscribed at the hub');
      let feed = await api('GET', `/v1/feeds/${sub.feed}`);
      await until(
        async () => (feed = await api('GET', `/v1/feeds/${sub.feed}`)).push.status === 'active',
        10_000,
        'push active',
      );
      assert.equal(feed.push.hub, hub.url);

      const doc = atom([1, 2], hub.url, self);
      origin.set('/push.xml', { body: doc, contentType: 'application/atom+xml' });
      const published = performance.now();
      assert.deepEqual(await hub.publish(self, doc), [202]);
      const [delivery] = await within(
        receiver.waitFor(1, PUSH_DEADLINE_MS),
        PUSH_DEADLINE_MS,
        'pushed entry as a webhook',
      );
      const latencyMs = performance.now() - published;
      const body = JSON.parse(delivery!.body) as { data: { entries: { guid: string }[] } };
      assert.deepEqual(
        body.data.entries.map((e) => e.guid),
        ['urn:e2e:2'],
      );
      console.log(`# websub push latency (publication → webhook): ${latencyMs.toFixed(1)} ms`);
      assert.ok((await api('GET', `/v1/feeds/${sub.feed}`)).push.last_push_at);
      await api('DELETE', `/v1/subscriptions/${sub.id}`);
      await until(() => hub.subscriptions.size === 0, 10_000, 'unsubscribed at the hub');
      assert.equal(hub.requests.at(-1)!.mode, 'unsubscribe');
    });
  });

  describe(
    'end to end: WebSub against hostile and failing hubs through feedsub serve',
    { concurrency: true },
    () => {
      let dir: string;
      let daemon: Daemon;
      let origin: Origin;
      let receiver: Receiver;
      let key: string;
      let otherKey: string;
      let n = 0;
      /** The hubs and receivers the tests started, closed after the daemon. */
      const started: { close(): Promise<void> }[] = [];
      const api = apiCaller(
        () => daemon.url,
        () => key,
      );
      const otherApi = apiCaller(
        () => daemon.url,
        () => otherKey,
      );

      before(async () => {
        dir = mkdtempSync(join(tmpdir(), 'feedsub-websub-hostile-'));
        const store = new SqliteEngine(openDatabase(join(dir, 'feedsub.db')));
        const ctx = quietCtx(store, systemClock, defaultConfig());
        key = (await createKey(ctx, 'websub-hostile', null)).key;
        otherKey = (await createKey(ctx, 'websub-other', null)).key;
        await store.close();
        origin = await startOrigin();
        receiver = await startReceiver();
        const port = await freePort();
        daemon = await startDaemon({
          dataDir: dir,
          port,
          env: {
            FEEDSUB_NETWORK_ALLOW_PRIVATE: 'true',
            FEEDSUB_SERVER_PUBLIC_URL: `http://127.0.0.1:${port}`,
            // Polling an hour apart: a poll within seconds is push's fallback (or a push taken as a sign of change).
            FEEDSUB_POLL_INTERVAL_SECONDS: '3600',
            FEEDSUB_POLL_MIN_INTERVAL_SECONDS: '1',
            FEEDSUB_POLL_PUSH_MAX_BODY_BYTES: '65536',
            FEEDSUB_POLL_PUSH_TIMEOUT_SECONDS: '3',
            FEEDSUB_POLL_PUSHES_IN_FLIGHT: '6',
            FEEDSUB_POLL_PER_HOST_CONCURRENCY: '16',
          },
        });
      });
      after(async () => {
        await daemon?.stop();
        await Promise.all([origin?.close(), receiver?.close(), ...started.map((s) => s.close())]);
        rmSync(dir, { recursive: true, force: true });
      });

      /** A hub (or receiver) of the test's own, closed after the daemon. */
      async function own<T extends { close(): Promise<void> }>(server: Promise<T>): Promise<T> {
        started.push(await server);
        return started.at(-1) as T;
      }
      /** Polls of `path` the origin answered so far; with `since` (performance.now()), only those that came after. */
      const polls = (path: string, since = -Infinity) =>
        origin.requests.filter((r) => r.path === path && r.at > since).length;

      /** Waits until `hub` holds a verified subscription to `topic`. The daemon records push active before it echoes the
       *  challenge, so the API is asked once it has, not every few milliseconds by every test at once. */
      const verified = (hub: Hub, topic: string) =>
        until(
          () => [...hub.subscriptions.values()].some((s) => s.topic === topic),
          10_000,
          'verified at the hub',
        );

      /** A feed at a fresh path advertising `at`, subscribed through `call` by an endpoint at `to` and verified at the hub:
       *  push active. Returns the feed, its path and self URL, and the callback the hub knows. */
      async function pushedFeed(
        at: Hub,
        call = api,
        to: Receiver = receiver,
      ): Promise<{ feed: string; path: string; self: string; callback: string }> {
        const path = `/h${++n}.xml`;
        const self = `${origin.url}${path}`;
        origin.set(path, { body: atom([1], at.url, self), contentType: 'application/atom+xml' });
        const endpoint = await call('POST', '/v1/endpoints', { title: `R${n}`, url: to.url });
        const sub = await call('POST', '/v1/subscriptions', { endpoint: endpoint.id, url: self });
        await verified(at, self);
        await until(
          async () => (await call('GET', `/v1/feeds/${sub.feed}`)).push.status === 'active',
          10_000,
          'push active',
        );
        const callback = [...at.subscriptions.values()].find((s) => s.topic === self)!.callback;
        return { feed: sub.feed, path, self, callback };
      }

      it('reads a few pushes per hub at a time, cuts a dripping one at its deadline and a large one at its cap, while another application’s push arrives', async () => {
        const [hub, good, mine] = await Promise.all([
          own(startHub()),
          own(startHub()),
          own(startReceiver()),
        ]);
        const [hostile, other] = await Promise.all([
          pushedFeed(hub),
          pushedFeed(good, otherApi, mine),
        ]);
        const secret = hub.subscriptions.get(hostile.callback)!.secret!;
        const before = mine.deliveries.length;
        // Four dripping pushes take the hub's share; a fifth is refused at once rather than held.
        const drips = [1, 2, 3, 4].map(() =>
          pushRaw(hostile.callback, { size: 60_000, chunkBytes: 100, dripMs: 50, secret }),
        );
        await until(
          async () => (await pushRaw(hostile.callback, { size: 10, secret })).status === 503,
          AT_ONCE_MS,
          'the fifth push refused',
        );
        // Another hub's push (another application's feed) is read and delivered meanwhile.
        const doc = atom([1, 2], good.url, other.self);
        origin.set(other.path, { body: doc, contentType: 'application/atom+xml' });
        const published = performance.now();
        assert.deepEqual(await good.publish(other.self, doc), [202]);
        await within(
          mine.waitFor(before + 1, AT_ONCE_MS),
          AT_ONCE_MS,
          'the other application’s entry',
        );
        assert.ok(performance.now() - published < AT_ONCE_MS);
        // The drips end at poll.push_timeout_seconds (3 s), not when the hub is done (60,000 bytes at 2 KB/s).
        const ended = await Promise.all(drips);
        assert.deepEqual(
          ended.map((e) => e.status),
          [408, 408, 408, 408],
        );
        // A push declared larger than the cap is refused unread, one that turns out larger is cut at the cap (413; the
        // connection is closed on a hub still sending, which may see it reset first), and the feed is polled instead.
        const polled = polls(hostile.path);
        const large = [
          await pushRaw(hostile.callback, { size: 14 << 20, declared: 14 << 20, secret }),
          await pushRaw(hostile.callback, { size: 2 << 20, secret }),
        ];
        for (const r of large) assert.ok([413, 0].includes(r.status), `status ${r.status}`);
        await until(() => polls(hostile.path) > polled, AT_ONCE_MS, 'the feed polled instead');
      });

      it('answers a push whose signature header is missing or malformed without reading its body', async () => {
        const { callback } = await pushedFeed(await own(startHub()));
        // 60,000 bytes at 2 KB/s would take 30 s to arrive: the answer comes first.
        for (const signature of ['sha256=not-hex', 'md5=00', ''])
          assert.equal(
            (
              await within(
                pushRaw(callback, { size: 60_000, chunkBytes: 100, dripMs: 50, signature }),
                AT_ONCE_MS,
                `push signed "${signature}" answered`,
              )
            ).status,
            202,
          );
      });

      it('keeps sending requests to other hubs while one hub never answers', async () => {
        const hub = await own(startHub());
        const slow = await startHub();
        slow.mode = 'hang';
        try {
          for (let i = 0; i < 3; i++) {
            const path = `/h${++n}.xml`;
            origin.set(path, {
              body: atom([1], slow.url, `${origin.url}${path}`),
              contentType: 'application/atom+xml',
            });
            const endpoint = await api('POST', '/v1/endpoints', {
              title: `S${n}`,
              url: receiver.url,
            });
            await api('POST', '/v1/subscriptions', {
              endpoint: endpoint.id,
              url: `${origin.url}${path}`,
            });
          }
          await until(() => slow.requests.length >= 2, AT_ONCE_MS, 'the slow hub asked');
          const started = performance.now();
          await pushedFeed(hub); // verified by the test hub while the slow one holds its requests
          assert.ok(performance.now() - started < AT_ONCE_MS);
          assert.equal(slow.requests.length, 2, 'two requests to one hub at a time');
        } finally {
          await slow.close();
        }
      });

      it('polls within a second when a renewal fails', async () => {
        const hub = await own(startHub());
        hub.grantSeconds = 4; // renewed at half of it, 2 s after verification
        hub.modes = ['accept']; // the subscription is verified; its renewal is refused
        hub.mode = 503;
        const { path, self } = await pushedFeed(hub);
        const requests = () => hub.requests.filter((r) => r.topic === self);
        await until(() => requests().length === 2, AT_ONCE_MS, 'the renewal');
        const renewal = requests()[1]!.at;
        await until(() => polls(path, renewal) > 0, AT_ONCE_MS, 'a poll after the failed renewal');
        const ms = performance.now() - renewal;
        console.log(`# websub fallback: polled ${ms.toFixed(0)} ms after the failed renewal`);
      });

      it('marks a lease that ends unrenewed expired and polls within a second', async () => {
        const hub = await own(startHub());
        hub.grantSeconds = SHORT_LEASE_SECONDS;
        hub.modes = ['accept']; // the subscription is verified; its renewal is accepted and never verified
        hub.mode = 'silent';
        const { feed, path } = await pushedFeed(hub);
        const verifiedAt = hub.verifications.at(-1)!.at;
        await until(
          async () => (await api('GET', `/v1/feeds/${feed}`)).push.status === 'expired',
          SHORT_LEASE_SECONDS * 1000 + AT_ONCE_MS,
          'expired',
          100,
        );
        // The baseline poll came before the verification: a poll after it is push's fallback.
        await until(() => polls(path, verifiedAt) > 0, AT_ONCE_MS, 'polled after the lapse');
        const lapse = performance.now() - verifiedAt - SHORT_LEASE_SECONDS * 1000;
        console.log(`# websub lapse: polled ${lapse.toFixed(0)} ms after the lease ended`);
        assert.ok(lapse < AT_ONCE_MS);
      });

      it('takes a denial of a verified subscription at any time: denied, polled at once, its callback refuses pushes with 410', async () => {
        const hub = await own(startHub());
        const { feed, path, callback } = await pushedFeed(hub);
        const secret = hub.subscriptions.get(callback)!.secret!;
        const polled = polls(path);
        assert.equal(await hub.denyLater(callback), 200);
        const deniedAt = performance.now();
        await until(() => polls(path) > polled, AT_ONCE_MS, 'polled after the denial');
        console.log(
          `# websub denial: polled ${(performance.now() - deniedAt).toFixed(0)} ms after it`,
        );
        assert.equal((await api('GET', `/v1/feeds/${feed}`)).push.status, 'denied');
        assert.equal((await pushRaw(callback, { size: 100, secret })).status, 410);
      });

      it('renews on a new callback, and the callback it replaced answers 410 so the hub drops it (§5.1.1, §7)', async () => {
        const hub = await own(startHub());
        hub.grantSeconds = 4; // renewed at half of it, 2 s after verification
        const { feed, self, callback } = await pushedFeed(hub);
        const renewed = () =>
          hub.verifications.filter(
            (v) => v.echoed && v.callback.includes(`/websub/${feed}/`) && v.callback !== callback,
          );
        await until(() => renewed().length === 1, AT_ONCE_MS, 'the renewal verified');
        assert.equal(hub.subscriptions.size >= 2, true, 'the hub holds both callbacks');
        const statuses = await hub.publish(self, atom([1, 2], hub.url, self));
        assert.deepEqual(statuses.sort(), [202, 410]);
        assert.ok(hub.gone.includes(callback));
        assert.ok(!hub.gone.includes(renewed()[0]!.callback));
      });

      it('clamps a longer lease to the one asked, echoes the challenge as inert text, and never logs a callback token', async () => {
        const hub = await own(startHub());
        hub.grantSeconds = 99_999_999;
        const { feed, callback } = await pushedFeed(hub);
        const view = await api('GET', `/v1/feeds/${feed}`);
        const lease = Date.parse(view.push.lease_expires_at) - Date.now();
        assert.ok(
          lease <= 864_000_000 && lease > 864_000_000 - 60_000,
          `lease ${lease} ms is the one asked`,
        );
        const verification = hub.verifications.find((v) => v.callback === callback)!;
        assert.deepEqual(
          [
            verification.headers['content-type'],
            verification.headers['x-content-type-options'],
            verification.headers['content-security-policy'],
          ],
          ['text/plain; charset=utf-8', 'nosniff', "default-src 'none'"],
        );
        const token = new URL(callback).pathname.split('/').at(-1)!;
        assert.ok(daemon.output().includes(`/websub/${feed}/`), 'the callback requests are logged');
        assert.ok(!daemon.output().includes(token), 'the token is never logged');
      });

      it('subscribes at the hub of the Link header alone, with no secret for a plain-http hub, whose pushes poll the feed', async () => {
        const [hub, plain, mine] = await Promise.all([
          own(startHub()),
          own(startHub({ tls: false })),
          own(startReceiver()),
        ]);
        const path = `/h${++n}.xml`;
        const fetched = `${origin.url}${path}`;
        // The document names another hub and self: with a hub in the Link header, neither is used.
        origin.set(path, {
          body: atom([1], hub.url, `${origin.url}/doc-self.xml`),
          contentType: 'application/atom+xml',
          headers: { link: `<${plain.url}>; rel="hub"` },
        });
        const endpoint = await api('POST', '/v1/endpoints', { title: `P${n}`, url: mine.url });
        const sub = await api('POST', '/v1/subscriptions', { endpoint: endpoint.id, url: fetched });
        await verified(plain, fetched);
        await until(
          async () => (await api('GET', `/v1/feeds/${sub.feed}`)).push.status === 'active',
          10_000,
          'push active',
        );
        const request = plain.requests[0]!;
        assert.equal(request.topic, fetched);
        assert.equal(request.form.has('hub.secret'), false);
        const polled = polls(path);
        const before = mine.deliveries.length;
        assert.deepEqual(await plain.publish(fetched, atom([1, 2], plain.url, fetched)), [202]);
        await until(() => polls(path) > polled, AT_ONCE_MS, 'the feed polled on the push');
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(mine.deliveries.length, before, 'the unsigned body itself is never taken');
      });
    },
  );
});

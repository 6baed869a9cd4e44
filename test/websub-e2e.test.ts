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
import { freePort, startDaemon, type Daemon } from './support/daemon.ts';
import { until, within } from './support/deadline.ts';
import { startOrigin, startReceiver, type Origin, type Receiver } from './support/servers.ts';
import { startHub, type Hub } from './support/websub-hub.ts';
import { apiCaller } from './support/subscriber.ts';

/** Polling is an hour apart: an entry at the receiver within this came by push. Not a speed assertion (the issue's
 *  "within one second" is measured and reported: make bench, and the latency line this test prints); the margin
 *  keeps the test true on a loaded machine. */
const PUSH_DEADLINE_MS = 5000;

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
    const db = openDatabase(join(dir, 'feedsub.db'));
    key = createKey(quietCtx(db, systemClock, defaultConfig()), 'websub', null).key;
    db.close();
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

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startApp, type RunningApp } from '../src/app.ts';
import { defaultConfig, withConfig } from '../src/config.ts';
import { silentLogger } from '../src/log.ts';
import { verifySignature } from '../src/webhook/sign.ts';
import { runCli } from './support/daemon.ts';
import { until } from './support/deadline.ts';
import {
  rss,
  startOrigin,
  startReceiver,
  type Delivery,
  type Origin,
  type Receiver,
} from './support/servers.ts';
import { createKey } from '../src/actions/keys.ts';

type Payload = {
  type: string;
  data: {
    sequence: number;
    subscription: { id: string; metadata: unknown };
    feed: { id: string; title: string | null };
    entries: {
      id: string;
      guid: string | null;
      title: string | null;
      url: string | null;
      published_at: string;
    }[];
    metadata: unknown;
  };
};

const atom = (entries: { id: string; title: string }[]) =>
  `<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>Atom test</title><id>urn:feed</id><updated>2026-01-01T00:00:00Z</updated><link href="http://example.com/"/>${entries.map((e) => `<entry><id>${e.id}</id><title>${e.title}</title><updated>2026-01-01T00:00:00Z</updated><link href="/posts/${e.id}"/><content type="html">&lt;p&gt;${e.title}&lt;/p&gt;</content></entry>`).join('')}</feed>`;
const rdf = (items: { about: string; title: string }[]) =>
  `<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"><channel rdf:about="http://example.com/"><title>RDF test</title><link>http://example.com/</link></channel>${items.map((i) => `<item rdf:about="${i.about}"><title>${i.title}</title><link>${i.about}</link></item>`).join('')}</rdf:RDF>`;
const jsonFeed = (items: { id: string; title: string }[]) =>
  JSON.stringify({
    version: 'https://jsonfeed.org/version/1.1',
    title: 'JSON test',
    home_page_url: 'http://example.com/',
    items: items.map((i) => ({
      id: i.id,
      title: i.title,
      content_html: `<p>${i.title}</p>`,
      url: `http://example.com/${i.id}`,
    })),
  });

describe('end to end: poll a local origin, deliver signed webhooks to a local receiver', () => {
  let origin: Origin;
  let receiver: Receiver;
  let app: RunningApp;
  let key: string;
  let dir: string;
  const secrets = new Map<string, string>(); // endpoint url → secret

  before(async () => {
    origin = await startOrigin();
    receiver = await startReceiver();
    dir = mkdtempSync(join(tmpdir(), 'feedsub-e2e-'));
    const config = withConfig(defaultConfig(), {
      storage: { data_dir: dir },
      server: { port: 0 },
      network: { allow_private: true },
      poll: { interval_seconds: 1, min_interval_seconds: 1, max_interval_seconds: 1 },
      delivery: { retry_schedule_seconds: [1, 1, 1] },
    });
    app = await startApp(config, silentLogger);
    key = (await createKey(app.ctx, 'e2e', null)).key;
  });
  after(async () => {
    await app.stop();
    await origin.close();
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function api(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: any }> {
    const res = await fetch(app.url + path, {
      method,
      headers: { authorization: key, 'content-type': 'application/json' },
      ...(body === undefined
        ? {}
        : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    return { status: res.status, json: res.status === 204 ? null : await res.json() };
  }

  async function subscribe(
    path: string,
    metadataText = 'null',
    to: Receiver = receiver,
  ): Promise<{ endpoint: string; subscription: string; feed: string; hookUrl: string }> {
    const hookUrl = `${to.url}/hook${path}`;
    const ep = await api('POST', '/v1/endpoints', { title: path, url: hookUrl });
    secrets.set(hookUrl, ep.json.secret);
    const sub = await api(
      'POST',
      '/v1/subscriptions',
      `{"endpoint":"${ep.json.id}","url":"${origin.url}${path}","metadata":${metadataText}}`,
    );
    assert.equal(sub.status, 201);
    return { endpoint: ep.json.id, subscription: sub.json.id, feed: sub.json.feed, hookUrl };
  }

  async function waitForFeed(
    feedId: string,
    test: (f: any) => boolean,
    what: string,
  ): Promise<any> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const f = (await api('GET', `/v1/feeds/${feedId}`)).json;
      if (test(f)) return f;
      if (Date.now() > deadline) throw new Error(`feed never ${what}: ${JSON.stringify(f)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  const deliveriesTo = (path: string): Delivery[] =>
    receiver.deliveries.filter(
      (d) => d.headers['x-path'] === path || d.body.includes(`"url":"${origin.url}${path}"`),
    );
  const polledTwiceMore = async (feedId: string) => {
    const start = (await api('GET', `/v1/feeds/${feedId}`)).json.last_polled_at;
    await waitForFeed(feedId, (f) => f.last_polled_at > start, 'polled again');
    const second = (await api('GET', `/v1/feeds/${feedId}`)).json.last_polled_at;
    await waitForFeed(feedId, (f) => f.last_polled_at > second, 'polled again');
  };

  const formats: [string, string, (n: number[]) => string, string][] = [
    [
      'RSS 2.0',
      '/rss.xml',
      (ns) => rss(ns.map((n) => ({ guid: `rss-${n}`, title: `RSS item ${n}` }))),
      'application/rss+xml',
    ],
    [
      'Atom 1.0',
      '/atom.xml',
      (ns) => atom(ns.map((n) => ({ id: `urn:atom:${n}`, title: `Atom entry ${n}` }))),
      'application/atom+xml',
    ],
    [
      'RDF / RSS 1.0',
      '/rdf.xml',
      (ns) =>
        rdf(ns.map((n) => ({ about: `http://example.com/rdf/${n}`, title: `RDF item ${n}` }))),
      'application/rdf+xml',
    ],
    [
      'JSON Feed 1.1',
      '/feed.json',
      (ns) => jsonFeed(ns.map((n) => ({ id: `json-${n}`, title: `JSON item ${n}` }))),
      'application/feed+json',
    ],
  ];
  // At once: each feed has its own path, endpoint and subscription, and each test waits on its own deliveries.
  describe('feeds on paths of their own', { concurrency: true }, () => {
    for (const [name, path, doc, contentType] of formats) {
      it(`${name}: the baseline sends nothing, then exactly the new entries arrive once, signed, with the metadata byte for byte`, async () => {
        origin.set(path, { body: doc([2, 1]), contentType });
        const metadataText = `{"customer":"c-42","weight":1.50,"nested":{"z":[1,2],"a":null}}`;
        const s = await subscribe(path, metadataText);
        const baseline = await waitForFeed(s.feed, (f) => f.status === 'active', 'became active');
        assert.equal(baseline.entry_count, 2);
        await polledTwiceMore(s.feed);
        assert.equal(deliveriesTo(path).length, 0, 'the baseline must send nothing');
        origin.set(path, { body: doc([4, 3, 2, 1]), contentType });
        await until(() => deliveriesTo(path).length >= 1, 10_000, `${name}: the new entries`);
        await polledTwiceMore(s.feed);
        const got = deliveriesTo(path);
        assert.equal(got.length, 1, 'exactly one event, no duplicates while the feed is unchanged');
        const d = got[0]!;
        assert.ok(
          verifySignature(secrets.get(s.hookUrl)!, d.id, Number(d.timestamp), d.body, d.signature),
          'signature verifies',
        );
        assert.ok(Math.abs(Number(d.timestamp) - Date.now() / 1000) < 30);
        const payload = JSON.parse(d.body) as Payload;
        assert.equal(payload.type, 'subscription.entries');
        assert.equal(payload.data.sequence, 1);
        assert.equal(payload.data.subscription.id, s.subscription);
        assert.equal(payload.data.feed.id, s.feed);
        assert.deepEqual(
          payload.data.entries.map((e) => e.title),
          [
            `${name.split(' ')[0]} ${name.startsWith('Atom') ? 'entry' : 'item'} 3`,
            `${name.split(' ')[0]} ${name.startsWith('Atom') ? 'entry' : 'item'} 4`,
          ].map((t) => t.replace('RDF / ', 'RDF ')),
        );
        assert.equal(
          d.body.split(metadataText).length - 1,
          2,
          'metadata appears byte for byte in data.subscription and data.metadata',
        );
        for (const e of payload.data.entries)
          assert.match(e.published_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      });
    }

    it('decodes a Latin-1 feed and delivers correct UTF-8', async () => {
      const path = '/latin1.xml';
      const doc = (titles: string[]) =>
        Buffer.from(
          `<?xml version="1.0" encoding="ISO-8859-1"?><rss version="2.0"><channel><title>Caf\u00e9</title>${titles.map((t) => `<item><guid>${encodeURIComponent(t)}</guid><title>${t}</title></item>`).join('')}</channel></rss>`,
          'latin1',
        );
      origin.set(path, { body: doc(['d\u00e9j\u00e0 vu']), contentType: 'application/xml' });
      const s = await subscribe(path);
      await waitForFeed(s.feed, (f) => f.status === 'active', 'became active');
      origin.set(path, {
        body: doc(['Gr\u00fc\u00dfe aus K\u00f6ln', 'd\u00e9j\u00e0 vu']),
        contentType: 'application/xml',
      });
      await until(() => deliveriesTo(path).length >= 1, 10_000, 'the Latin-1 entry');
      const d = deliveriesTo(path)[0]!;
      const payload = JSON.parse(d.body) as Payload;
      assert.equal(payload.data.entries[0]!.title, 'Gr\u00fc\u00dfe aus K\u00f6ln');
      assert.equal(payload.data.feed.title, 'Caf\u00e9');
    });

    it('records a broken feed on the feed with its error and keeps polling it', async () => {
      const lonely = await startOrigin(); // its own origin, so discovery's common-path guesses find nothing
      after(() => lonely.close());
      lonely.set('/broken.xml', {
        body: '<html><body>not a feed</body></html>',
        contentType: 'text/html',
      });
      const ep = await api('POST', '/v1/endpoints', {
        title: 'broken',
        url: `${receiver.url}/broken`,
      });
      const s = (
        await api('POST', '/v1/subscriptions', {
          endpoint: ep.json.id,
          url: `${lonely.url}/broken.xml`,
        })
      ).json;
      const f = await waitForFeed(s.feed, (x) => x.error_count >= 2, 'failed twice');
      assert.equal(f.status, 'error');
      assert.match(f.last_error, /no feed was found/);
      assert.equal(f.parse_error_count >= 2, true);
      assert.ok(f.next_poll_at);
    });
    it('retries a 500 and delivers on the next attempt with the same webhook-id and byte-identical body', async () => {
      // Its own receiver, so the 500 it is told to answer meets no other test's delivery.
      const own = await startReceiver();
      after(() => own.close());
      const path = '/retry.xml';
      origin.set(path, { body: rss([{ guid: 'a' }]) });
      const s = await subscribe(path, 'null', own);
      await waitForFeed(s.feed, (f) => f.status === 'active', 'became active');
      own.respond((d) => ({
        status: d.body.includes('"guid":"b"') && own.deliveries.length === 1 ? 500 : 200,
      }));
      origin.set(path, { body: rss([{ guid: 'b' }, { guid: 'a' }]) });
      await own.waitFor(2);
      const [first, second] = own.deliveries;
      assert.equal(first!.id, second!.id);
      assert.equal(first!.body, second!.body);
      assert.ok(Number(second!.timestamp) >= Number(first!.timestamp));
    });
  });
});

describe('network safety at connect time', () => {
  it('refuses to fetch a loopback feed when network.allow_private is false, recording why on the feed', async () => {
    const origin = await startOrigin();
    origin.set('/f.xml', { body: rss([{ guid: 'x' }]) });
    const dir = mkdtempSync(join(tmpdir(), 'feedsub-ssrf-'));
    try {
      // Subscribe while private addresses are allowed, then poll with them refused: the connect-time guard must stop it.
      const open = ['--data-dir', dir];
      const key = runCli(['keys', 'create', '--app', 'ssrf', ...open])
        .stdout.trim()
        .split('\n')
        .at(-1)!;
      const config = withConfig(defaultConfig(), {
        storage: { data_dir: dir },
        server: { port: 0 },
        network: { allow_private: true },
      });
      const app = await startApp(config, silentLogger);
      const ep = (await (
        await fetch(`${app.url}/v1/endpoints`, {
          method: 'POST',
          headers: { authorization: key, 'content-type': 'application/json' },
          body: JSON.stringify({ title: 'x', url: 'https://hooks.example.com/' }),
        })
      ).json()) as { id: string };
      const sub = (await (
        await fetch(`${app.url}/v1/subscriptions`, {
          method: 'POST',
          headers: { authorization: key, 'content-type': 'application/json' },
          body: JSON.stringify({ endpoint: ep.id, url: `${origin.url}/f.xml` }),
        })
      ).json()) as { feed: string };
      await app.workers.stop(1000);
      await app.stop();
      const before = origin.requests.length;
      const r = runCli(['poll', '--once', ...open], {
        FEEDSUB_NETWORK_ALLOW_PRIVATE: 'false',
        FEEDSUB_LOG_LEVEL: 'error',
      });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /feeds fetched 1, not modified 0, failed 1/);
      assert.equal(origin.requests.length, before, 'the origin must see no request');
      const strict = await startApp(
        withConfig(config, { network: { allow_private: false } }),
        silentLogger,
      );
      await strict.workers.stop(1000);
      const feed = (await (
        await fetch(`${strict.url}/v1/feeds/${sub.feed}`, { headers: { authorization: key } })
      ).json()) as { last_error: string; network_error_count: number };
      await strict.stop();
      assert.match(feed.last_error, /private or loopback/);
      assert.ok(feed.network_error_count >= 1);
    } finally {
      await origin.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

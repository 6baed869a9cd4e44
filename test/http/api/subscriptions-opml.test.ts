// OPML import (POST /v1/subscriptions/import) and export (GET /v1/subscriptions/export) through the API: a result per
// outline through the create action's rules, quotas mid-import, refusals of the whole document, and the round trip.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createSubscription } from '../../../src/actions/subscriptions.ts';
import { readOpmlFeeds } from '../../../src/feed/opml.ts';
import { makeWorld, type World } from '../../support/world.ts';

const opml = (outlines: string) =>
  `<?xml version="1.0"?>\n<opml version="2.0">\n<head><title>Mine</title></head>\n<body>\n${outlines}\n</body>\n</opml>\n`;
const feedOutlines = (urls: string[]) => urls.map((u) => `<outline xmlUrl="${u}"/>`).join('\n');

const count = async (w: World, table: string) =>
  (await w.ctx.db.column(`SELECT count(*) FROM ${table}`))[0] as number;

async function newEndpoint(w: World, key: string, title = 'Receiver'): Promise<string> {
  const res = await w.call('POST', '/v1/endpoints', {
    key,
    body: { title, url: 'https://hooks.example.com/in' },
  });
  assert.equal(res.status, 201, res.text);
  return res.body.id as string;
}

/** POSTs the document to the import route as JSON. */
const importInto = (w: World, key: string, endpoint: string, opml: string) =>
  w.call('POST', '/v1/subscriptions/import', { key, body: { endpoint, opml } });

/** The subscribed URLs of an endpoint, sorted. */
async function urlsOf(w: World, key: string, endpoint: string): Promise<string[]> {
  const res = await w.call('GET', `/v1/subscriptions?endpoint=${endpoint}&limit=200`, { key });
  return (res.body.data as { url: string }[]).map((s) => s.url).sort();
}

describe('POST /v1/subscriptions/import', () => {
  let w: World;
  let key: string;
  before(async () => {
    w = makeWorld({ network: { allow_private: false } });
    ({ key } = await w.key());
  });
  after(() => w.close());

  it('answers one result per feed outline, in document order, through the create rules', async () => {
    const endpoint = await newEndpoint(w, key);
    const before = await w.call('POST', '/v1/subscriptions', {
      key,
      body: { endpoint, url: 'https://had.example.com/feed' },
    });
    const doc = opml(`
<outline text="Tech">
  <outline text="A &amp; B" xmlUrl="https://a.example.com/feed?x=1&amp;y=2"/>
  <outline text="Nested">
    <outline title="Had" text="had" xmlUrl="HTTPS://HAD.example.com:443/feed#top"/>
  </outline>
</outline>
<outline type="rss" text="No URL"/>
<outline text="FTP" xmlUrl="ftp://files.example.com/feed"/>
<outline text="Local" xmlUrl="http://127.0.0.1:8080/feed"/>
<outline text="Private" xmlUrl="https://user:secret@private.example.com/feed"/>
<outline text="A again" xmlUrl="https://a.example.com/feed?x=1&amp;y=2"/>`);
    const res = await importInto(w, key, endpoint, doc);
    assert.equal(res.status, 200, res.text);
    const results = res.body.results as Record<string, any>[];
    assert.deepEqual(
      results.map((r) => [r.url, r.title, r.status]),
      [
        ['https://a.example.com/feed?x=1&y=2', 'A & B', 'created'],
        ['HTTPS://HAD.example.com:443/feed#top', 'Had', 'exists'],
        [null, 'No URL', 'invalid'],
        ['ftp://files.example.com/feed', 'FTP', 'invalid'],
        ['http://127.0.0.1:8080/feed', 'Local', 'refused'],
        ['https://private.example.com/feed', 'Private', 'created'],
        ['https://a.example.com/feed?x=1&y=2', 'A again', 'exists'],
      ],
    );
    assert.deepEqual(res.body.counts, { created: 2, exists: 2, invalid: 2, refused: 1 });
    assert.equal(results[1]!.subscription, before.body.id, 'exists names the subscription');
    assert.equal(results[6]!.subscription, results[0]!.subscription, 'a repeat names the first');
    assert.deepEqual(results[2]!.error.errors, [
      { path: 'url', message: 'the outline has no xmlUrl' },
    ]);
    assert.equal(results[3]!.error.status, 400);
    assert.deepEqual(results[3]!.error.errors, [
      { path: 'url', message: 'must be an absolute http or https URL' },
    ]);
    assert.equal(results[4]!.error.status, 400);
    assert.match(results[4]!.error.errors[0].message, /private, loopback or reserved/);
    assert.doesNotMatch(res.text, /secret/, 'credentials are used, never shown back');
    const created = await w.call('GET', `/v1/subscriptions/${results[5]!.subscription}`, { key });
    assert.equal(created.body.url, 'https://private.example.com/feed');
    assert.deepEqual(await urlsOf(w, key, endpoint), [
      'https://a.example.com/feed?x=1&y=2',
      'https://had.example.com/feed',
      'https://private.example.com/feed',
    ]);
    assert.ok(w.nudges.poller > 0, 'the poller is woken for the new feeds');
  });

  it('gives every subscription it creates the metadata exactly as sent', async () => {
    const endpoint = await newEndpoint(w, key);
    const doc = JSON.stringify(opml(feedOutlines(['https://m1.example/', 'https://m2.example/'])));
    const raw = `{"endpoint":"${endpoint}","opml":${doc},"metadata":{"z":1.50,"list":"reading"}}`;
    const res = await w.call('POST', '/v1/subscriptions/import', { key, body: raw });
    assert.equal(res.status, 200, res.text);
    for (const r of res.body.results) {
      const got = await w.call('GET', `/v1/subscriptions/${r.subscription}`, { key });
      assert.ok(got.text.includes('"metadata":{"z":1.50,"list":"reading"}'), got.text);
    }
  });

  it('refuses a document that cannot be read, naming the field and line, and imports nothing of it', async () => {
    const endpoint = await newEndpoint(w, key);
    const before = await count(w, 'subscriptions');
    const cut = opml(feedOutlines(['https://c1.example/', 'https://c2.example/'])).slice(0, -20);
    const res = await importInto(w, key, endpoint, cut);
    assert.equal(res.status, 400, res.text);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    assert.deepEqual(res.body.errors, [
      { path: 'opml', message: 'ends before <body> opened on line 4 is closed: is it cut short?' },
    ]);
    const rss = await w.call('POST', '/v1/subscriptions/import', {
      key,
      body: { endpoint, opml: '<rss version="2.0"><channel/></rss>' },
    });
    assert.equal(rss.status, 400);
    assert.match(rss.body.errors[0].message, /root element is <rss>/);
    assert.equal(await count(w, 'subscriptions'), before);
  });

  it('refuses more than 1,000 feeds as a whole, before creating any', async () => {
    const endpoint = await newEndpoint(w, key);
    const before = await count(w, 'subscriptions');
    const urls = Array.from({ length: 1001 }, (_, i) => `https://many${i}.example/`);
    const res = await w.call('POST', '/v1/subscriptions/import', {
      key,
      body: { endpoint, opml: opml(feedOutlines(urls)) },
    });
    assert.equal(res.status, 400, res.text);
    assert.match(res.body.errors[0].message, /lists more than 1000 feeds/);
    assert.equal(await count(w, 'subscriptions'), before);
  });

  it('names every invalid field at once, and answers 404 for an endpoint of another application', async () => {
    const res = await w.call('POST', '/v1/subscriptions/import', {
      key,
      body: { endpoint: 'nope', opml: '', metadata: [1], extra: true },
    });
    assert.equal(res.status, 400);
    assert.deepEqual(res.body.errors.map((e: { path: string }) => e.path).sort(), [
      'endpoint',
      'extra',
      'metadata',
      'opml',
    ]);
    const big = await w.call('POST', '/v1/subscriptions/import', {
      key,
      body: {
        endpoint: await newEndpoint(w, key),
        opml: opml(feedOutlines(['https://big.example/'])),
        metadata: { pad: 'x'.repeat(17 * 1024) },
      },
    });
    assert.equal(big.status, 400);
    assert.equal(big.body.errors[0].path, 'metadata');
    const other = await w.key();
    const foreign = await newEndpoint(w, other.key);
    const res404 = await w.call('POST', '/v1/subscriptions/import', {
      key,
      body: { endpoint: foreign, opml: opml(feedOutlines(['https://f.example/'])) },
    });
    assert.equal(res404.status, 404);
    assert.deepEqual(res404.body.errors, [
      { path: 'endpoint', message: 'no endpoint with this id' },
    ]);
    const xml = await w.call('POST', '/v1/subscriptions/import', {
      key,
      body: opml(''),
      headers: { 'content-type': 'text/x-opml' },
    });
    assert.equal(xml.status, 415);
  });

  it('replays the first answer for the same Idempotency-Key and body', async () => {
    const endpoint = await newEndpoint(w, key);
    const body = { endpoint, opml: opml(feedOutlines(['https://idem.example/'])) };
    const headers = { 'idempotency-key': 'import-1' };
    const first = await w.call('POST', '/v1/subscriptions/import', { key, body, headers });
    const again = await w.call('POST', '/v1/subscriptions/import', { key, body, headers });
    assert.equal(first.body.results[0].status, 'created');
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.text, first.text);
  });
});

describe('POST /v1/subscriptions/import against quotas', () => {
  it('refuses every later valid outline with the quota met, keeps invalid ones invalid, creates nothing more', async () => {
    const w = makeWorld({ quotas: { subscriptions_per_application: 3 } });
    try {
      const { key } = await w.key();
      const endpoint = await newEndpoint(w, key);
      await w.call('POST', '/v1/subscriptions', {
        key,
        body: { endpoint, url: 'https://q0.example/' },
      });
      const doc = opml(
        feedOutlines([
          'https://q1.example/',
          'https://q2.example/',
          'https://q3.example/',
          'not a url',
          'https://q0.example/',
        ]),
      );
      const res = await importInto(w, key, endpoint, doc);
      assert.equal(res.status, 200, res.text);
      const results = res.body.results as Record<string, any>[];
      assert.deepEqual(
        results.map((r) => r.status),
        ['created', 'created', 'refused', 'invalid', 'refused'],
      );
      for (const r of [results[2]!, results[4]!]) {
        assert.equal(r.error.status, 429);
        assert.equal(r.error.quota, 'subscriptions_per_application');
        assert.equal(r.error.limit, 3);
        assert.equal(r.error.retry_after_seconds, 3600);
      }
      assert.equal(await count(w, 'subscriptions'), 3);
    } finally {
      await w.close();
    }
  });

  it('stops at the new-feed-URL quota even for a feed the application already has', async () => {
    const w = makeWorld({ quotas: { new_feed_urls_per_hour: 2 } });
    try {
      const { key } = await w.key();
      const [one, two] = [await newEndpoint(w, key), await newEndpoint(w, key)];
      await w.call('POST', '/v1/subscriptions', {
        key,
        body: { endpoint: one, url: 'https://n0.example/' },
      });
      const doc = opml(
        feedOutlines(['https://n1.example/', 'https://n2.example/', 'https://n0.example/']),
      );
      const res = await importInto(w, key, two, doc);
      assert.deepEqual(
        res.body.results.map((r: { status: string }) => r.status),
        ['created', 'refused', 'refused'],
      );
      assert.equal(res.body.results[2].error.quota, 'new_feed_urls_per_hour');
    } finally {
      await w.close();
    }
  });
});

describe('GET /v1/subscriptions/export', () => {
  let w: World;
  let key: string;
  before(async () => {
    w = makeWorld({ quotas: { new_feed_urls_per_hour: 0 } });
    ({ key } = await w.key());
  });
  after(() => w.close());

  it('round trip: what one endpoint exports, imported into another, gives the same set of URLs', async () => {
    const [from, to] = [await newEndpoint(w, key, 'From'), await newEndpoint(w, key, 'To')];
    const urls = [
      'https://rt1.example.com/feed.xml',
      'https://rt2.example.com/atom?tag=a&sort="new"',
      'http://rt3.example.com:8080/rss',
      'https://user:pw@rt4.example.com/private',
    ];
    for (const url of urls)
      assert.equal(
        (await w.call('POST', '/v1/subscriptions', { key, body: { endpoint: from, url } })).status,
        201,
      );
    const exported = await w.call('GET', `/v1/subscriptions/export?endpoint=${from}`, { key });
    assert.equal(exported.status, 200);
    const imported = await w.call('POST', '/v1/subscriptions/import', {
      key,
      body: { endpoint: to, opml: exported.text },
    });
    assert.equal(imported.body.counts.created, urls.length, imported.text);
    assert.deepEqual(await urlsOf(w, key, to), await urlsOf(w, key, from));
  });

  it("carries each subscription's filter through export and import, and refuses an outline's bad filter by its rule", async () => {
    const [from, to] = [await newEndpoint(w, key, 'Filtered'), await newEndpoint(w, key, 'Into')];
    const filter = {
      keep: [{ field: 'title', contains: 'Q&A "live"' }],
      block: [{ field: 'category', matches: '^(ads|sponsored)$' }],
    };
    const url = 'https://filtered.example.com/feed.xml';
    assert.equal(
      (await w.call('POST', '/v1/subscriptions', { key, body: { endpoint: from, url, filter } }))
        .status,
      201,
    );
    const exported = await w.call('GET', `/v1/subscriptions/export?endpoint=${from}`, { key });
    assert.deepEqual(JSON.parse(readOpmlFeeds(exported.text, 10)[0]!.filter!), filter);
    const imported = await w.call('POST', '/v1/subscriptions/import', {
      key,
      body: { endpoint: to, opml: exported.text },
    });
    assert.equal(imported.body.counts.created, 1, imported.text);
    const made = await w.call('GET', `/v1/subscriptions/${imported.body.results[0].subscription}`, {
      key,
    });
    assert.deepEqual(made.body.filter, filter);

    const outline = (n: number, attr: string) =>
      `<outline type="rss" text="x" xmlUrl="https://bad.example.com/${n}" feedsubFilter="${attr}"/>`;
    const badPattern = JSON.stringify({ keep: [{ field: 'title', matches: '(a' }] }).replaceAll(
      '"',
      '&quot;',
    );
    const refused = await w.call('POST', '/v1/subscriptions/import', {
      key,
      body: {
        endpoint: to,
        opml: `<?xml version="1.0"?><opml version="2.0"><body>${outline(1, badPattern)}${outline(2, 'not json')}</body></opml>`,
      },
    });
    assert.equal(refused.status, 200, refused.text);
    assert.deepEqual(
      refused.body.results.map((r: { status: string; error: { errors: { path: string }[] } }) => [
        r.status,
        r.error.errors[0]!.path,
      ]),
      [
        ['invalid', 'filter.keep[0].matches'],
        ['invalid', 'filter'],
      ],
    );
  });

  it('writes OPML 2.0: a folder per endpoint, feed titles, paused ones marked, never credentials', async () => {
    const { key } = await w.key();
    const [a, b] = [await newEndpoint(w, key, 'Alpha & co'), await newEndpoint(w, key, 'Beta')];
    await newEndpoint(w, key, 'Empty');
    const sub = async (endpoint: string, url: string) =>
      (await w.call('POST', '/v1/subscriptions', { key, body: { endpoint, url } })).body;
    const titled = await sub(a, 'https://titled.example/feed');
    await w.ctx.db.run('UPDATE feeds SET title = ?, site_url = ? WHERE id = ?', [
      'The <Titled> Blog',
      'https://titled.example/',
      titled.feed,
    ]);
    const paused = await sub(b, 'https://bob:hunter2@paused.example/feed');
    await w.call('PATCH', `/v1/subscriptions/${paused.id}`, { key, body: { status: 'paused' } });
    const res = await w.call('GET', '/v1/subscriptions/export', { key });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/x-opml; charset=utf-8');
    assert.match(
      res.headers.get('content-disposition') ?? '',
      /^attachment; filename="[^"]+\.opml"$/,
    );
    assert.match(res.text, /^<\?xml version="1.0" encoding="UTF-8"\?>\n<opml version="2.0">/);
    assert.match(res.text, /<dateCreated>Thu, 01 Jan 2026 00:00:00 GMT<\/dateCreated>/);
    assert.match(
      res.text,
      /<outline text="Alpha &amp; co">\n\s*<outline type="rss" text="The &lt;Titled&gt; Blog" title="The &lt;Titled&gt; Blog" xmlUrl="https:\/\/titled.example\/feed" htmlUrl="https:\/\/titled.example\/"\/>\n\s*<\/outline>/,
    );
    assert.match(
      res.text,
      /<outline text="Beta">\n\s*<outline type="rss" text="https:\/\/paused.example\/feed" title="https:\/\/paused.example\/feed" xmlUrl="https:\/\/paused.example\/feed" feedsubStatus="paused"\/>/,
    );
    assert.doesNotMatch(res.text, /Empty/, 'an endpoint without subscriptions has no folder');
    assert.doesNotMatch(res.text, /bob|hunter2/);
    assert.deepEqual(
      readOpmlFeeds(res.text, 1000).map((f) => f.xmlUrl),
      ['https://paused.example/feed', 'https://titled.example/feed'],
    );
  });

  it("exports every subscription of a long list, page after page, and never another application's", async () => {
    const { key, applicationId } = await w.key();
    const endpoint = await newEndpoint(w, key);
    const urls = Array.from(
      { length: 450 },
      (_, i) => `https://long.example/${String(i).padStart(3, '0')}`,
    );
    for (const url of urls) await createSubscription(w.ctx, applicationId, { endpoint, url });
    const res = await w.call('GET', '/v1/subscriptions/export', { key });
    assert.deepEqual(
      readOpmlFeeds(res.text, 1000).map((f) => f.xmlUrl),
      urls,
    );
    const other = await w.call('GET', '/v1/subscriptions/export', { key: (await w.key()).key });
    assert.equal(other.status, 200);
    assert.deepEqual(readOpmlFeeds(other.text, 1000), []);
  });

  it("answers 404 for another application's endpoint and 400 for a malformed one, before any OPML", async () => {
    const foreign = await newEndpoint(w, (await w.key()).key);
    const res = await w.call('GET', `/v1/subscriptions/export?endpoint=${foreign}`, { key });
    assert.equal(res.status, 404);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    const bad = await w.call('GET', '/v1/subscriptions/export?endpoint=xyz', { key });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.errors, [
      { path: 'endpoint', message: 'must be an id of 24 hex characters' },
    ]);
    assert.equal((await w.call('GET', '/v1/subscriptions/export')).status, 401);
  });
});

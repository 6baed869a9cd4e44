import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeWorld, type World } from '../../support/world.ts';

describe('/v1/subscriptions', () => {
  let w: World;
  let key: string;
  let applicationId: string;
  let endpoint: string;
  before(async () => {
    w = makeWorld();
    ({ key, applicationId } = await w.key('acme'));
    endpoint = (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'Prod', url: 'https://hooks.example.com/' },
      })
    ).body.id;
  });
  after(() => w.close());

  it("creates a subscription with 201 and the seed's exact fields, and wakes the poller", async () => {
    const nudges = w.nudges.poller;
    const res = await w.call('POST', '/v1/subscriptions', {
      key,
      body: {
        endpoint,
        url: 'https://blog.example.com/feed.xml',
        metadata: { user: 42, tags: ['a'] },
      },
    });
    assert.equal(res.status, 201);
    for (const field of ['id', 'application', 'url', 'feed', 'endpoint', 'metadata', 'created_at'])
      assert.ok(field in res.body, field);
    assert.equal(res.body.application, applicationId);
    assert.equal(res.body.endpoint, endpoint);
    assert.equal(res.body.url, 'https://blog.example.com/feed.xml');
    assert.deepEqual(res.body.metadata, { user: 42, tags: ['a'] });
    assert.match(res.body.feed, /^[0-9a-f]{24}$/);
    assert.equal(res.body.status, 'active');
    assert.equal(w.nudges.poller, nudges + 1);
  });

  it('returns metadata exactly as given: key order and number spelling kept, absent as null', async () => {
    const raw = `{"endpoint":"${endpoint}","url":"https://exact.example.com/feed","metadata":{"z":1.50,"10":true,"a":{"n":1e3,"s":"\\u00e9 \\"q\\""}}}`;
    const res = await w.call('POST', '/v1/subscriptions', { key, body: raw });
    assert.equal(res.status, 201);
    assert.ok(
      res.text.includes('"metadata":{"z":1.50,"10":true,"a":{"n":1e3,"s":"\\u00e9 \\"q\\""}}'),
      res.text,
    );
    const got = await w.call('GET', `/v1/subscriptions/${res.body.id}`, { key });
    assert.ok(
      got.text.includes('"metadata":{"z":1.50,"10":true,"a":{"n":1e3,"s":"\\u00e9 \\"q\\""}}'),
    );
    const none = await w.call('POST', '/v1/subscriptions', {
      key,
      body: { endpoint, url: 'https://none.example.com/feed' },
    });
    assert.equal(none.body.metadata, null);
  });

  it('shares one feed record for equivalent URLs across endpoints and applications', async () => {
    const other = await w.key('other');
    const otherEp = (
      await w.call('POST', '/v1/endpoints', {
        key: other.key,
        body: { title: 'O', url: 'https://o.example.com/' },
      })
    ).body.id;
    const a = await w.call('POST', '/v1/subscriptions', {
      key,
      body: { endpoint, url: 'HTTPS://Shared.Example.com:443/feed#top' },
    });
    const b = await w.call('POST', '/v1/subscriptions', {
      key: other.key,
      body: { endpoint: otherEp, url: 'https://shared.example.com/feed' },
    });
    assert.equal(a.body.url, 'https://shared.example.com/feed');
    assert.equal(a.body.feed, b.body.feed);
  });

  it('answers 409 with the existing id for the same endpoint and normalized URL', async () => {
    const first = await w.call('POST', '/v1/subscriptions', {
      key,
      body: { endpoint, url: 'https://dup.example.com/feed' },
    });
    const again = await w.call('POST', '/v1/subscriptions', {
      key,
      body: { endpoint, url: 'https://DUP.example.com/feed#x' },
    });
    assert.equal(again.status, 409);
    assert.equal(again.body.existing_id, first.body.id);
  });

  it('keeps credentials in the URL out of every response and off shared records', async () => {
    const res = await w.call('POST', '/v1/subscriptions', {
      key,
      body: { endpoint, url: 'https://user:s3cret@private.example.com/feed' },
    });
    assert.equal(res.status, 201);
    assert.ok(!res.text.includes('s3cret'));
    const plain = await w.call('POST', '/v1/subscriptions', {
      key,
      body: {
        endpoint: (
          await w.call('POST', '/v1/endpoints', {
            key,
            body: { title: 'x', url: 'https://x.example/' },
          })
        ).body.id,
        url: 'https://private.example.com/feed',
      },
    });
    assert.notEqual(
      plain.body.feed,
      res.body.feed,
      'a subscription without the credentials must not share the private feed',
    );
    const feed = await w.call('GET', `/v1/feeds/${res.body.feed}`, { key });
    assert.ok(!feed.text.includes('s3cret'));
  });

  it('lists, filters by endpoint, pauses, moves and deletes', async () => {
    const ep2 = (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'Test', url: 'https://test.example.com/' },
      })
    ).body.id;
    const sub = (
      await w.call('POST', '/v1/subscriptions', {
        key,
        body: { endpoint: ep2, url: 'https://move.example.com/feed', metadata: { a: 1 } },
      })
    ).body;
    const filtered = await w.call('GET', `/v1/subscriptions?endpoint=${ep2}`, { key });
    assert.deepEqual(
      filtered.body.data.map((s: { id: string }) => s.id),
      [sub.id],
    );
    const paused = await w.call('PATCH', `/v1/subscriptions/${sub.id}`, {
      key,
      body: { status: 'paused', metadata: { b: [2] } },
    });
    assert.equal(paused.status, 200);
    assert.equal(paused.body.status, 'paused');
    assert.deepEqual(paused.body.metadata, { b: [2] });
    const moved = await w.call('PATCH', `/v1/subscriptions/${sub.id}`, { key, body: { endpoint } });
    assert.equal(moved.body.endpoint, endpoint);
    const cleared = await w.call('PATCH', `/v1/subscriptions/${sub.id}`, {
      key,
      body: { metadata: null },
    });
    assert.equal(cleared.body.metadata, null);
    assert.equal((await w.call('DELETE', `/v1/subscriptions/${sub.id}`, { key })).status, 204);
    assert.equal((await w.call('GET', `/v1/subscriptions/${sub.id}`, { key })).status, 404);
    assert.equal((await w.call('DELETE', `/v1/subscriptions/${sub.id}`, { key })).status, 404);
  });

  it('answers 404 naming the endpoint field for an unknown endpoint id', async () => {
    const res = await w.call('POST', '/v1/subscriptions', {
      key,
      body: { endpoint: '0'.repeat(24), url: 'https://x.example.com/feed' },
    });
    assert.equal(res.status, 404);
    assert.equal(res.body.errors[0].path, 'endpoint');
  });

  const invalid: [string, unknown, string[]][] = [
    ['an empty object', {}, ['endpoint', 'url']],
    ['a malformed endpoint id', { endpoint: 'abc', url: 'https://x.example/' }, ['endpoint']],
    [
      'a feed URL that is not http(s)',
      { endpoint: 'a'.repeat(24), url: 'file:///etc/passwd' },
      ['url'],
    ],
    [
      'metadata that is an array',
      { endpoint: 'a'.repeat(24), url: 'https://x.example/', metadata: [1] },
      ['metadata'],
    ],
    [
      'metadata that is a string',
      { endpoint: 'a'.repeat(24), url: 'https://x.example/', metadata: 'x' },
      ['metadata'],
    ],
    [
      'metadata over 16 KiB',
      { endpoint: 'a'.repeat(24), url: 'https://x.example/', metadata: { big: 'x'.repeat(17000) } },
      ['metadata'],
    ],
    [
      'metadata with a NUL character (\\u0000) in a string',
      {
        endpoint: 'a'.repeat(24),
        url: 'https://x.example/',
        metadata: { note: { a: ['x\u0000'] } },
      },
      ['metadata'],
    ],
    [
      'metadata with half a surrogate pair in a member name',
      { endpoint: 'a'.repeat(24), url: 'https://x.example/', metadata: { '\ud800': 1 } },
      ['metadata'],
    ],
    [
      'an unknown field',
      { endpoint: 'a'.repeat(24), url: 'https://x.example/', secret: 1 },
      ['secret'],
    ],
    [
      'a bad status on create',
      { endpoint: 'a'.repeat(24), url: 'https://x.example/', status: 'paused' },
      ['status'],
    ],
  ];
  for (const [name, body, paths] of invalid) {
    it(`answers 400 naming each bad field for ${name}`, async () => {
      const res = await w.call('POST', '/v1/subscriptions', { key, body });
      assert.equal(res.status, 400, res.text);
      assert.deepEqual(
        res.body.errors.map((e: { path: string }) => e.path).sort(),
        [...paths].sort(),
      );
    });
  }

  it('answers 400 for a bad PATCH status and a bad endpoint filter', async () => {
    const sub = (
      await w.call('POST', '/v1/subscriptions', {
        key,
        body: { endpoint, url: 'https://patch.example.com/feed' },
      })
    ).body;
    const res = await w.call('PATCH', `/v1/subscriptions/${sub.id}`, {
      key,
      body: { status: 'deleted' },
    });
    assert.equal(res.status, 400);
    assert.equal(res.body.errors[0].path, 'status');
    assert.equal((await w.call('GET', '/v1/subscriptions?endpoint=nope', { key })).status, 400);
  });

  it('refuses a loopback feed URL when private addresses are not allowed', async () => {
    const strict = makeWorld({ network: { allow_private: false } });
    const k = (await strict.key()).key;
    const ep = (
      await strict.call('POST', '/v1/endpoints', {
        key: k,
        body: { title: 'x', url: 'https://x.example/' },
      })
    ).body.id;
    for (const url of [
      'http://127.0.0.1:8080/feed',
      'http://localhost/feed',
      'http://[::1]/feed',
      'http://10.0.0.5/feed',
      'http://169.254.169.254/latest',
    ]) {
      const res = await strict.call('POST', '/v1/subscriptions', {
        key: k,
        body: { endpoint: ep, url },
      });
      assert.equal(res.status, 400, url);
      assert.match(res.body.errors[0].message, /private|loopback/);
    }
    await strict.close();
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeWorld, type World } from '../../support/world.ts';

describe('/v1/endpoints', () => {
  let w: World;
  let key: string;
  before(async () => {
    w = makeWorld();
    key = (await w.key('acme')).key;
  });
  after(() => w.close());

  it('creates an endpoint with 201 and exactly the contract fields plus its whsec_ secret', async () => {
    const res = await w.call('POST', '/v1/endpoints', {
      key,
      body: { title: 'Production', url: 'https://hooks.example.com/feedsub' },
    });
    assert.equal(res.status, 201);
    assert.match(res.body.id, /^[0-9a-f]{24}$/);
    assert.equal(res.body.title, 'Production');
    assert.equal(res.body.url, 'https://hooks.example.com/feedsub');
    assert.match(res.body.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
    assert.equal(res.body.created_at, '2026-01-01T00:00:00.000Z');
    assert.equal(Buffer.from(res.body.secret.slice(6), 'base64').length, 24);
  });

  it('reads, lists, updates and deletes an endpoint, never showing the secret outside /secret', async () => {
    const made = (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'A', url: 'https://a.example.com/' },
      })
    ).body;
    const got = await w.call('GET', `/v1/endpoints/${made.id}`, { key });
    assert.equal(got.status, 200);
    assert.equal(got.body.secret, undefined);
    assert.equal(got.body.status, 'active');
    const secret = await w.call('GET', `/v1/endpoints/${made.id}/secret`, { key });
    assert.equal(secret.body.secret, made.secret);
    const patched = await w.call('PATCH', `/v1/endpoints/${made.id}`, {
      key,
      body: { title: 'B' },
    });
    assert.equal(patched.status, 200);
    assert.equal(patched.body.title, 'B');
    assert.equal(patched.body.url, 'https://a.example.com/');
    const listed = await w.call('GET', '/v1/endpoints', { key });
    assert.ok(listed.body.data.some((e: { id: string }) => e.id === made.id));
    assert.ok(listed.body.data.every((e: { secret?: string }) => e.secret === undefined));
    assert.equal((await w.call('DELETE', `/v1/endpoints/${made.id}`, { key })).status, 204);
    assert.equal((await w.call('GET', `/v1/endpoints/${made.id}`, { key })).status, 404);
  });

  it('disables and re-enables an endpoint with PATCH status, showing the reason while disabled', async () => {
    const made = (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'A', url: 'https://a.example.com/' },
      })
    ).body;
    const off = await w.call('PATCH', `/v1/endpoints/${made.id}`, {
      key,
      body: { status: 'disabled' },
    });
    assert.equal(off.body.status, 'disabled');
    assert.equal(off.body.disabled_reason, 'disabled by the application');
    const before = w.nudges.deliverer;
    const on = await w.call('PATCH', `/v1/endpoints/${made.id}`, {
      key,
      body: { status: 'active' },
    });
    assert.equal(on.body.status, 'active');
    assert.equal(on.body.disabled_reason, null);
    assert.equal(w.nudges.deliverer, before + 1);
  });

  it('keeps filter_types: null (every type) by default, a list when given, and null again when PATCHed to null', async () => {
    const plain = await w.call('POST', '/v1/endpoints', {
      key,
      body: { title: 'All', url: 'https://a.example.com/' },
    });
    assert.equal(plain.body.filter_types, null);
    const some = await w.call('POST', '/v1/endpoints', {
      key,
      body: {
        title: 'Health',
        url: 'https://a.example.com/',
        filter_types: ['feed.gone', 'feed.failing'],
      },
    });
    assert.equal(some.status, 201);
    assert.deepEqual(some.body.filter_types, ['feed.gone', 'feed.failing']);
    const read = await w.call('GET', `/v1/endpoints/${some.body.id}`, { key });
    assert.deepEqual(read.body.filter_types, ['feed.gone', 'feed.failing']);
    const renamed = await w.call('PATCH', `/v1/endpoints/${some.body.id}`, {
      key,
      body: { title: 'Renamed' },
    });
    assert.deepEqual(renamed.body.filter_types, ['feed.gone', 'feed.failing'], 'left as it was');
    const narrowed = await w.call('PATCH', `/v1/endpoints/${some.body.id}`, {
      key,
      body: { filter_types: ['subscription.entries'] },
    });
    assert.deepEqual(narrowed.body.filter_types, ['subscription.entries']);
    const cleared = await w.call('PATCH', `/v1/endpoints/${some.body.id}`, {
      key,
      body: { filter_types: null },
    });
    assert.equal(cleared.body.filter_types, null);
    const bad = await w.call('PATCH', `/v1/endpoints/${some.body.id}`, {
      key,
      body: { filter_types: ['feed.moved', 'entries'] },
    });
    assert.equal(bad.status, 400);
    assert.deepEqual(
      bad.body.errors.map((e: { path: string }) => e.path),
      ['filter_types[1]'],
    );
    assert.match(bad.body.errors[0].message, /feed\.identity_hold/, 'names the known types');
  });

  it('refuses to delete an endpoint that subscriptions use, with 409', async () => {
    const ep = (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'A', url: 'https://a.example.com/' },
      })
    ).body;
    await w.call('POST', '/v1/subscriptions', {
      key,
      body: { endpoint: ep.id, url: 'https://blog.example.com/feed' },
    });
    const res = await w.call('DELETE', `/v1/endpoints/${ep.id}`, { key });
    assert.equal(res.status, 409);
    assert.equal(res.body.subscriptions, 1);
  });

  it('pages the list newest first with limit and after', async () => {
    const solo = makeWorld();
    const k = (await solo.key()).key;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      solo.clock.advance(1000);
      ids.push(
        (
          await solo.call('POST', '/v1/endpoints', {
            key: k,
            body: { title: `E${i}`, url: `https://e${i}.example.com/` },
          })
        ).body.id,
      );
    }
    const first = await solo.call('GET', '/v1/endpoints?limit=2', { key: k });
    assert.deepEqual(
      first.body.data.map((e: { id: string }) => e.id),
      [ids[4], ids[3]],
    );
    assert.equal(first.body.next, ids[3]);
    const second = await solo.call('GET', `/v1/endpoints?limit=2&after=${first.body.next}`, {
      key: k,
    });
    assert.deepEqual(
      second.body.data.map((e: { id: string }) => e.id),
      [ids[2], ids[1]],
    );
    const last = await solo.call('GET', `/v1/endpoints?limit=2&after=${second.body.next}`, {
      key: k,
    });
    assert.deepEqual(
      last.body.data.map((e: { id: string }) => e.id),
      [ids[0]],
    );
    assert.equal(last.body.next, null);
    await solo.close();
  });

  const invalid: [string, unknown, string[]][] = [
    ['an empty body object', {}, ['title', 'url']],
    ['a non-http URL', { title: 'x', url: 'ftp://example.com/' }, ['url']],
    ['a relative URL', { title: 'x', url: '/hook' }, ['url']],
    ['a too long URL', { title: 'x', url: 'https://example.com/' + 'a'.repeat(2048) }, ['url']],
    ['an empty title', { title: '  ', url: 'https://example.com/' }, ['title']],
    ['a 201-character title', { title: 'x'.repeat(201), url: 'https://example.com/' }, ['title']],
    ['wrong types', { title: 5, url: ['x'] }, ['title', 'url']],
    ['an unknown field', { title: 'x', url: 'https://example.com/', secret: 'mine' }, ['secret']],
    ['an array body', [1, 2], ['(body)']],
    [
      'an unknown event type in filter_types',
      { title: 'x', url: 'https://example.com/', filter_types: ['feed.failing', 'feed.exploded'] },
      ['filter_types[1]'],
    ],
    [
      'endpoint.test in filter_types (a test is always sent)',
      { title: 'x', url: 'https://example.com/', filter_types: ['endpoint.test'] },
      ['filter_types[0]'],
    ],
    [
      'an empty filter_types list',
      { title: 'x', url: 'https://example.com/', filter_types: [] },
      ['filter_types'],
    ],
    [
      'a type listed twice in filter_types',
      { title: 'x', url: 'https://example.com/', filter_types: ['feed.gone', 'feed.gone'] },
      ['filter_types'],
    ],
    [
      'filter_types that is not a list',
      { title: 'x', url: 'https://example.com/', filter_types: 'feed.gone' },
      ['filter_types'],
    ],
    [
      'a loopback URL while private addresses are not allowed',
      { title: 'x', url: 'http://127.0.0.1:9000/' },
      ['url'],
    ],
  ];
  for (const [name, body, paths] of invalid) {
    it(`answers 400 naming each bad field for ${name}`, async () => {
      const strict = makeWorld({ network: { allow_private: false } });
      const k = (await strict.key()).key;
      const res = await strict.call('POST', '/v1/endpoints', { key: k, body });
      await strict.close();
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.deepEqual(
        res.body.errors.map((e: { path: string }) => e.path).sort(),
        [...paths].sort(),
      );
      for (const e of res.body.errors) assert.ok(e.message.length > 0);
    });
  }
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { revokeKey } from '../../../src/actions/keys.ts';
import { makeWorld, type World } from '../../support/world.ts';

describe('API requests', () => {
  let w: World;
  let key: string;
  before(async () => {
    w = makeWorld({ server: { max_body_bytes: 4096 } });
    key = (await w.key('acme')).key;
  });
  after(() => w.close());

  const cases: [
    string,
    () => Promise<{ status: number; body: any; headers: Headers }>,
    number,
    RegExp,
  ][] = [
    ['no Authorization header', () => w.call('GET', '/v1/endpoints'), 401, /API key/],
    ['an unknown key', () => w.call('GET', '/v1/endpoints', { key: 'fsk_nope' }), 401, /API key/],
    [
      'malformed JSON',
      () => w.call('POST', '/v1/endpoints', { key, body: '{"title": ' }),
      400,
      /not valid JSON/,
    ],
    [
      'a form body',
      () =>
        w.call('POST', '/v1/endpoints', {
          key,
          body: 'title=x',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }),
      415,
      /must be JSON/,
    ],
    [
      'no content type',
      () => w.call('POST', '/v1/endpoints', { key, body: '{}', headers: { 'content-type': '' } }),
      415,
      /must be JSON/,
    ],
    [
      'a body over the limit',
      () =>
        w.call('POST', '/v1/endpoints', {
          key,
          body: JSON.stringify({ title: 'x'.repeat(5000), url: 'https://x.example/' }),
        }),
      413,
      /exceeds 4096 bytes/,
    ],
    ['an unknown route', () => w.call('GET', '/v1/nothing', { key }), 404, /No route/],
    ['a malformed id', () => w.call('GET', '/v1/endpoints/not-an-id', { key }), 404, /not found/],
    ['a bad limit', () => w.call('GET', '/v1/endpoints?limit=500', { key }), 400, /query string/],
    [
      'a bad cursor',
      () => w.call('GET', '/v1/subscriptions?after=zzz', { key }),
      400,
      /query string/,
    ],
  ];
  for (const [name, send, status, detail] of cases) {
    it(`answers ${status} problem+json for ${name}`, async () => {
      const res = await send();
      assert.equal(res.status, status);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.equal(res.body.status, status);
      assert.equal(typeof res.body.title, 'string');
      assert.match(res.body.detail, detail);
    });
  }

  it('challenges every 401 with WWW-Authenticate: Bearer, naming a refused key an invalid_token', async () => {
    const none = await w.call('GET', '/v1/endpoints');
    assert.equal(none.status, 401);
    assert.equal(none.headers.get('www-authenticate'), 'Bearer realm="feedsub"');
    for (const sent of ['fsk_nope', 'Bearer fsk_nope', 'Basic dXNlcjpwYXNz']) {
      const refused = await w.call('POST', '/v1/endpoints', { key: sent, body: {} });
      assert.equal(refused.status, 401, sent);
      assert.equal(
        refused.headers.get('www-authenticate'),
        'Bearer realm="feedsub", error="invalid_token"',
        sent,
      );
    }
    assert.equal(
      (await w.call('GET', '/v1/endpoints', { key })).headers.get('www-authenticate'),
      null,
    );
  });

  it('accepts the key with or without a Bearer prefix', async () => {
    assert.equal((await w.call('GET', '/v1/endpoints', { key })).status, 200);
    assert.equal((await w.call('GET', '/v1/endpoints', { key: `Bearer ${key}` })).status, 200);
  });

  it('refuses a revoked key with 401', async () => {
    const made = await w.key('short-lived');
    assert.equal((await w.call('GET', '/v1/endpoints', { key: made.key })).status, 200);
    const id = (
      (await w.ctx.db.get('SELECT id FROM api_keys WHERE application_id = ?', [
        made.applicationId,
      ])) as { id: string }
    ).id;
    assert.equal(await revokeKey(w.ctx, id), true);
    assert.equal((await w.call('GET', '/v1/endpoints', { key: made.key })).status, 401);
  });

  it('stores keys only as SHA-256 hashes', async () => {
    const made = await w.key('hashed');
    const rows = await w.ctx.db.all('SELECT * FROM api_keys');
    assert.ok(!JSON.stringify(rows).includes(made.key));
  });

  it('replays the first response for a repeated Idempotency-Key and refuses it with another body', async () => {
    const headers = { 'idempotency-key': 'create-prod-1' };
    const body = { title: 'Prod', url: 'https://prod.example.com/' };
    const first = await w.call('POST', '/v1/endpoints', { key, body, headers });
    const again = await w.call('POST', '/v1/endpoints', { key, body, headers });
    assert.equal(again.status, 201);
    assert.equal(again.body.id, first.body.id);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    const other = await w.call('POST', '/v1/endpoints', {
      key,
      body: { ...body, title: 'Other' },
      headers,
    });
    assert.equal(other.status, 409);
    w.clock.advance(24 * 3600 * 1000 + 1);
    const later = await w.call('POST', '/v1/endpoints', { key, body, headers });
    assert.equal(later.status, 201);
    assert.notEqual(later.body.id, first.body.id);
  });

  it('scopes Idempotency-Keys to the application', async () => {
    const other = (await w.key('other-app')).key;
    const headers = { 'idempotency-key': 'shared-name' };
    const a = await w.call('POST', '/v1/endpoints', {
      key,
      body: { title: 'A', url: 'https://a.example/' },
      headers,
    });
    const b = await w.call('POST', '/v1/endpoints', {
      key: other,
      body: { title: 'B', url: 'https://b.example/' },
      headers,
    });
    assert.equal(b.status, 201);
    assert.notEqual(a.body.id, b.body.id);
  });

  it('answers /healthz without a key', async () => {
    const res = await w.call('GET', '/healthz');
    assert.equal(res.status, 200);
    assert.equal(res.body.status, 'ok');
  });
});

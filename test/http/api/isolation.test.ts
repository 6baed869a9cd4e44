import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeWorld, type World } from '../../support/world.ts';

describe('isolation between applications', () => {
  let w: World;
  let mine: string;
  let theirs: string;
  let their: { endpoint: string; subscription: string; feed: string };
  before(async () => {
    w = makeWorld();
    mine = (await w.key('mine')).key;
    theirs = (await w.key('theirs')).key;
    const endpoint = (
      await w.call('POST', '/v1/endpoints', {
        key: theirs,
        body: { title: 'T', url: 'https://t.example/' },
      })
    ).body.id;
    const sub = (
      await w.call('POST', '/v1/subscriptions', {
        key: theirs,
        body: { endpoint, url: 'https://t.example/feed' },
      })
    ).body;
    their = { endpoint, subscription: sub.id, feed: sub.feed };
  });
  after(() => w.close());

  const routes: [string, string, (t: typeof their) => string, unknown?][] = [
    ['GET', 'an endpoint', (t) => `/v1/endpoints/${t.endpoint}`],
    ['GET', 'an endpoint secret', (t) => `/v1/endpoints/${t.endpoint}/secret`],
    ['PATCH', 'an endpoint', (t) => `/v1/endpoints/${t.endpoint}`, { title: 'mine now' }],
    ['DELETE', 'an endpoint', (t) => `/v1/endpoints/${t.endpoint}`],
    ['GET', 'a subscription', (t) => `/v1/subscriptions/${t.subscription}`],
    ['PATCH', 'a subscription', (t) => `/v1/subscriptions/${t.subscription}`, { status: 'paused' }],
    ['DELETE', 'a subscription', (t) => `/v1/subscriptions/${t.subscription}`],
    ['GET', 'a feed', (t) => `/v1/feeds/${t.feed}`],
    ['POST', 'a feed refresh', (t) => `/v1/feeds/${t.feed}/refresh`],
  ];
  for (const [method, what, path, body] of routes) {
    it(`answers 404 to ${method} on another application's ${what}, as for an unknown id`, async () => {
      const res = await w.call(method, path(their), { key: mine, ...(body ? { body } : {}) });
      assert.equal(res.status, 404);
      const unknown = await w.call(
        method,
        path({ endpoint: 'f'.repeat(24), subscription: 'f'.repeat(24), feed: 'f'.repeat(24) }),
        { key: mine, ...(body ? { body } : {}) },
      );
      assert.equal(unknown.status, 404);
      assert.equal(res.body.detail, unknown.body.detail);
    });
  }

  it("refuses to subscribe with another application's endpoint exactly as with an unknown one", async () => {
    const res = await w.call('POST', '/v1/subscriptions', {
      key: mine,
      body: { endpoint: their.endpoint, url: 'https://x.example/feed' },
    });
    const unknown = await w.call('POST', '/v1/subscriptions', {
      key: mine,
      body: { endpoint: 'f'.repeat(24), url: 'https://x.example/feed' },
    });
    assert.equal(res.status, 404);
    assert.equal(res.text, unknown.text);
  });

  it("lists only the caller's resources", async () => {
    assert.deepEqual((await w.call('GET', '/v1/endpoints', { key: mine })).body.data, []);
    assert.deepEqual((await w.call('GET', '/v1/subscriptions', { key: mine })).body.data, []);
    assert.deepEqual((await w.call('GET', '/v1/feeds', { key: mine })).body.data, []);
    assert.equal(
      (await w.call('GET', `/v1/subscriptions?endpoint=${their.endpoint}`, { key: mine })).body.data
        .length,
      0,
    );
  });

  it("leaves the other application's resources untouched", async () => {
    assert.equal(
      (await w.call('GET', `/v1/subscriptions/${their.subscription}`, { key: theirs })).body.status,
      'active',
    );
    assert.equal(
      (await w.call('GET', `/v1/endpoints/${their.endpoint}`, { key: theirs })).body.title,
      'T',
    );
  });
});

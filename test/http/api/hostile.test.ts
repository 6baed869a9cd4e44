import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeWorld, type World } from '../../support/world.ts';

// Hostile and malformed input on every /v1 route must be answered with a 4xx problem, never a 500.
describe('hostile input on every route', () => {
  let w: World;
  let key: string;
  let ids: Record<string, string>;
  before(async () => {
    w = makeWorld();
    key = (await w.key()).key;
    const ep = (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'E', url: 'https://e.example/' },
      })
    ).body;
    const sub = (
      await w.call('POST', '/v1/subscriptions', {
        key,
        body: { endpoint: ep.id, url: 'https://f.example/feed' },
      })
    ).body;
    ids = { endpoint: ep.id, subscription: sub.id, feed: sub.feed };
  });
  after(() => w.close());

  const bodies: string[] = [
    '',
    'null',
    'true',
    '0',
    '"x"',
    '[]',
    '[{}]',
    '{',
    '{"a":',
    '\u0000',
    '{"title": null, "url": null}',
    '{"title": {"$gt": ""}, "url": ["http://x"]}',
    '{"endpoint": 1e999, "url": "http://[::1"}',
    '{"metadata": {"a": 1}, "url": "javascript:alert(1)"}',
    '{"status": "active", "endpoint": "../../etc/passwd"}',
    '{"since": "yesterday"}',
    '{"action": null}',
    '{"filter_types": ["feed.failing", {"$ne": 1}]}',
    '{"__proto__": {"admin": true}}',
    '{"url": "http://user:pass@:0/"}',
    `{"title": "${'é'.repeat(300)}", "url": "http://x.example/"}`,
    '{"url": "http://x.example/' + '%'.repeat(100) + '"}',
  ];
  const paths = (i: Record<string, string>): [string, string][] => [
    ['POST', '/v1/endpoints'],
    ['PATCH', `/v1/endpoints/${i.endpoint}`],
    ['POST', `/v1/endpoints/${i.endpoint}/recover`],
    ['POST', `/v1/endpoints/${i.endpoint}/rotate-secret`],
    ['POST', '/v1/subscriptions'],
    ['PATCH', `/v1/subscriptions/${i.subscription}`],
    ['POST', `/v1/feeds/${i.feed}/accept-identity-change`],
    ['POST', `/v1/feeds/${i.feed}/refresh`],
    ['GET', '/v1/feeds?status=%00&limit=0&after=zz'],
    ['GET', '/v1/events?status=nope&limit=-1&after=%00'],
    ['GET', `/v1/subscriptions?endpoint=${'x'.repeat(5000)}`],
    ['DELETE', '/v1/endpoints/%2e%2e'],
    ['GET', '/v1/events/%ff'],
  ];

  it('never answers 500, whatever the body', async () => {
    for (const [method, path] of paths(ids)) {
      for (const body of bodies) {
        for (const contentType of ['application/json', 'text/plain']) {
          const res = await w.call(
            method,
            path,
            method === 'GET' ? { key } : { key, body, headers: { 'content-type': contentType } },
          );
          assert.ok(
            res.status >= 200 && res.status < 500,
            `${method} ${path} ${contentType} ${JSON.stringify(body)} → ${res.status} ${res.text}`,
          );
          if (res.status >= 400)
            assert.equal(res.headers.get('content-type'), 'application/problem+json');
        }
      }
    }
  });
});

// The API's request limits: a token bucket per application, and failed keys per client address that never refuse a
// valid key; the client address comes from X-Forwarded-For only through server.trusted_proxies.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeWorld, type World } from '../../support/world.ts';

/** A request as @hono/node-server hands it over: from `peer`, with these headers. */
async function from(
  w: World,
  peer: string,
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
) {
  const res = await w.app.request(
    path,
    { method, headers },
    { incoming: { socket: { remoteAddress: peer } } },
  );
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

describe('quotas.api_requests_per_second', () => {
  it('lets an application spend its burst, then answers 429 with Retry-After until tokens refill', async () => {
    const w = makeWorld({ quotas: { api_requests_per_second: 2, api_burst: 5 } });
    try {
      const { key } = await w.key();
      for (let i = 0; i < 5; i++)
        assert.equal((await w.call('GET', '/v1/endpoints', { key })).status, 200);
      const refused = await w.call('GET', '/v1/endpoints', { key });
      assert.equal(refused.status, 429);
      assert.equal(refused.headers.get('content-type'), 'application/problem+json');
      assert.equal(refused.headers.get('retry-after'), '1');
      assert.ok(refused.headers.get('x-request-id'), 'the 429 carries the request id too');
      assert.deepEqual(
        [refused.body.quota, refused.body.limit, refused.body.retry_after_seconds],
        ['api_requests_per_second', 2, 1],
      );
      assert.equal(
        (await w.call('GET', '/v1/endpoints', { key: (await w.key()).key })).status,
        200,
        'another application has its own',
      );
      w.clock.advance(500);
      assert.equal(
        (await w.call('GET', '/v1/endpoints', { key })).status,
        200,
        'one token back after 0.5 s at 2/s',
      );
      assert.equal((await w.call('GET', '/v1/endpoints', { key })).status, 429);
    } finally {
      await w.close();
    }
  });

  it('refuses before doing anything: a refused POST creates nothing', async () => {
    const w = makeWorld({ quotas: { api_requests_per_second: 1, api_burst: 1 } });
    try {
      const { key } = await w.key();
      const body = { title: 't', url: 'http://127.0.0.1:9/' };
      assert.equal((await w.call('POST', '/v1/endpoints', { key, body })).status, 201);
      assert.equal((await w.call('POST', '/v1/endpoints', { key, body })).status, 429);
      assert.equal((await w.ctx.db.column('SELECT count(*) FROM endpoints'))[0], 1);
    } finally {
      await w.close();
    }
  });

  it('does not limit when set to 0', async () => {
    const w = makeWorld({ quotas: { api_requests_per_second: 0, api_burst: 1 } });
    try {
      const { key } = await w.key();
      for (let i = 0; i < 20; i++)
        assert.equal((await w.call('GET', '/v1/endpoints', { key })).status, 200);
    } finally {
      await w.close();
    }
  });
});

describe('quotas.failed_auth_per_address', () => {
  it('answers 429 instead of 401 once an address has spent its failures, and still accepts a valid key from it', async () => {
    const w = makeWorld();
    try {
      const { key } = await w.key();
      const attacker = '203.0.113.9';
      for (let i = 0; i < 10; i++)
        assert.equal(
          (await from(w, attacker, '/v1/endpoints', { authorization: `fsk_guess${i}` })).status,
          401,
        );
      const refused = await from(w, attacker, '/v1/endpoints', { authorization: 'fsk_guess10' });
      assert.equal(refused.status, 429);
      assert.equal(refused.headers.get('retry-after'), '60');
      assert.equal(refused.body.quota, 'failed_auth_per_address');
      assert.match(refused.body.detail, /A valid key is always accepted/);
      assert.equal(
        (await from(w, attacker, '/v1/endpoints')).status,
        429,
        'a missing key counts too',
      );
      assert.equal(
        (await from(w, attacker, '/v1/endpoints', { authorization: key })).status,
        200,
        'a valid key from the same address',
      );
      assert.equal(
        (await from(w, '203.0.113.10', '/v1/endpoints')).status,
        401,
        'another address is not limited',
      );
      w.clock.advance(60_000);
      assert.equal(
        (await from(w, attacker, '/v1/endpoints')).status,
        401,
        'one more try a minute later',
      );
      assert.equal((await from(w, attacker, '/v1/endpoints')).status, 429);
    } finally {
      await w.close();
    }
  });

  it('counts an IPv6 client by its /64', async () => {
    const w = makeWorld({ quotas: { failed_auth_per_address: 2 } });
    try {
      for (const peer of ['2001:db8:1:2::1', '2001:db8:1:2::2'])
        assert.equal((await from(w, peer, '/v1/endpoints')).status, 401);
      assert.equal((await from(w, '2001:db8:1:2::3', '/v1/endpoints')).status, 429);
      assert.equal(
        (await from(w, '2001:db8:1:3::1', '/v1/endpoints')).status,
        401,
        'the next /64 is another client',
      );
    } finally {
      await w.close();
    }
  });

  it('tells clients behind a trusted proxy apart by X-Forwarded-For, and ignores it from anyone else', async () => {
    const w = makeWorld({
      server: { trusted_proxies: ['127.0.0.1'] },
      quotas: { failed_auth_per_address: 2 },
    });
    try {
      const viaProxy = (client: string) =>
        from(w, '127.0.0.1', '/v1/endpoints', { 'x-forwarded-for': client });
      for (let i = 0; i < 2; i++) assert.equal((await viaProxy('198.51.100.1')).status, 401);
      assert.equal((await viaProxy('198.51.100.1')).status, 429);
      assert.equal(
        (await viaProxy('198.51.100.2')).status,
        401,
        'another client behind the same proxy',
      );
      assert.equal(
        (await viaProxy('1.2.3.4, 198.51.100.1')).status,
        429,
        'a forged hop to the left changes nothing',
      );

      const direct = (forged: string) =>
        from(w, '203.0.113.50', '/v1/endpoints', { 'x-forwarded-for': forged });
      for (let i = 0; i < 2; i++) assert.equal((await direct(`198.51.100.${100 + i}`)).status, 401);
      assert.equal(
        (await direct('198.51.100.200')).status,
        429,
        'an untrusted peer cannot pose as new clients',
      );
    } finally {
      await w.close();
    }
  });
});

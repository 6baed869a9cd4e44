// Tests for the network guard: address classification and refusal at connect time through a real undici Agent.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import {
  createGuardedAgent,
  ForbiddenAddressError,
  isForbiddenAddress,
} from '../../src/net/guard.ts';

describe('isForbiddenAddress', () => {
  const cases: [string, boolean][] = [
    // IPv4 public
    ['8.8.8.8', false],
    ['1.1.1.1', false],
    ['93.184.215.14', false],
    ['172.32.0.1', false],
    ['100.128.0.1', false],
    ['198.20.0.1', false],
    ['223.255.255.255', false],
    // IPv4 special-purpose
    ['0.0.0.0', true],
    ['0.1.2.3', true],
    ['10.0.0.1', true],
    ['100.64.0.1', true],
    ['100.127.255.254', true],
    ['127.0.0.1', true],
    ['127.255.255.254', true],
    ['169.254.169.254', true],
    ['172.16.0.1', true],
    ['172.31.255.255', true],
    ['192.0.0.8', true],
    ['192.0.2.1', true],
    ['192.88.99.1', true],
    ['192.168.1.1', true],
    ['198.18.0.1', true],
    ['198.19.255.255', true],
    ['198.51.100.7', true],
    ['203.0.113.9', true],
    ['224.0.0.1', true],
    ['239.255.255.250', true],
    ['240.0.0.1', true],
    ['255.255.255.255', true],
    // IPv6 public
    ['2606:4700:4700::1111', false],
    ['2001:4860:4860::8888', false],
    ['2a00:1450:4001:82a::200e', false],
    // IPv6 special-purpose
    ['::', true],
    ['::1', true],
    ['0:0:0:0:0:0:0:1', true],
    ['[::1]', true],
    ['::127.0.0.1', true],
    ['fe80::1', true],
    ['fe80::1%eth0', true],
    ['fec0::1', true],
    ['fc00::1', true],
    ['fd12:3456:789a::1', true],
    ['ff02::1', true],
    ['2001:db8::1', true],
    ['2001::1', true],
    ['3fff::1', true],
    ['100::1', true],
    ['5f00::1', true],
    ['64:ff9b:1::1', true],
    // IPv4 embedded in IPv6: mapped, NAT64 well-known prefix, 6to4
    ['::ffff:127.0.0.1', true],
    ['::ffff:7f00:1', true],
    ['::ffff:10.0.0.1', true],
    ['::ffff:169.254.169.254', true],
    ['::ffff:8.8.8.8', false],
    ['64:ff9b::10.0.0.1', true],
    ['64:ff9b::8.8.8.8', false],
    ['2002:7f00:1::', true],
    ['2002:808:808::1', false],
    // not an IP address: fail closed
    ['localhost', true],
    ['', true],
    ['1.2.3', true],
  ];
  for (const [ip, forbidden] of cases) {
    it(`${forbidden ? 'forbids' : 'allows'} ${ip || '(empty)'}`, () => {
      assert.equal(isForbiddenAddress(ip), forbidden);
    });
  }
});

describe('ForbiddenAddressError', () => {
  it('tells the operator which address and which setting', () => {
    const err = new ForbiddenAddressError('127.0.0.1');
    assert.equal(
      err.message,
      'address 127.0.0.1 is private or loopback; set network.allow_private = true to allow it',
    );
    assert.equal(err.address, '127.0.0.1');
    assert.ok(err instanceof Error);
  });
});

describe('createGuardedAgent', () => {
  let port = 0;
  let requests = 0;
  let connections = 0;
  const server = createServer((_req, res) => {
    requests += 1;
    res.end('hello');
  });
  server.on('connection', () => {
    connections += 1;
  });

  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  for (const host of ['127.0.0.1', 'localhost', '[::1]', '[::ffff:127.0.0.1]']) {
    it(`refuses http://${host} before any byte is sent when private addresses are not allowed`, async () => {
      const agent = createGuardedAgent({ allowPrivate: false });
      const seen = { requests, connections };
      try {
        await assert.rejects(
          request(`http://${host}:${port}/`, { dispatcher: agent }),
          (err: unknown) => {
            assert.ok(err instanceof ForbiddenAddressError, String(err));
            assert.match(
              err.message,
              /is private or loopback; set network\.allow_private = true to allow it$/,
            );
            return true;
          },
        );
        assert.equal(requests, seen.requests);
        assert.equal(connections, seen.connections);
      } finally {
        await agent.close();
      }
    });
  }

  for (const host of ['127.0.0.1', 'localhost']) {
    it(`connects to http://${host} when private addresses are allowed`, async () => {
      const agent = createGuardedAgent({ allowPrivate: true });
      try {
        const res = await request(`http://${host}:${port}/`, { dispatcher: agent });
        assert.equal(res.statusCode, 200);
        assert.equal(await res.body.text(), 'hello');
      } finally {
        await agent.close();
      }
    });
  }

  it('reuses kept-alive connections for sequential requests to the same origin', async () => {
    const agent = createGuardedAgent({ allowPrivate: true });
    const before = connections;
    try {
      for (let i = 0; i < 5; i++) {
        const res = await request(`http://127.0.0.1:${port}/`, { dispatcher: agent });
        await res.body.text();
      }
      // undici may open a second socket while the first is being released; never one per request.
      assert.ok(connections - before <= 2, `${connections - before} connections for 5 requests`);
    } finally {
      await agent.close();
    }
  });

  it('reports an unresolvable host as a DNS error', async () => {
    const agent = createGuardedAgent({ allowPrivate: false });
    try {
      await assert.rejects(
        request('http://does-not-exist.invalid/', { dispatcher: agent }),
        (err: unknown) => {
          assert.equal((err as { code?: string }).code, 'ENOTFOUND');
          return true;
        },
      );
    } finally {
      await agent.close();
    }
  });
});

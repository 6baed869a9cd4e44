// The client address behind trusted proxies: the peer unless it is trusted, then the rightmost untrusted hop.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addressKey, clientAddressOf, trustedProxies } from '../../src/http/client-address.ts';

describe('clientAddressOf', () => {
  const trusted = trustedProxies(['127.0.0.1', '10.0.0.0/8', 'fd00::/8']);
  const cases: { name: string; peer: string | undefined; xff?: string; want: string }[] = [
    { name: 'is the peer when no proxy is trusted', peer: '203.0.113.5', want: '203.0.113.5' },
    {
      name: 'ignores X-Forwarded-For from a peer that is not a trusted proxy',
      peer: '203.0.113.5',
      xff: '198.51.100.1',
      want: '203.0.113.5',
    },
    {
      name: 'takes the hop a trusted proxy appended',
      peer: '127.0.0.1',
      xff: '198.51.100.1',
      want: '198.51.100.1',
    },
    {
      name: 'takes the rightmost untrusted hop, not what the client wrote before it',
      peer: '127.0.0.1',
      xff: '1.1.1.1, 2.2.2.2, 198.51.100.1',
      want: '198.51.100.1',
    },
    {
      name: 'walks past a chain of trusted proxies',
      peer: '127.0.0.1',
      xff: '198.51.100.1, 10.1.2.3, 10.0.0.9',
      want: '198.51.100.1',
    },
    {
      name: 'is the leftmost hop when every hop is trusted',
      peer: '127.0.0.1',
      xff: '10.0.0.1, 10.0.0.2',
      want: '10.0.0.1',
    },
    {
      name: 'stops at the last trusted hop when the next one is not an address',
      peer: '127.0.0.1',
      xff: 'evil, 10.0.0.2',
      want: '10.0.0.2',
    },
    { name: 'is the trusted peer when it sends no header', peer: '127.0.0.1', want: '127.0.0.1' },
    {
      name: 'reads an IPv4-mapped IPv6 peer as IPv4',
      peer: '::ffff:127.0.0.1',
      xff: '198.51.100.1',
      want: '198.51.100.1',
    },
    {
      name: 'strips brackets and ports from hops',
      peer: '127.0.0.1',
      xff: '[2001:db8::1]:443',
      want: '2001:db8::1',
    },
    {
      name: 'takes hops from a trusted IPv6 proxy block',
      peer: 'fd12::1',
      xff: '198.51.100.7:5000',
      want: '198.51.100.7',
    },
    { name: 'is "unknown" without a peer', peer: undefined, xff: '198.51.100.1', want: 'unknown' },
  ];
  for (const t of cases) {
    it(t.name, () => {
      assert.equal(clientAddressOf(t.peer, t.xff, trusted), t.want);
    });
  }

  it('trusts nothing when server.trusted_proxies is empty', () => {
    assert.equal(clientAddressOf('127.0.0.1', '198.51.100.1', trustedProxies([])), '127.0.0.1');
  });
});

describe('addressKey', () => {
  const cases: [string, string][] = [
    ['198.51.100.7', '198.51.100.7'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::ffff', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:0000:0000:0000:0001', '2001:db8:1:2::/64'],
    ['::1', '0:0:0:0::/64'],
    ['64:ff9b::198.51.100.7', '64:ff9b:0:0::/64'],
    ['unknown', 'unknown'],
  ];
  for (const [address, key] of cases) {
    it(`counts ${address} as ${key}`, () => {
      assert.equal(addressKey(address), key);
    });
  }
});

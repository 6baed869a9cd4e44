// The client's address for per-address limits: the TCP peer, or — only when the peer is one of server.trusted_proxies —
// the rightmost X-Forwarded-For hop that is not a trusted proxy (the hops to its left are the client's own words).
import type { Context } from 'hono';
import { BlockList, isIP } from 'node:net';

/** server.trusted_proxies as a BlockList (its entries were validated by the config schema). */
export function trustedProxies(list: readonly string[]): BlockList {
  const trusted = new BlockList();
  for (const entry of list) {
    const [address = '', prefix] = entry.split('/');
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) trusted.addAddress(address, family);
    else trusted.addSubnet(address, Number(prefix), family);
  }
  return trusted;
}

/** The client address of a request that came from `peer` with this X-Forwarded-For (all values, comma-joined).
 *  An untrusted peer is the client, whatever it claims. A trusted peer forwards for the rightmost hop that is not
 *  trusted (each proxy appends the address it saw, so only that hop was written by a proxy we trust); when every hop
 *  is trusted, the leftmost; a hop that is not an address ends the walk at the last trusted one. */
export function clientAddressOf(
  peer: string | undefined,
  forwardedFor: string | undefined,
  trusted: BlockList,
): string {
  let address = plainAddress(peer ?? '');
  if (!address) return 'unknown';
  if (!isTrusted(address, trusted) || !forwardedFor) return address;
  const hops = forwardedFor.split(',');
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = plainAddress(hops[i]!);
    if (!hop) break;
    if (!isTrusted(hop, trusted)) return hop;
    address = hop;
  }
  return address;
}

/** The client address of a request served by @hono/node-server (the socket's peer, then X-Forwarded-For as above);
 *  'unknown' outside a real server (app.request() without an env). */
export function clientAddress(c: Context, trusted: BlockList): string {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return clientAddressOf(
    env?.incoming?.socket?.remoteAddress,
    c.req.header('x-forwarded-for'),
    trusted,
  );
}

/** What a per-address limit counts under: an IPv4 address as is, an IPv6 address by its /64 — the block one
 *  subscriber line or host is given (RFC 6177), inside which a client can pick a fresh address for every request. */
export function addressKey(address: string): string {
  if (isIP(address) !== 6) return address;
  return `${expandIPv6(address).slice(0, 4).join(':')}::/64`;
}

function isTrusted(address: string, trusted: BlockList): boolean {
  return trusted.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
}

/** An address without brackets, port or zone, IPv4-mapped IPv6 as IPv4, lower case; undefined when it is not one. */
function plainAddress(text: string): string | undefined {
  let s = text.trim().toLowerCase();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(s);
  if (bracketed) s = bracketed[1]!;
  else if (/^[\d.]+:\d+$/.test(s)) s = s.slice(0, s.indexOf(':')); // IPv4 with a port
  s = s.replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (mapped) s = mapped[1]!;
  return isIP(s) ? s : undefined;
}

/** The eight 16-bit groups of a valid IPv6 address, as hex without leading zeros. */
function expandIPv6(address: string): string[] {
  let text = address;
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text); // an embedded IPv4 tail is two groups
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text =
      text.slice(0, v4.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((g) => parseInt(g, 16).toString(16));
}

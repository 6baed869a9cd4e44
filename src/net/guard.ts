// Network safety: classifies IP addresses and builds the undici Agent that refuses forbidden ones at connect time.
import { BlockList, isIP, isIPv4 } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { createResolver, type Resolver } from './resolver.ts';

/** Special-purpose IPv4 ranges that are not globally reachable (IANA IPv4 special registry, RFC 6890). */
const FORBIDDEN_V4: readonly (readonly [string, number])[] = [
  ['0.0.0.0', 8], // "this network", includes the unspecified 0.0.0.0 (RFC 791)
  ['10.0.0.0', 8], // private (RFC 1918)
  ['100.64.0.0', 10], // carrier-grade NAT (RFC 6598)
  ['127.0.0.0', 8], // loopback (RFC 1122)
  ['169.254.0.0', 16], // link-local, cloud metadata endpoints (RFC 3927)
  ['172.16.0.0', 12], // private (RFC 1918)
  ['192.0.0.0', 24], // IETF protocol assignments (RFC 6890)
  ['192.0.2.0', 24], // TEST-NET-1 documentation (RFC 5737)
  ['192.88.99.0', 24], // deprecated 6to4 relay anycast (RFC 7526)
  ['192.168.0.0', 16], // private (RFC 1918)
  ['198.18.0.0', 15], // benchmarking (RFC 2544)
  ['198.51.100.0', 24], // TEST-NET-2 documentation (RFC 5737)
  ['203.0.113.0', 24], // TEST-NET-3 documentation (RFC 5737)
  ['224.0.0.0', 4], // multicast (RFC 5771)
  ['240.0.0.0', 4], // reserved, includes broadcast 255.255.255.255 (RFC 1112, RFC 919)
];

/** Special-purpose IPv6 ranges (IANA IPv6 special registry). Mapped, NAT64 and 6to4 forms are unwrapped first. */
const FORBIDDEN_V6: readonly (readonly [string, number])[] = [
  ['::', 8], // unspecified, loopback, IPv4-compatible and other reserved forms (RFC 4291)
  ['64:ff9b:1::', 48], // local-use NAT64 (RFC 8215)
  ['100::', 64], // discard-only (RFC 6666)
  ['2001::', 23], // IETF protocol assignments incl. Teredo, benchmarking, ORCHID (RFC 2928)
  ['2001:db8::', 32], // documentation (RFC 3849)
  ['3fff::', 20], // documentation (RFC 9637)
  ['5f00::', 16], // SRv6 SIDs (RFC 9602)
  ['fc00::', 7], // unique local (RFC 4193)
  ['fe80::', 10], // link-local (RFC 4291)
  ['fec0::', 10], // deprecated site-local (RFC 3879)
  ['ff00::', 8], // multicast (RFC 4291)
];

/** Built once at load and never modified afterwards. Two lists, because BlockList checks an IPv4 address
 *  against IPv6 rules in its mapped form, which ::/8 would then always match. */
const BLOCKED_V4 = buildBlockList(FORBIDDEN_V4, 'ipv4');
const BLOCKED_V6 = buildBlockList(FORBIDDEN_V6, 'ipv6');

function buildBlockList(
  ranges: readonly (readonly [string, number])[],
  family: 'ipv4' | 'ipv6',
): BlockList {
  const list = new BlockList();
  for (const [net, prefix] of ranges) list.addSubnet(net, prefix, family);
  return list;
}

/** Refused because the resolved address is not a public one. */
export class ForbiddenAddressError extends Error {
  readonly code = 'ERR_FORBIDDEN_ADDRESS';
  readonly address: string;
  constructor(address: string) {
    super(
      `address ${address} is private or loopback; set network.allow_private = true to allow it`,
    );
    this.name = 'ForbiddenAddressError';
    this.address = address;
  }
}

/** True when the address is loopback, private, link-local, CGNAT, multicast, unspecified, broadcast,
 *  documentation/benchmark/reserved, or an IPv4-mapped/NAT64/6to4 form of those; also true for non-IPs (fail closed). */
export function isForbiddenAddress(ip: string): boolean {
  const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const family = isIP(bare);
  if (family === 4) return BLOCKED_V4.check(bare, 'ipv4');
  if (family !== 6) return true;
  const groups = ipv6Groups(bare);
  if (groups === null) return true;
  const embedded = embeddedIPv4(groups);
  if (embedded !== null) return BLOCKED_V4.check(embedded, 'ipv4');
  return BLOCKED_V6.check(groups.map((g) => g.toString(16)).join(':'), 'ipv6');
}

/** The IPv4 address carried by ::ffff:a.b.c.d (mapped), 64:ff9b::a.b.c.d (NAT64, RFC 6052) or 2002:aabb:ccdd:: (6to4). */
function embeddedIPv4(g: readonly number[]): string | null {
  const zeros = (from: number, to: number): boolean => g.slice(from, to).every((x) => x === 0);
  const quad = (hi: number, lo: number): string => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  if (zeros(0, 5) && g[5] === 0xffff) return quad(g[6] ?? 0, g[7] ?? 0);
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return quad(g[6] ?? 0, g[7] ?? 0);
  if (g[0] === 0x2002) return quad(g[1] ?? 0, g[2] ?? 0);
  return null;
}

/** Eight 16-bit groups of a syntactically valid IPv6 address (zone id dropped), or null. */
function ipv6Groups(ip: string): number[] | null {
  let s = ip.split('%')[0] ?? '';
  const lastColon = s.lastIndexOf(':');
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    if (!isIPv4(tail)) return null;
    const [a = 0, b = 0, c = 0, d = 0] = tail.split('.').map(Number);
    s = `${s.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const parse = (part: string | undefined): number[] =>
    part ? part.split(':').map((h) => parseInt(h, 16)) : [];
  const head = parse(halves[0]);
  const rest = halves.length === 2 ? parse(halves[1]) : [];
  const fill = 8 - head.length - rest.length;
  if (fill < 0 || (halves.length === 1 && fill !== 0)) return null;
  const groups = [...head, ...new Array<number>(fill).fill(0), ...rest];
  return groups.every((x) => Number.isInteger(x) && x >= 0 && x <= 0xffff) ? groups : null;
}

type GuardOptions = {
  allowPrivate: boolean;
  connectTimeoutMs?: number;
  connections?: number;
  /** Where host names are looked up; the poller shares its own, so a fetch connects to the addresses its per-host
   *  caps counted. Default: one of the agent's own (with the connect timeout). */
  resolver?: Resolver;
};

/** A keep-alive undici Agent whose connector resolves the host itself and refuses forbidden addresses
 *  at connect time (so DNS rebinding and redirects cannot bypass it) unless allowPrivate. */
export function createGuardedAgent(opts: GuardOptions): Agent {
  const timeoutMs = opts.connectTimeoutMs ?? 10_000;
  const base = buildConnector({ timeout: timeoutMs });
  const resolver = opts.resolver ?? createResolver({ timeoutMs });
  const connect: buildConnector.connector = (options, callback) => {
    resolveChecked(resolver, options.hostname, opts.allowPrivate)
      .then((addresses) => connectFirst(base, options, addresses, callback))
      .catch((err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), null));
  };
  return new Agent({ connect, connections: opts.connections ?? null });
}

/** Every address of the host (a literal IP is its own address); rejects if any one is forbidden. The connect timeout
 *  also bounds the lookup (the resolver's deadline). */
async function resolveChecked(
  resolver: Resolver,
  hostname: string,
  allowPrivate: boolean,
): Promise<string[]> {
  const addresses = await resolver.lookup(hostname);
  // Refuse the host when ANY address is forbidden: a mixed answer is a rebinding attempt more often than not.
  const bad = allowPrivate ? undefined : addresses.find((a) => isForbiddenAddress(a));
  if (bad !== undefined) throw new ForbiddenAddressError(bad);
  return addresses;
}

/** Connects to the checked addresses in order, keeping Host/SNI/certificate checks on the original hostname. */
function connectFirst(
  base: buildConnector.connector,
  options: buildConnector.Options,
  addresses: readonly string[],
  callback: buildConnector.Callback,
): void {
  const servername =
    options.servername ||
    (isIP(options.hostname.replace(/^\[|\]$/g, '')) ? undefined : options.hostname);
  const attempt = (index: number): void => {
    const address = addresses[index] ?? '';
    const target: buildConnector.Options = { ...options, hostname: address };
    if (servername !== undefined) target.servername = servername;
    base(target, (...args) => {
      const [err] = args;
      if (err !== null && index + 1 < addresses.length) return attempt(index + 1);
      callback(...args);
    });
  };
  attempt(0);
}

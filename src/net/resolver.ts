// Host names → addresses, cached for a minute (a bounded cache), every lookup with a deadline: the poller keys its
// per-host caps by these addresses before it claims a fetch, and the guarded agent connects to the same ones.
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { errors } from 'undici';

export type Resolver = {
  /** The host's addresses when looked up less than a TTL ago (a literal IP is its own); undefined when unknown or
   *  stale. An empty list: the last lookup failed (the fetch itself then reports why). */
  cached(host: string): readonly string[] | undefined;
  /** Looks the host up (one lookup per host at a time) and caches the answer; never rejects. */
  refresh(host: string): Promise<void>;
  /** For the connector: the cached addresses, or a fresh lookup; rejects when the host has none. */
  lookup(host: string): Promise<string[]>;
};

export type ResolverOptions = {
  /** Each lookup ends within this (dns.lookup has no deadline of its own). */
  timeoutMs: number;
  /** How long an answer is used: dns.lookup does not tell the record's TTL. Default 60 s; a failure 5 s. */
  ttlMs?: number;
  /** Hosts remembered at most; past it the oldest answer is forgotten. Default 10,000. */
  maxHosts?: number;
  /** The lookup itself (tests give names of 127.0.0.1); default: every address from the system resolver. */
  lookup?: (host: string) => Promise<string[]>;
};

const FAILURE_TTL_MS = 5000;

/** A resolver with its own cache. */
export function createResolver(opts: ResolverOptions): Resolver {
  const ttlMs = opts.ttlMs ?? 60_000;
  const maxHosts = opts.maxHosts ?? 10_000;
  const resolve = opts.lookup ?? systemLookup;
  const answers = new Map<string, { addresses: string[]; until: number }>();
  const pending = new Map<string, Promise<string[]>>();
  const remember = (host: string, addresses: string[], forMs: number) => {
    answers.delete(host); // re-inserted last: the oldest answer is the first one
    answers.set(host, { addresses, until: Date.now() + forMs });
    if (answers.size > maxHosts) answers.delete(answers.keys().next().value as string);
  };
  const lookUp = (host: string): Promise<string[]> => {
    const running = pending.get(host);
    if (running) return running;
    const started = withDeadline(resolve(host), host, opts.timeoutMs).then(
      (addresses) => {
        remember(host, addresses, addresses.length > 0 ? ttlMs : FAILURE_TTL_MS);
        return addresses;
      },
      (err: unknown) => {
        remember(host, [], FAILURE_TTL_MS);
        throw err;
      },
    );
    const tracked = started.finally(() => pending.delete(host));
    pending.set(host, tracked);
    return tracked;
  };
  return {
    cached(host) {
      const bare = unbracket(host);
      if (isIP(bare)) return [bare];
      const answer = answers.get(bare);
      return answer && answer.until > Date.now() ? answer.addresses : undefined;
    },
    refresh: (host) =>
      isIP(unbracket(host))
        ? Promise.resolve()
        : lookUp(unbracket(host)).then(
            () => {},
            () => {},
          ),
    async lookup(host) {
      const bare = unbracket(host);
      if (isIP(bare)) return [bare];
      const answer = answers.get(bare);
      if (answer && answer.until > Date.now() && answer.addresses.length > 0)
        return answer.addresses;
      const addresses = await lookUp(bare);
      if (addresses.length === 0)
        throw Object.assign(new Error(`no address for ${bare}`), { code: 'ENOTFOUND' });
      return addresses;
    },
  };
}

/** The key an address counts under for a per-host cap: an IPv4 address as it is (also when written IPv4-mapped), an
 *  IPv6 address by its /64, the block one site is usually given. */
export function addressKey(address: string): string {
  const bare = unbracket(address).split('%')[0] ?? '';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  if (mapped) return mapped[1]!;
  if (isIP(bare) !== 6) return bare;
  const [head = '', tail] = bare.split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const groups = [
    ...left,
    ...new Array<string>(8 - left.length - right.length).fill('0'),
    ...right,
  ];
  return `${groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}

async function systemLookup(host: string): Promise<string[]> {
  return (await dnsLookup(host, { all: true, verbatim: true })).map((a) => a.address);
}

/** `lookup`, or a connect-timeout error after `timeoutMs`. */
async function withDeadline<T>(lookup: Promise<T>, host: string, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new errors.ConnectTimeoutError(`DNS lookup of ${host} timed out`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([lookup, late]);
  } finally {
    clearTimeout(timer);
  }
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

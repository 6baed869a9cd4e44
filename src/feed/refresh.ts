// One feed's refresh, network and parsing only (no storage): fetch → decode → parse, or discover the feed behind an HTML page.
import type { Dispatcher } from 'undici';
import { decodeFeed } from './decode.ts';
import { discoverFeedLinks } from './discover.ts';
import { fetchFeed, type FetchMeta } from './fetch.ts';
import { entryIdentities, type EntryIdentity, type KeyBase } from './identity.ts';
import { FeedParseError, sniffDocument } from './parse.ts';
import type { ParsedFeed, ParseOptions } from './types.ts';

export type RefreshTarget = {
  /** The subscribed URL: `credentials` were given for its origin, and go to no other. */
  url: string;
  fetchUrl: string;
  credentials: string | null;
  etag: string | null;
  lastModified: string | null;
  bodyHash: string | null;
  discovered: boolean;
  /** The URL entry links are keyed against: the subscribed URL, or the feed discovered behind it (never a redirect's
   *  target, so keys survive a feed moving host). */
  keyBase: string;
};
export type RefreshDeps = {
  agent: Dispatcher;
  parse: (text: string, opts: ParseOptions) => Promise<ParsedFeed>;
  userAgent: string;
  maxBodyBytes: number;
  connectTimeoutMs: number;
  totalTimeoutMs: number;
  now: () => Date;
};
export type RefreshOutcome =
  | {
      kind: 'parsed';
      meta: FetchMeta;
      bodyHash: string;
      parsed: ParsedFeed;
      /** Each entry's identity candidates (feed/identity.ts), computed here, outside the poll transaction. */
      identities: EntryIdentity[];
      base: KeyBase;
      discoveredUrl: string | null;
    }
  | { kind: 'unchanged'; meta: FetchMeta }
  | { kind: 'gone'; meta: FetchMeta }
  | { kind: 'throttled'; meta: FetchMeta; retryAfterSeconds: number }
  | {
      kind: 'error';
      errorClass: 'network' | 'http' | 'parse';
      message: string;
      status: number | null;
      retryAfterSeconds: number | null;
      durationMs: number;
    };

const MAX_DISCOVERY_CANDIDATES = 4;

/** Fetches and parses one feed. Never throws: every failure is an 'error' outcome with its class and message. */
export async function refreshFeed(
  target: RefreshTarget,
  deps: RefreshDeps,
): Promise<RefreshOutcome> {
  const res = await fetchOnce(target.fetchUrl, target, deps, true);
  if (res.kind !== 'ok') return res;
  const decoded = decodeFeed(res.body, res.meta.contentType);
  if (!target.discovered && sniffDocument(decoded.text) === 'html')
    return discover(decoded.text, res.meta, target, deps);
  return parseBody(decoded.text, res.meta, res.bodyHash, null, target.keyBase, deps);
}

type Fetched =
  | { kind: 'ok'; meta: FetchMeta; body: Uint8Array; bodyHash: string }
  | Exclude<RefreshOutcome, { kind: 'parsed' }>;

async function fetchOnce(
  url: string,
  target: RefreshTarget,
  deps: RefreshDeps,
  conditional: boolean,
): Promise<Fetched> {
  const r = await fetchFeed(
    {
      url: withCredentials(url, target),
      etag: conditional ? target.etag : null,
      lastModified: conditional ? target.lastModified : null,
      lastBodyHash: conditional ? target.bodyHash : null,
    },
    {
      agent: deps.agent,
      userAgent: deps.userAgent,
      maxBodyBytes: deps.maxBodyBytes,
      connectTimeoutMs: deps.connectTimeoutMs,
      totalTimeoutMs: deps.totalTimeoutMs,
      now: deps.now(),
    },
  );
  switch (r.kind) {
    case 'ok': {
      const { kind: _k, body, bodyHash, ...meta } = r;
      return { kind: 'ok', meta, body, bodyHash };
    }
    case 'unchanged': {
      const { kind: _k, reason: _r, ...meta } = r;
      return { kind: 'unchanged', meta };
    }
    case 'gone': {
      const { kind: _k, ...meta } = r;
      return { kind: 'gone', meta };
    }
    case 'throttled': {
      const { kind: _k, retryAfterSeconds, ...meta } = r;
      return { kind: 'throttled', meta, retryAfterSeconds };
    }
    case 'error':
      return {
        kind: 'error',
        errorClass: r.errorClass,
        message: r.message,
        status: r.status,
        retryAfterSeconds: r.retryAfterSeconds,
        durationMs: r.durationMs,
      };
  }
}

async function parseBody(
  text: string,
  meta: FetchMeta,
  bodyHash: string,
  discoveredUrl: string | null,
  keyBase: string,
  deps: RefreshDeps,
): Promise<RefreshOutcome> {
  try {
    const parsed = await deps.parse(text, {
      baseUrl: meta.finalUrl,
      contentLocation: meta.contentLocation,
    });
    const base = { keyBase, documentUrl: meta.finalUrl };
    return {
      kind: 'parsed',
      meta,
      bodyHash,
      parsed,
      identities: entryIdentities(parsed.entries, base),
      base,
      discoveredUrl,
    };
  } catch (err) {
    const message =
      err instanceof FeedParseError
        ? err.message
        : `parse: unable to parse the feed: ${(err as Error).message}`;
    return {
      kind: 'error',
      errorClass: 'parse',
      message,
      status: meta.status,
      retryAfterSeconds: null,
      durationMs: meta.durationMs,
    };
  }
}

/** The URL is a web page: try its advertised feed links, then common paths, and watch the first that parses. */
async function discover(
  html: string,
  pageMeta: FetchMeta,
  target: RefreshTarget,
  deps: RefreshDeps,
): Promise<RefreshOutcome> {
  const candidates = discoverFeedLinks(html, pageMeta.finalUrl).slice(0, MAX_DISCOVERY_CANDIDATES);
  for (const candidate of candidates) {
    const res = await fetchOnce(candidate.url, target, deps, false);
    if (res.kind !== 'ok') continue;
    const text = decodeFeed(res.body, res.meta.contentType).text;
    if (sniffDocument(text) !== 'feed') continue;
    const outcome = await parseBody(
      text,
      res.meta,
      res.bodyHash,
      candidate.url,
      candidate.url,
      deps,
    );
    if (outcome.kind === 'parsed') return outcome;
  }
  const tried = candidates.length ? ` (tried ${candidates.map((c) => c.url).join(', ')})` : '';
  return {
    kind: 'error',
    errorClass: 'parse',
    message: `discover: the URL is a web page and no feed was found in it${tried}`,
    status: pageMeta.status,
    retryAfterSeconds: null,
    durationMs: pageMeta.durationMs,
  };
}

/** `url` with the feed's user:password when it is on the origin (scheme, host, port) of the subscribed URL they were
 *  given for; a feed discovered on, or moved to, another origin is fetched without them (RFC 9110 §11.6.2: a
 *  protection space is scoped to its origin; fetch.ts likewise drops them on a redirect to another origin). */
function withCredentials(url: string, target: RefreshTarget): string {
  if (!target.credentials) return url;
  const u = new URL(url);
  if (originOf(u) !== originOf(target.url)) return url;
  const colon = target.credentials.indexOf(':');
  u.username = encodeURIComponent(target.credentials.slice(0, colon));
  u.password = encodeURIComponent(target.credentials.slice(colon + 1));
  return u.toString();
}

/** Scheme, host and port (URL.host leaves a default port out), or undefined for an unparseable URL. */
function originOf(url: string | URL): string | undefined {
  try {
    const u = typeof url === 'string' ? new URL(url) : url;
    return `${u.protocol}//${u.host}`;
  } catch {
    return undefined;
  }
}

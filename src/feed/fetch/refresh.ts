// One feed's refresh, network and parsing only (no storage): fetch → read (decode, parse, key:
// feed/parse/read-document.ts, off the main thread), or discover the feed behind an HTML page; all of it within
// poll.timeout_seconds from its start.
import type { Dispatcher } from 'undici';
import type { DiscoveredFeed } from './discover.ts';
import { fetchFeed, type FetchMeta } from './fetch.ts';
import type { EntryIdentity, KeyBase } from '../identity/keys.ts';
import type { DocumentReply, DocumentRequest, KnownEntries } from '../parse/read-document.ts';
import { EntryList } from '../entry-list.ts';
import type { FeedMeta } from '../types.ts';

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
  /** What the feed's history holds, asked for when a document is to be read (feed/parse/read-document.ts KnownEntries);
   *  absent for a feed awaiting its baseline. */
  known?: () => Promise<KnownEntries | undefined>;
};
/** What to fetch for a feed. A feed awaiting its baseline is fetched without validators: a 304 would leave it without
 *  one, and the entries of its next change would be swallowed by that late baseline. */
export function refreshTarget(feed: {
  url: string;
  fetch_url: string;
  credentials: string | null;
  etag: string | null;
  last_modified: string | null;
  body_hash: string | null;
  baseline_at: string | null;
  discovered_url: string | null;
}): RefreshTarget {
  const fresh = feed.baseline_at === null;
  return {
    url: feed.url,
    fetchUrl: feed.fetch_url,
    credentials: feed.credentials,
    etag: fresh ? null : feed.etag,
    lastModified: fresh ? null : feed.last_modified,
    bodyHash: fresh ? null : feed.body_hash,
    discovered: feed.discovered_url !== null,
    keyBase: feed.discovered_url ?? feed.url,
  };
}

export type RefreshDeps = {
  agent: Dispatcher;
  /** Reads fetched bytes by `deadline` (a performance.now() time): feed/parse/pool.ts, or readDocument inline in
   *  tests. */
  read: (doc: DocumentRequest, deadline: number) => Promise<DocumentReply>;
  userAgent: string;
  maxBodyBytes: number;
  connectTimeoutMs: number;
  /** The whole refresh (every fetch, redirects and discovery included, and reading) ends within this. */
  totalTimeoutMs: number;
  now: () => Date;
};
/** A feed document as read (decoded, parsed, its entries keyed), whatever brought its bytes: a poll or a push. */
export type FeedDocument = {
  parsed: FeedMeta;
  /** The document's entries, each read from the parse thread's packed form where it is needed. */
  entries: EntryList;
  /** Each entry's identity candidates (feed/identity/keys.ts), computed where the document is read, outside any
   *  transaction. */
  identities: EntryIdentity[];
  /** Each entry's content hash (feed/identity/content-hash.ts), computed with the identities. */
  contentHashes: string[];
  /** Each entry's source hash (feed/parse/entry.ts sourceHash), null for one read finished. */
  sourceHashes: (string | null)[];
  base: KeyBase;
};
export type RefreshOutcome =
  | ({
      kind: 'parsed';
      meta: FetchMeta;
      bodyHash: string;
      discoveredUrl: string | null;
    } & FeedDocument)
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

/** Fetches and reads one feed within deps.totalTimeoutMs from now. Never throws: every failure is an 'error' outcome
 *  with its class and message. */
export async function refreshFeed(
  target: RefreshTarget,
  deps: RefreshDeps,
): Promise<RefreshOutcome> {
  const deadline = performance.now() + deps.totalTimeoutMs;
  const res = await fetchOnce(target.fetchUrl, target, deps, true, deadline);
  if (res.kind !== 'ok') return res;
  const known = await knownOf(target);
  const reply = await deps.read(
    { ...document(res, target.discovered ? 'feed' : 'page-or-feed', target.keyBase), known },
    deadline,
  );
  if (reply.kind === 'page') return discover(reply.links, res.meta, target, deps, deadline);
  return outcomeOf(reply, res, null, target.keyBase);
}

/** The feed's known entries; none when the question fails (the document is then read whole, as a new one is). */
async function knownOf(target: RefreshTarget): Promise<KnownEntries | undefined> {
  try {
    return await target.known?.();
  } catch {
    return undefined;
  }
}

type Fetched =
  | { kind: 'ok'; meta: FetchMeta; body: Uint8Array; bodyHash: string }
  | Exclude<RefreshOutcome, { kind: 'parsed' }>;

/** One fetch with what is left of the refresh's time. */
async function fetchOnce(
  url: string,
  target: RefreshTarget,
  deps: RefreshDeps,
  conditional: boolean,
  deadline: number,
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
      totalTimeoutMs: Math.max(1, Math.round(deadline - performance.now())),
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

/** What to read of a fetched body: its bytes (handed over), its type, and the URLs it is read against. */
function document(
  res: Extract<Fetched, { kind: 'ok' }>,
  mode: DocumentRequest['mode'],
  keyBase: string,
): DocumentRequest {
  return {
    bytes: res.body,
    contentType: res.meta.contentType,
    mode,
    parse: { baseUrl: res.meta.finalUrl, contentLocation: res.meta.contentLocation },
    keyBase,
  };
}

/** A read document as a refresh outcome: parsed, or a parse error (anything but a feed is one). */
function outcomeOf(
  reply: DocumentReply,
  res: Extract<Fetched, { kind: 'ok' }>,
  discoveredUrl: string | null,
  keyBase: string,
): RefreshOutcome {
  if (reply.kind === 'feed') {
    const base = { keyBase, documentUrl: res.meta.finalUrl };
    return {
      kind: 'parsed',
      meta: res.meta,
      bodyHash: res.bodyHash,
      parsed: reply.parsed,
      entries: new EntryList(reply.entries, reply.publishedAt),
      identities: reply.identities,
      contentHashes: reply.contentHashes,
      sourceHashes: reply.sourceHashes,
      base,
      discoveredUrl,
    };
  }
  const message =
    reply.kind !== 'error'
      ? 'parse: not a feed'
      : reply.parseError || reply.message.startsWith('parse')
        ? reply.message
        : `parse: unable to parse the feed: ${reply.message}`;
  return {
    kind: 'error',
    errorClass: 'parse',
    message,
    status: res.meta.status,
    retryAfterSeconds: null,
    durationMs: res.meta.durationMs,
  };
}

/** The URL is a web page: try its advertised feed links, then common paths, and watch the first that parses; all of
 *  it within what is left of the refresh's time. */
async function discover(
  links: DiscoveredFeed[],
  pageMeta: FetchMeta,
  target: RefreshTarget,
  deps: RefreshDeps,
  deadline: number,
): Promise<RefreshOutcome> {
  const candidates = links.slice(0, MAX_DISCOVERY_CANDIDATES);
  const tried: string[] = [];
  for (const candidate of candidates) {
    if (performance.now() >= deadline) break;
    tried.push(candidate.url);
    const res = await fetchOnce(candidate.url, target, deps, false, deadline);
    if (res.kind !== 'ok') continue;
    const reply = await deps.read(document(res, 'candidate', candidate.url), deadline);
    if (reply.kind === 'feed') return outcomeOf(reply, res, candidate.url, candidate.url);
  }
  const late = tried.length < candidates.length;
  const list = tried.length ? ` (tried ${tried.join(', ')})` : '';
  return {
    kind: 'error',
    errorClass: late ? 'network' : 'parse',
    message: late
      ? `discover: the URL is a web page and no feed was found in it within ${deps.totalTimeoutMs / 1000} s${list}`
      : `discover: the URL is a web page and no feed was found in it${list}`,
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

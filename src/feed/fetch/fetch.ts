// One conditional GET of a feed URL with manual redirects, timeouts, decoded-size cap; failures become results.
import { STATUS_CODES } from 'node:http';
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import type { Dispatcher } from 'undici';
import { readBody } from './body.ts';
import { cacheSeconds, headerValue, parseRetryAfter, resolveHeaderUrl } from '../../net/headers.ts';
import { describeError, HopError } from './errors.ts';

export type FetchRequest = {
  url: string;
  etag: string | null;
  lastModified: string | null;
  lastBodyHash: string | null;
};
export type FetchOptions = {
  agent: Dispatcher;
  userAgent: string;
  maxBodyBytes: number;
  connectTimeoutMs?: number;
  totalTimeoutMs?: number;
  stallTimeoutMs?: number;
  maxRedirects?: number;
  now: Date;
};
export type FetchMeta = {
  status: number;
  finalUrl: string;
  permanentRedirectTo: string | null;
  etag: string | null;
  lastModified: string | null;
  contentType: string | null;
  contentLocation: string | null;
  cacheSeconds: number | null;
  durationMs: number;
  /** Every Link header field value, joined (RFC 8288): WebSub hub discovery reads it first (feed/websub.ts). */
  linkHeader?: string | null;
};
export type FetchResult =
  | ({ kind: 'ok'; body: Uint8Array; bodyHash: string } & FetchMeta)
  | ({ kind: 'unchanged'; reason: 'not_modified' | 'same_hash' } & FetchMeta)
  | ({ kind: 'gone' } & FetchMeta)
  | ({ kind: 'throttled'; retryAfterSeconds: number } & FetchMeta)
  | {
      kind: 'error';
      errorClass: 'network' | 'http';
      status: number | null;
      message: string;
      finalUrl: string;
      durationMs: number;
      retryAfterSeconds: number | null;
    };

const ACCEPT =
  'application/rss+xml, application/atom+xml, application/feed+json, application/json;q=0.9, ' +
  'application/xml;q=0.8, text/xml;q=0.8, text/html;q=0.7, */*;q=0.5';

type Settings = Required<Omit<FetchOptions, 'agent' | 'userAgent' | 'now'>>;
type Final = { res: Dispatcher.ResponseData; url: string; permanentRedirectTo: string | null };

/** Strips user:password from a URL for display and requests; authorization is the matching "Basic ..." value
 *  or null. Never throws: an unparseable URL comes back unchanged. */
export function splitCredentials(url: string): { url: string; authorization: string | null } {
  // Userinfo ends at an '@' (WHATWG URL): without one there is nothing to split, and no URL to parse on every poll.
  if (!url.includes('@')) return { url, authorization: null };
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { url, authorization: null };
  }
  if (parsed.username === '' && parsed.password === '') return { url, authorization: null };
  const user = safeDecode(parsed.username);
  const password = safeDecode(parsed.password);
  parsed.username = '';
  parsed.password = '';
  // RFC 7617: base64 of "user:password" in UTF-8.
  return {
    url: parsed.href,
    authorization: `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`,
  };
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** One conditional GET following up to maxRedirects redirects. Never throws: every failure is a 'error'
 *  result ('network' = no complete response; 'http' = an unusable response) with a message free of credentials. */
export async function fetchFeed(req: FetchRequest, opts: FetchOptions): Promise<FetchResult> {
  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  const settings: Settings = {
    maxBodyBytes: opts.maxBodyBytes,
    connectTimeoutMs: opts.connectTimeoutMs ?? 10_000,
    totalTimeoutMs: opts.totalTimeoutMs ?? 30_000,
    stallTimeoutMs: opts.stallTimeoutMs ?? 10_000,
    maxRedirects: opts.maxRedirects ?? 10,
  };
  // The total deadline: a timer cleared when the fetch ends. AbortSignal.timeout() would leave a timer per fetch
  // pending for the whole timeout, long after a quick 304, and costs more to make.
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), settings.totalTimeoutMs);
  const start = splitCredentials(req.url);
  let currentUrl = start.url;
  try {
    const final = await followRedirects(
      req,
      opts,
      settings,
      start,
      deadline.signal,
      (url) => (currentUrl = url),
    );
    return await classify(final, req, opts, settings, elapsed);
  } catch (err) {
    const described = describeError(err, {
      url: currentUrl,
      settings,
      aborted: deadline.signal.aborted,
    });
    return {
      kind: 'error',
      ...described,
      finalUrl: currentUrl,
      durationMs: elapsed(),
      retryAfterSeconds: null,
    };
  } finally {
    clearTimeout(timer);
  }
}

/** Sends the request and follows 301/302/303/307/308 by hand; returns the first non-redirect response. */
async function followRedirects(
  req: FetchRequest,
  opts: FetchOptions,
  settings: Settings,
  start: { url: string; authorization: string | null },
  signal: AbortSignal,
  onHop: (url: string) => void,
): Promise<Final> {
  const visited = new Set<string>();
  let url = start.url;
  let origin: string | undefined; // the first hop's
  let allPermanent = true;
  for (let hop = 0; ; hop++) {
    onHop(url);
    const target = new URL(url); // once per hop: undici takes it as it is
    const protocol = target.protocol;
    if (protocol !== 'http:' && protocol !== 'https:')
      throw new HopError('http', null, `unsupported URL scheme "${protocol}"`);
    visited.add(url);
    origin ??= target.origin;
    // Credentials go only to the origin they were given for (like browsers and curl without --location-trusted).
    const authorization = target.origin === origin ? start.authorization : null;
    const res = await request(target, {
      dispatcher: opts.agent,
      method: 'GET',
      headers: requestHeaders(req, opts.userAgent, authorization),
      signal,
      headersTimeout: settings.totalTimeoutMs,
      bodyTimeout: settings.stallTimeoutMs,
    });
    if (![301, 302, 303, 307, 308].includes(res.statusCode)) {
      return { res, url, permanentRedirectTo: hop > 0 && allPermanent ? url : null };
    }
    await res.body.dump().catch(() => {});
    const location = resolveHeaderUrl(headerValue(res.headers, 'location'), url);
    if (location === null)
      throw new HopError(
        'http',
        res.statusCode,
        `HTTP ${res.statusCode} redirect without a valid Location`,
      );
    if (hop >= settings.maxRedirects)
      throw new HopError('http', res.statusCode, `more than ${settings.maxRedirects} redirects`);
    const next = splitCredentials(location.split('#')[0] ?? location).url;
    if (visited.has(next)) throw new HopError('http', res.statusCode, `redirect loop at ${next}`);
    allPermanent &&= res.statusCode === 301 || res.statusCode === 308;
    url = next;
  }
}

function requestHeaders(
  req: FetchRequest,
  userAgent: string,
  authorization: string | null,
): Record<string, string> {
  const headers: Record<string, string> = {
    'user-agent': userAgent,
    accept: ACCEPT,
    // undici's request() does not decompress; feed/fetch/body.ts does, so the decoded cap holds while streaming.
    'accept-encoding': 'br, gzip, deflate',
  };
  if (req.etag !== null) headers['if-none-match'] = req.etag;
  if (req.lastModified !== null) headers['if-modified-since'] = req.lastModified;
  if (authorization !== null) headers.authorization = authorization;
  return headers;
}

/** Maps the final response to a result, reading the body only for 2xx. */
async function classify(
  final: Final,
  req: FetchRequest,
  opts: FetchOptions,
  settings: Settings,
  elapsed: () => number,
): Promise<FetchResult> {
  const { res, url } = final;
  const status = res.statusCode;
  const retryAfter = parseRetryAfter(headerValue(res.headers, 'retry-after'), opts.now);
  if (status < 200 || status >= 300) {
    await res.body.dump().catch(() => {});
    if (status === 304) {
      // A 304 may omit validators; the stored ones stay valid (RFC 9110 §15.4.5).
      const meta = metaOf(final, opts.now, elapsed());
      return {
        kind: 'unchanged',
        reason: 'not_modified',
        ...meta,
        etag: meta.etag ?? req.etag,
        lastModified: meta.lastModified ?? req.lastModified,
      };
    }
    if (status === 410) return { kind: 'gone', ...metaOf(final, opts.now, elapsed()) };
    if ((status === 429 || status === 503) && retryAfter !== null) {
      return {
        kind: 'throttled',
        retryAfterSeconds: retryAfter,
        ...metaOf(final, opts.now, elapsed()),
      };
    }
    const message = `fetch: ${hostOf(url)} answered HTTP ${status}${STATUS_CODES[status] ? ` ${STATUS_CODES[status]}` : ''}`;
    return {
      kind: 'error',
      errorClass: 'http',
      status,
      message,
      finalUrl: url,
      durationMs: elapsed(),
      retryAfterSeconds: retryAfter,
    };
  }
  const length = Number(headerValue(res.headers, 'content-length') ?? NaN);
  const body = await readBody(
    res.body,
    headerValue(res.headers, 'content-encoding'),
    settings.maxBodyBytes,
    Number.isSafeInteger(length) && length >= 0 ? length : null,
  );
  const meta = metaOf(final, opts.now, elapsed());
  if (req.lastBodyHash !== null && body.hash === req.lastBodyHash)
    return { kind: 'unchanged', reason: 'same_hash', ...meta };
  return { kind: 'ok', body: body.bytes, bodyHash: body.hash, ...meta };
}

function metaOf(final: Final, now: Date, durationMs: number): FetchMeta {
  const h = final.res.headers;
  return {
    status: final.res.statusCode,
    finalUrl: final.url,
    permanentRedirectTo: final.permanentRedirectTo,
    etag: headerValue(h, 'etag'),
    lastModified: headerValue(h, 'last-modified'),
    contentType: headerValue(h, 'content-type'),
    contentLocation: resolveHeaderUrl(headerValue(h, 'content-location'), final.url),
    cacheSeconds: cacheSeconds(h, now),
    durationMs,
    linkHeader: [h.link ?? []].flat().join(', ') || null,
  };
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

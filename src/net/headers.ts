// Pure readers of HTTP response headers, for the feed fetcher and the webhook sender: Retry-After, freshness, single values.
/** Response headers as undici and node:http expose them. */
export type HeaderMap = Record<string, string | string[] | undefined>;

/** The first value of a header, or null when absent or empty. */
export function headerValue(headers: HeaderMap, name: string): string | null {
  const raw = headers[name.toLowerCase()];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value === undefined || value.trim() === '' ? null : value.trim();
}

/** Seconds to wait from a Retry-After value (delta-seconds or HTTP-date relative to now, RFC 9110 §10.2.3);
 *  null when absent or unparseable; a date in the past gives 0. */
export function parseRetryAfter(value: string | null, now: Date): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number.parseInt(text, 10);
  const date = parseHttpDate(text);
  if (date === null) return null;
  return Math.max(0, Math.ceil((date - now.getTime()) / 1000));
}

/** Remaining freshness in seconds: Cache-Control max-age minus Age (s-maxage is for shared caches and
 *  ignored), else Expires - now (an invalid Expires means already expired, RFC 9111 §5.3); null if neither. */
export function cacheSeconds(headers: HeaderMap, now: Date): number | null {
  const maxAge = maxAgeDirective(headerValue(headers, 'cache-control'));
  if (maxAge !== null) {
    const age = Number.parseInt(headerValue(headers, 'age') ?? '0', 10);
    return Math.max(0, maxAge - (Number.isFinite(age) ? age : 0));
  }
  const expires = headerValue(headers, 'expires');
  if (expires === null) return null;
  const date = parseHttpDate(expires);
  if (date === null) return 0;
  return Math.max(0, Math.floor((date - now.getTime()) / 1000));
}

/** The max-age value of a Cache-Control header, or null (RFC 9111 §5.2.2.1). */
function maxAgeDirective(cacheControl: string | null): number | null {
  if (cacheControl === null) return null;
  for (const directive of cacheControl.split(',')) {
    const [name = '', arg] = directive.split('=', 2).map((s) => s.trim());
    if (name.toLowerCase() !== 'max-age' || arg === undefined) continue;
    const seconds = arg.replace(/^"|"$/g, '');
    if (/^\d+$/.test(seconds)) return Number.parseInt(seconds, 10);
  }
  return null;
}

/** Milliseconds since the epoch of an HTTP-date (IMF-fixdate, RFC 850 or asctime), or null. */
function parseHttpDate(text: string): number | null {
  // Date.parse handles all three HTTP-date forms in V8; demand a letter so bare numbers are not years.
  if (!/[a-z]/i.test(text)) return null;
  // asctime has no zone but is UTC (RFC 9110 §5.6.7); without a suffix V8 would read it as local time.
  const zoned = /(GMT|UTC|[+-]\d{4})\s*$/i.test(text) ? text : `${text} GMT`;
  const ms = Date.parse(zoned);
  return Number.isNaN(ms) ? null : ms;
}

/** An absolute URL from a possibly relative header value (Location, Content-Location), or null. */
export function resolveHeaderUrl(value: string | null, base: string): string | null {
  if (value === null) return null;
  try {
    return new URL(value, base).href;
  } catch {
    return null;
  }
}

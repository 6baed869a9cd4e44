// URL resolution for parsed feeds: xml:base → Content-Location → fetch URL, unsafe schemes dropped.

// Schemes an entry or enclosure link may carry; javascript:, data:, vbscript:, file: and the rest are dropped.
const SAFE_SCHEMES = new Set(['http:', 'https:', 'ftp:', 'magnet:']);

/** Resolves `raw` against `base` (either may be relative or missing); null when empty, unparseable
 *  or of an unsafe scheme. */
export function resolveUrl(raw: string | null | undefined, base: string | null): string | null {
  const s = raw?.trim();
  if (!s) return null;
  let url: URL;
  try {
    url = base ? new URL(s, base) : new URL(s);
  } catch {
    return null;
  }
  return SAFE_SCHEMES.has(url.protocol) ? url.href : null;
}

/** Base for a child scope: its xml:base resolved against the parent base when usable, else the parent
 *  (a malformed or unsafe xml:base is ignored, as feedparser does). */
export function childBase(
  xmlBase: string | null | undefined,
  parent: string | null,
): string | null {
  return resolveUrl(xmlBase, parent) ?? parent;
}

/** Document base per RFC 3986 §5.1: Content-Location (resolved against the fetch URL) when usable,
 *  else the fetch URL itself. */
export function documentBase(
  baseUrl: string,
  contentLocation: string | null | undefined,
): string | null {
  const fetched = resolveUrl(baseUrl, null);
  return resolveUrl(contentLocation, fetched) ?? fetched;
}

/** `raw` resolved against `base`, whatever its scheme; `raw` as written when either does not parse. For URLs
 *  inside HTML, which the sanitizer filters by scheme afterwards. */
export function absoluteUrl(raw: string, base: string | null): string {
  const s = raw.trim();
  if (!s || !base) return raw;
  try {
    return new URL(s, base).href;
  } catch {
    return raw;
  }
}

// The URL an entry is known by: tracking parameters and session ids stripped, enclosures without their query, and
// links keyed against the subscribed URL rather than wherever redirects led (pure; the delivered URLs are untouched).

/** Query (and fragment) parameters that only track a click or a session, never name content; compared lower-cased.
 *  Names that can identify content (`id`, `p`, `ref`, `sid`, `source`, `session`) are deliberately absent. */
const TRACKING_PARAMS: ReadonlySet<string> = new Set([
  // Ad and social click ids
  'fbclid', // Facebook
  'gclid', // Google Ads
  'gclsrc',
  'dclid', // Google Display
  'gbraid',
  'wbraid',
  'msclkid', // Microsoft Ads
  'yclid', // Yandex
  'ysclid',
  'twclid', // X / Twitter
  'ttclid', // TikTok
  'li_fat_id', // LinkedIn
  'igshid', // Instagram
  'igsh',
  'epik', // Pinterest
  'srsltid', // Google Search
  'ref_src', // Twitter embeds
  'ref_url',
  // Mail and marketing tools
  'mc_cid', // Mailchimp
  'mc_eid',
  '_hsenc', // HubSpot
  '_hsmi',
  '__hstc',
  '__hssc',
  '__hsfp',
  'hsctatracking',
  'mkt_tok', // Marketo
  'oly_anon_id', // Omeda
  'oly_enc_id',
  'rb_clickid',
  's_cid', // Adobe
  'vero_conv', // Vero
  'vero_id',
  'wickedid',
  'ck_subscriber_id', // ConvertKit
  '_openstat',
  'xtor', // AT Internet, usually in the fragment
  '_ga', // Google Analytics cross-domain linker
  '_gl',
  // Matomo / Piwik campaigns
  'pk_campaign',
  'pk_kwd',
  'pk_keyword',
  'pk_source',
  'pk_medium',
  'pk_content',
  'pk_cid',
  // Server session ids
  'phpsessid',
  'jsessionid',
  'cfid', // ColdFusion
  'cftoken',
  'oscsid', // osCommerce
  'zenid', // Zen Cart
]);

/** Parameter-name prefixes that only track: Google Analytics campaigns, Matomo campaigns, HubSpot ads, ASP sessions. */
const TRACKING_PREFIXES: readonly string[] = ['utm_', 'mtm_', 'hsa_', 'aspsessionid'];

/** True when a query parameter named `name` (raw, possibly percent-encoded) only tracks a click or a session. */
export function isTrackingParam(name: string): boolean {
  let n: string;
  try {
    n = decodeURIComponent(name).toLowerCase();
  } catch {
    n = name.toLowerCase();
  }
  return TRACKING_PARAMS.has(n) || TRACKING_PREFIXES.some((p) => n.startsWith(p));
}

/** `url` without tracking parameters in its query or fragment and without a `;jsessionid=` path parameter. Every other
 *  byte is kept as written (no re-encoding, no reordering), so a URL with nothing to strip comes back unchanged. */
export function stripTracking(url: string): string {
  const hashAt = url.indexOf('#');
  const beforeHash = hashAt < 0 ? url : url.slice(0, hashAt);
  const fragment = hashAt < 0 ? null : url.slice(hashAt + 1);
  const queryAt = beforeHash.indexOf('?');
  const path = queryAt < 0 ? beforeHash : beforeHash.slice(0, queryAt);
  const query = queryAt < 0 ? null : beforeHash.slice(queryAt + 1);
  // Java servlets put the session in the path (RFC 3986 §3.3 allows ";" parameters): /post;jsessionid=ABC?x=1.
  const cleanPath = path.replace(/;jsessionid=[^/;?#]*/gi, '');
  const cleanQuery = query === null ? null : withoutTracking(query);
  // A fragment made only of tracking parameters (#xtor=RSS-1, #utm_source=…) is dropped; any other fragment stays.
  const cleanFragment =
    fragment !== null && fragment.includes('=') && withoutTracking(fragment) === ''
      ? null
      : fragment;
  let out = cleanPath;
  // A query left empty by the stripping goes with its "?"; one written empty ("…?") stays as written.
  if (cleanQuery !== null && (cleanQuery !== '' || query === '')) out += `?${cleanQuery}`;
  if (cleanFragment !== null) out += `#${cleanFragment}`;
  return out;
}

/** The `&`-separated parameters of a query minus the tracking ones, in their order and spelling; the query itself
 *  when none tracks. */
function withoutTracking(query: string): string {
  const parts = query.split('&');
  const kept = parts.filter((part) => !isTrackingParam(part.split('=', 1)[0] ?? ''));
  return kept.length === parts.length ? query : kept.filter((p) => p !== '').join('&');
}

/** How an enclosure is known: scheme, host and path. The query is left out entirely: CDNs put rotating tokens and
 *  signatures there (?token=…, ?Expires=…&Signature=…), so the same file arrives under a new URL on every fetch. */
export function enclosureIdentity(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return url.split(/[?#]/, 1)[0] ?? url;
  }
}

/** Moves links as if the document had been fetched from `keyBase` (the subscribed URL): a link on the host the fetch
 *  was redirected to goes to the subscribed URL's origin, so relative links keep their key when a feed starts
 *  redirecting elsewhere. The function returns null when nothing changes (no cross-origin redirect, or a link to a
 *  third host). Origins are parsed once per document. */
export function linkKeyer(keyBase: string, documentUrl: string): (link: string) => string | null {
  const base = originOf(keyBase);
  const fetched = originOf(documentUrl);
  if (base === null || fetched === null || base === fetched) return () => null;
  return (link) =>
    link.startsWith(fetched) && originOf(link) === fetched
      ? base + link.slice(fetched.length)
      : null;
}

function originOf(url: string): string | null {
  try {
    const u = new URL(url);
    return u.origin === 'null' ? null : u.origin;
  } catch {
    return null;
  }
}

// Feed autodiscovery: finds feed URLs announced by an HTML page, plus common feed paths as guesses.

export type DiscoveredFeed = {
  url: string;
  type: string | null;
  title: string | null;
  guessed: boolean;
};

/** Announced feed types, best first (RSS Autodiscovery; Atom RFC 4287 §7; JSON Feed 1.1 "Discovery"). */
const FEED_TYPES: readonly string[] = [
  'application/rss+xml',
  'application/atom+xml',
  'application/rdf+xml',
  'application/feed+json',
  'application/json',
];

/** Paths tried when a page announces nothing, in the order most sites use them. */
const COMMON_PATHS: readonly string[] = [
  '/feed',
  '/rss',
  '/atom.xml',
  '/feed.xml',
  '/rss.xml',
  '/index.xml',
  '/feed.json',
];

type Tag = { name: string; attrs: Map<string, string> };

/** HTML page → candidate feed URLs, best first: <link rel="alternate"> feeds (resolved against <base href>, then
 *  pageUrl) in document order with plain application/json last, then common paths as guesses. Pure; never throws. */
export function discoverFeedLinks(html: string, pageUrl: string): DiscoveredFeed[] {
  try {
    return discover(html, pageUrl);
  } catch {
    return [];
  }
}

/** The URL of the first <link rel="…"> carrying `rel` (say "hub" or "self", WebSub §4), resolved against <base href>,
 *  then pageUrl; null when there is none. Pure; never throws. */
export function discoverRelLink(html: string, pageUrl: string, rel: string): string | null {
  try {
    const tags = scanTags(html);
    const baseHref = tags.find((t) => t.name === 'base' && t.attrs.has('href'))?.attrs.get('href');
    const base = resolveHttp(baseHref ?? '', pageUrl) ?? pageUrl;
    for (const tag of tags) {
      if (tag.name !== 'link') continue;
      if (!(tag.attrs.get('rel') ?? '').toLowerCase().split(/\s+/).includes(rel)) continue;
      const url = resolveHttp(tag.attrs.get('href') ?? '', base);
      if (url !== null && (tag.attrs.get('href') ?? '').trim() !== '') return url;
    }
    return null;
  } catch {
    return null;
  }
}

function discover(html: string, pageUrl: string): DiscoveredFeed[] {
  const tags = scanTags(html);
  const baseHref = tags.find((t) => t.name === 'base' && t.attrs.has('href'))?.attrs.get('href');
  const base = resolveHttp(baseHref ?? '', pageUrl) ?? pageUrl;
  const announced: (DiscoveredFeed & { rank: number; order: number })[] = [];
  tags.forEach((tag, order) => {
    const feed = feedFromTag(tag, base);
    if (feed !== null) announced.push({ ...feed, order });
  });
  announced.sort((a, b) => a.rank - b.rank || a.order - b.order);
  const result: DiscoveredFeed[] = [];
  const seen = new Set<string>();
  const add = (feed: DiscoveredFeed): void => {
    if (seen.has(feed.url)) return;
    seen.add(feed.url);
    result.push(feed);
  };
  for (const { url, type, title } of announced) add({ url, type, title, guessed: false });
  for (const path of COMMON_PATHS) {
    const url = resolveHttp(path, pageUrl);
    if (url !== null) add({ url, type: null, title: null, guessed: true });
  }
  return result;
}

/** A feed announced by <link rel="alternate" type="…feed type…" href>, or null. */
function feedFromTag(tag: Tag, base: string): (DiscoveredFeed & { rank: number }) | null {
  if (tag.name !== 'link') return null;
  const rel = (tag.attrs.get('rel') ?? '').toLowerCase().split(/\s+/);
  if (!rel.includes('alternate')) return null;
  const type = (tag.attrs.get('type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  const rank = FEED_TYPES.indexOf(type);
  if (rank < 0) return null;
  const href = tag.attrs.get('href');
  if (href === undefined || href.trim() === '') return null;
  const url = resolveHttp(href, base);
  // WordPress announces its REST API as rel=alternate application/json on every page; it is never a feed.
  if (url === null || (type === 'application/json' && /\/wp-json\//.test(url))) return null;
  const title = tag.attrs.get('title')?.trim() || null;
  return { url, type, title, guessed: false, rank: type === 'application/json' ? 1 : 0 };
}

/** Start tags named link or base, outside comments, scripts, styles and templates. Linear in the input. */
function scanTags(html: string): Tag[] {
  const text = html
    .replace(/<!--[\s\S]*?(?:-->|$)/g, ' ')
    .replace(/<(script|style|template|textarea)\b[\s\S]*?(?:<\/\1\s*>|$)/gi, ' ');
  const tags: Tag[] = [];
  const startRe = /<(link|base)(?=[\s/>])/gi;
  for (let m = startRe.exec(text); m !== null; m = startRe.exec(text)) {
    const end = tagEnd(text, startRe.lastIndex);
    // Real link tags are short; bounding the attribute text keeps hostile pages cheap.
    const attrs = text.slice(startRe.lastIndex, Math.min(end, startRe.lastIndex + MAX_TAG_CHARS));
    tags.push({ name: (m[1] ?? '').toLowerCase(), attrs: parseAttributes(attrs) });
    startRe.lastIndex = end;
  }
  return tags;
}

const MAX_TAG_CHARS = 16_384;

/** Index of the ">" closing a start tag, skipping quoted attribute values; the text length if unclosed. */
function tagEnd(text: string, from: number): number {
  let quote = '';
  let previous = '';
  for (let i = from; i < text.length; i++) {
    const c = text[i] ?? '';
    if (quote !== '') {
      if (c === quote) quote = '';
      continue;
    }
    if (c === '>') return i;
    if ((c === '"' || c === "'") && previous === '=') quote = c;
    if (!/\s/.test(c)) previous = c;
  }
  return text.length;
}

/** Attribute name → decoded value; the first occurrence of a name wins (HTML parsing rules). */
function parseAttributes(source: string): Map<string, string> {
  const attrs = new Map<string, string>();
  const attrRe = /([^\s"'<>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g;
  for (let m = attrRe.exec(source); m !== null; m = attrRe.exec(source)) {
    const name = (m[1] ?? '').toLowerCase();
    if (!attrs.has(name)) attrs.set(name, decodeEntities(m[2] ?? m[3] ?? m[4] ?? ''));
  }
  return attrs;
}

const NAMED_ENTITIES: Readonly<Record<string, string>> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: '\u00a0',
};

/** Decodes numeric references and the few named ones that occur in URLs and titles. */
function decodeEntities(value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, ref: string) => {
    if (ref.startsWith('#')) {
      const code =
        ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return NAMED_ENTITIES[ref.toLowerCase()] ?? whole;
  });
}

/** An absolute http(s) URL for href against base, or null (other schemes such as android-app: are dropped). */
function resolveHttp(href: string, base: string): string | null {
  let url: URL;
  try {
    url = new URL(href.trim(), base);
  } catch {
    // An unusable base still lets absolute hrefs through.
    if (!URL.canParse(href.trim())) return null;
    url = new URL(href.trim());
  }
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
}

// Maps feedsmith's per-format objects (RSS, Atom, RDF, JSON Feed) onto feedsub's normalized ParsedFeed.
import type { AtomFeed, JsonFeed, RdfFeed, RssFeed } from 'feedsmith';
import { demoronize } from './decode.ts';
import { parseFeedDate } from './parse-dates.ts';
import { childBase, resolveUrl } from './parse-urls.ts';
import type { Enclosure, Entry, ParsedFeed } from './types.ts';

type Feed = Omit<ParsedFeed, 'degraded'>;
type AtomLink = { href?: string; rel?: string; type?: string; length?: number };
type Person = { name?: string; email?: string; link?: string; uri?: string; url?: string };

// sy:updatePeriod (RSS 1.0 Syndication module) in seconds; the update frequency divides it.
const SY_PERIODS: Record<string, number> = {
  hourly: 3600,
  daily: 86400,
  weekly: 604800,
  monthly: 2592000,
  yearly: 31536000,
};

/** RSS 0.9x/2.0 document → normalized feed; `base` is the document base URL. */
export function mapRss(feed: RssFeed.Feed<string>, base: string | null): Feed {
  const feedBase = childBase(feed.xml?.base, base);
  const links = (feed.atom?.links ?? []) as AtomLink[];
  return {
    format: 'rss',
    title: text(feed.title) ?? text(feed.dc?.titles?.[0]),
    site_url:
      resolveUrl(feed.link, feedBase) ?? resolveUrl(pickLink(links, 'alternate')?.href, feedBase),
    ttl_seconds: ttlSeconds(feed.ttl, feed.sy),
    hub_url: resolveUrl(pickLink(links, 'hub')?.href, feedBase),
    self_url: resolveUrl(pickLink(links, 'self')?.href, feedBase),
    entries: (feed.items ?? []).map((item) => rssEntry(item, childBase(item.xml?.base, feedBase))),
  };
}

function rssEntry(item: RssFeed.Item<string>, base: string | null): Entry {
  const guid = text(item.guid?.value);
  const atomLinks = (item.atom?.links ?? []) as AtomLink[];
  // RSS 2.0: a guid is a permalink unless isPermaLink="false"; used only when <link> is missing.
  const permalink =
    item.guid?.isPermaLink !== false && guid && /^https?:\/\//i.test(guid) ? guid : null;
  const enclosures = (item.enclosures ?? []).map((e) => enclosure(e.url, e.type, e.length, base));
  return {
    guid,
    url:
      resolveUrl(item.link, base) ??
      resolveUrl(pickLink(atomLinks, 'alternate')?.href, base) ??
      resolveUrl(permalink, base),
    title: text(item.title) ?? text(item.dc?.titles?.[0]),
    summary: text(item.description) ?? text(item.dc?.descriptions?.[0]),
    content: text(item.content?.encoded),
    authors: uniq([
      ...(item.authors ?? []).map(personName),
      ...(item.dc?.creators ?? []),
      text(item.itunes?.author),
    ]),
    categories: uniq([...(item.categories ?? []).map((c) => c.name), ...(item.dc?.subjects ?? [])]),
    enclosures: compact([...enclosures, ...linkEnclosures(atomLinks, base)]),
    published_at: firstDate(
      item.pubDate,
      ...(item.dc?.dates ?? []),
      ...(item.dcterms?.issued ?? []),
      item.atom?.published,
    ),
    updated_at: firstDate(item.atom?.updated, ...(item.dcterms?.modified ?? [])),
  };
}

/** Atom 1.0 (and 0.3, which feedsmith maps onto 1.0 names) document → normalized feed. */
export function mapAtom(feed: AtomFeed.Feed<string>, base: string | null): Feed {
  const feedBase = childBase(feed.xml?.base, base);
  const links = (feed.links ?? []) as AtomLink[];
  const feedAuthors = (feed.authors ?? []).map(personName);
  return {
    format: 'atom',
    title: text(feed.title?.value),
    site_url: resolveUrl(pickLink(links, 'alternate')?.href, feedBase),
    ttl_seconds: ttlSeconds(undefined, feed.sy),
    hub_url: resolveUrl(pickLink(links, 'hub')?.href, feedBase),
    self_url: resolveUrl(pickLink(links, 'self')?.href, feedBase),
    entries: (feed.entries ?? []).map((e) =>
      atomEntry(e, childBase(e.xml?.base, feedBase), feedAuthors),
    ),
  };
}

function atomEntry(
  entry: AtomFeed.Entry<string>,
  base: string | null,
  feedAuthors: Array<string | undefined>,
): Entry {
  const links = (entry.links ?? []) as AtomLink[];
  // RFC 4287 §4.2.1: an entry without atom:author inherits its source's, then the feed's.
  const own = [...(entry.authors ?? []), ...(entry.source?.authors ?? [])].map(personName);
  return {
    guid: text(entry.id),
    url: resolveUrl(pickLink(links, 'alternate')?.href, base),
    title: text(entry.title?.value),
    summary: text(entry.summary?.value),
    content: text(entry.content?.value),
    authors: uniq([...(own.some(Boolean) ? own : feedAuthors), ...(entry.dc?.creators ?? [])]),
    categories: uniq((entry.categories ?? []).map((c) => c.term ?? c.label)),
    enclosures: compact(linkEnclosures(links, base)),
    published_at: firstDate(
      entry.published,
      ...(entry.dc?.dates ?? []),
      ...(entry.dcterms?.issued ?? []),
    ),
    updated_at: firstDate(entry.updated, ...(entry.dcterms?.modified ?? [])),
  };
}

/** RDF / RSS 1.0 and 0.90 document → normalized feed; rdf:about serves as the item guid. */
export function mapRdf(feed: RdfFeed.Feed<string>, base: string | null): Feed {
  const feedBase = childBase(feed.xml?.base, base);
  const links = (feed.atom?.links ?? []) as AtomLink[];
  return {
    format: 'rdf',
    title: text(feed.title) ?? text(feed.dc?.titles?.[0]),
    site_url: resolveUrl(feed.link, feedBase),
    ttl_seconds: ttlSeconds(undefined, feed.sy),
    hub_url: resolveUrl(pickLink(links, 'hub')?.href, feedBase),
    self_url: resolveUrl(pickLink(links, 'self')?.href, feedBase),
    entries: (feed.items ?? []).map((item) => {
      const b = childBase(item.xml?.base, feedBase);
      return {
        guid: text(item.rdf?.about),
        url: resolveUrl(item.link, b) ?? resolveUrl(item.rdf?.about, b),
        title: text(item.title) ?? text(item.dc?.titles?.[0]),
        summary: text(item.description) ?? text(item.dc?.descriptions?.[0]),
        content: text(item.content?.encoded),
        authors: uniq(item.dc?.creators ?? []),
        categories: uniq(item.dc?.subjects ?? []),
        enclosures: [],
        published_at: firstDate(...(item.dc?.dates ?? []), ...(item.dcterms?.issued ?? [])),
        updated_at: firstDate(...(item.dcterms?.modified ?? [])),
      };
    }),
  };
}

/** JSON Feed 1.0/1.1 document → normalized feed (1.0 `author` arrives as `authors` from feedsmith). */
export function mapJson(feed: JsonFeed.Feed<string>, base: string | null): Feed {
  const feedAuthors = (feed.authors ?? []).map(personName);
  const hub =
    (feed.hubs ?? []).find((h) => /websub|pubsubhubbub/i.test(h.type ?? '')) ?? feed.hubs?.[0];
  return {
    format: 'json',
    title: text(feed.title),
    site_url: resolveUrl(feed.home_page_url, base),
    ttl_seconds: null,
    hub_url: resolveUrl(hub?.url, base),
    self_url: resolveUrl(feed.feed_url, base),
    entries: (feed.items ?? []).map((item) => {
      const own = (item.authors ?? []).map(personName);
      return {
        guid: text(item.id),
        url: resolveUrl(item.url, base) ?? resolveUrl(item.external_url, base),
        title: text(item.title),
        summary: text(item.summary),
        content: text(item.content_html) ?? text(item.content_text),
        authors: uniq(own.some(Boolean) ? own : feedAuthors),
        categories: uniq(item.tags ?? []),
        enclosures: compact(
          (item.attachments ?? []).map((a) => enclosure(a.url, a.mime_type, a.size_in_bytes, base)),
        ),
        published_at: firstDate(item.date_published),
        updated_at: firstDate(item.date_modified),
      };
    }),
  };
}

function ttlSeconds(
  ttlMinutes: number | undefined,
  sy: { updatePeriod?: string; updateFrequency?: number } | undefined,
): number | null {
  if (typeof ttlMinutes === 'number' && Number.isFinite(ttlMinutes) && ttlMinutes > 0)
    return Math.round(ttlMinutes * 60);
  const period = sy?.updatePeriod ? SY_PERIODS[sy.updatePeriod.trim().toLowerCase()] : undefined;
  if (!period) return null;
  const freq =
    typeof sy?.updateFrequency === 'number' && sy.updateFrequency > 0 ? sy.updateFrequency : 1;
  return Math.max(1, Math.round(period / freq));
}

// Atom link choice (RFC 4287 §4.2.7.2: no rel means "alternate"); an HTML alternate wins over others.
function pickLink(links: AtomLink[], rel: string): AtomLink | undefined {
  const matching = links.filter(
    (l) => (l.rel?.trim().toLowerCase() || 'alternate') === rel && l.href,
  );
  return matching.find((l) => !l.type || /html/i.test(l.type)) ?? matching[0];
}

function linkEnclosures(links: AtomLink[], base: string | null): Array<Enclosure | null> {
  return links
    .filter((l) => l.rel?.trim().toLowerCase() === 'enclosure')
    .map((l) => enclosure(l.href, l.type, l.length, base));
}

function enclosure(
  url: string | undefined,
  type: string | undefined,
  length: number | undefined,
  base: string | null,
): Enclosure | null {
  const resolved = resolveUrl(url, base);
  if (!resolved) return null;
  const len = typeof length === 'number' && Number.isFinite(length) && length >= 0 ? length : null;
  return { url: resolved, type: text(type), length: len };
}

// Display string for a person: the name when there is one, else the email or link.
function personName(p: Person | string | undefined): string | undefined {
  if (typeof p === 'string') return p;
  return text(p?.name) ?? text(p?.email) ?? text(p?.link ?? p?.uri ?? p?.url) ?? undefined;
}

function firstDate(...raws: Array<string | undefined>): string | null {
  for (const raw of raws) {
    const iso = parseFeedDate(raw);
    if (iso) return iso;
  }
  return null;
}

function text(value: unknown): string | null {
  if (typeof value === 'number') return String(value);
  if (typeof value !== 'string') return null;
  return demoronize(value.trim()) || null;
}

function uniq(values: Array<string | null | undefined>): string[] {
  const out = new Set<string>();
  for (const v of values) {
    const t = text(v);
    if (t) out.add(t);
  }
  return [...out];
}

function compact<T>(values: Array<T | null>): T[] {
  return values.filter((v): v is T => v !== null);
}

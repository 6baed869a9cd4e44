// Maps feedsmith's per-format objects (RSS, Atom, RDF, JSON Feed) onto feedsub's normalized ParsedFeed.
import type { AtomFeed, JsonFeed, RdfFeed, RssFeed } from 'feedsmith';
import { itemExtras } from './extensions.ts';
import {
  atomText,
  finishEntry,
  guessed,
  html,
  plain,
  titleText,
  type TextOptions,
} from './entry.ts';
import { childBase, resolveUrl } from './urls.ts';
import { TEXT_LINK_REL } from './xml-scan.ts';
import {
  compact,
  enclosure,
  firstDate,
  linkEnclosures,
  personName,
  pickLink,
  plainName,
  text,
  uniq,
  uniqueEnclosures,
  type AtomLink,
} from './values.ts';
import type { Entry, ParsedFeed } from '../types.ts';

type Feed = Omit<ParsedFeed, 'degraded'>;
/** Where relative URLs resolve (the document base) and whether entry HTML is sanitized. */
export type MapOptions = { base: string | null; sanitize: boolean };

// sy:updatePeriod (RSS 1.0 Syndication module) in seconds; the update frequency divides it.
const SY_PERIODS: Record<string, number> = {
  hourly: 3600,
  daily: 86400,
  weekly: 604800,
  monthly: 2592000,
  yearly: 31536000,
};

/** RSS 0.9x/2.0 document → normalized feed; `opts.base` is the document base URL. */
export function mapRss(feed: RssFeed.Feed<string>, opts: MapOptions): Feed {
  const feedBase = childBase(feed.xml?.base, opts.base);
  const links = (feed.atom?.links ?? []) as AtomLink[];
  return {
    format: 'rss',
    title: titleText([guessed(feed.title), guessed(feed.dc?.titles?.[0])]),
    site_url:
      resolveUrl(feed.link, feedBase) ?? resolveUrl(pickLink(links, 'alternate')?.href, feedBase),
    ttl_seconds: ttlSeconds(feed.ttl, feed.sy),
    hub_url: resolveUrl(pickLink(links, 'hub')?.href, feedBase),
    self_url: resolveUrl(pickLink(links, 'self')?.href, feedBase),
    entries: (feed.items ?? []).map((item) =>
      rssEntry(item, { ...opts, base: childBase(item.xml?.base, feedBase) }),
    ),
  };
}

function rssEntry(item: RssFeed.Item<string>, opts: TextOptions): Entry {
  const { base } = opts;
  const guid = text(item.guid?.value);
  const atomLinks = (item.atom?.links ?? []) as AtomLink[];
  // RSS 2.0: a guid is a permalink unless isPermaLink="false"; used only when <link> is missing.
  const permalink =
    item.guid?.isPermaLink !== false && guid && /^https?:\/\//i.test(guid) ? guid : null;
  const extras = itemExtras(item, base);
  const title = text(item.title) ?? text(item.dc?.titles?.[0]);
  const summary = text(item.description) ?? text(item.dc?.descriptions?.[0]);
  return finishEntry(
    {
      guid,
      url:
        resolveUrl(item.link, base) ??
        resolveUrl(pickLink(atomLinks, 'alternate')?.href, base) ??
        resolveUrl(permalink, base),
      title: [guessed(item.title), guessed(item.dc?.titles?.[0]), atomText(item.atom?.title, base)],
      summary: [html(item.description), guessed(item.dc?.descriptions?.[0]), ...extras.summary],
      content: [html(item.content?.encoded), ...extras.content],
      image: extras.image,
      authors: uniq([
        ...(item.authors ?? []).map(personName),
        ...(item.dc?.creators ?? []).map(plainName),
        ...extras.authors,
      ]),
      categories: uniq([
        ...(item.categories ?? []).map((c) => c.name),
        ...(item.dc?.subjects ?? []),
        ...extras.categories,
      ]),
      enclosures: uniqueEnclosures([
        ...(item.enclosures ?? []).map((e) => enclosure(e.url, e.type, e.length, base)),
        ...linkEnclosures(atomLinks, base),
      ]),
      published_at: firstDate(
        item.pubDate,
        ...(item.dc?.dates ?? []),
        ...(item.dcterms?.issued ?? []),
        item.atom?.published,
      ),
      // dc:date, an item's one date, stands for its update too when nothing else gives one (as feedparser and gofeed
      // read it).
      updated_at: firstDate(
        item.atom?.updated,
        ...(item.dcterms?.modified ?? []),
        ...(item.dc?.dates ?? []),
      ),
      key_source: {
        title,
        body: text(item.content?.encoded) ?? summary,
        ...idOf(item.atom?.id, item.dc?.identifiers?.[0]),
      },
    },
    opts,
  );
}

/** Atom 1.0 (and 0.3, which feedsmith maps onto 1.0 names) document → normalized feed. */
export function mapAtom(feed: AtomFeed.Feed<string>, opts: MapOptions): Feed {
  const feedBase = childBase(feed.xml?.base, opts.base);
  const links = (feed.links ?? []) as AtomLink[];
  const feedAuthors = (feed.authors ?? []).map(personName);
  return {
    format: 'atom',
    title: titleText([atomText(feed.title, feedBase)]),
    site_url: resolveUrl(pickLink(links, 'alternate')?.href, feedBase),
    ttl_seconds: ttlSeconds(undefined, feed.sy),
    hub_url: resolveUrl(pickLink(links, 'hub')?.href, feedBase),
    self_url: resolveUrl(pickLink(links, 'self')?.href, feedBase),
    entries: (feed.entries ?? []).map((e) =>
      atomEntry(e, { ...opts, base: childBase(e.xml?.base, feedBase) }, feedAuthors),
    ),
  };
}

function atomEntry(
  entry: AtomFeed.Entry<string>,
  opts: TextOptions,
  feedAuthors: Array<string | undefined>,
): Entry {
  const { base } = opts;
  const links = (entry.links ?? []) as AtomLink[];
  // RFC 4287 §4.2.1: an entry without atom:author inherits its source's, then the feed's.
  const own = [...(entry.authors ?? []), ...(entry.source?.authors ?? [])].map(personName);
  const extras = itemExtras({ media: entry.media, itunes: entry.itunes }, base);
  const content = entry.content?.src ? undefined : entry.content;
  // A link written with no attribute (TEXT_LINK_REL) is the entry's URL when it has no other, but its key never reads
  // it (an entry keyed while feedsub did not read it keeps its key): its text tells the entry apart instead.
  const alternate = resolveUrl(pickLink(links, 'alternate')?.href, base);
  const textLink = text(links.find((l) => l.rel === TEXT_LINK_REL)?.href);
  const url = alternate ?? resolveUrl(textLink, base);
  return finishEntry(
    {
      guid: text(entry.id),
      url,
      title: [atomText(entry.title, base), guessed(entry.dc?.titles?.[0])],
      summary: [atomText(entry.summary, base), ...extras.summary],
      content: [atomText(content, base)],
      image: extras.image,
      authors: uniq([
        ...(own.some(Boolean) ? own : feedAuthors),
        ...(entry.dc?.creators ?? []).map(plainName),
        ...extras.authors,
      ]),
      categories: uniq([
        ...(entry.categories ?? []).map((c) => c.term ?? c.label),
        ...(entry.dc?.subjects ?? []),
        ...extras.categories,
      ]),
      enclosures: uniqueEnclosures(linkEnclosures(links, base)),
      published_at: firstDate(
        entry.published,
        ...(entry.dc?.dates ?? []),
        ...(entry.dcterms?.issued ?? []),
      ),
      updated_at: firstDate(
        entry.updated,
        ...(entry.dcterms?.modified ?? []),
        ...(entry.dc?.dates ?? []),
      ),
      key_source: {
        title: text(entry.title?.value),
        body: text(entry.content?.value) ?? text(entry.summary?.value),
        ...(url === alternate ? {} : { url: null }),
        ...idOf(entry.dc?.identifiers?.[0], textLink),
      },
    },
    opts,
  );
}

/** RDF / RSS 1.0 and 0.90 document → normalized feed; rdf:about serves as the item guid. */
export function mapRdf(feed: RdfFeed.Feed<string>, opts: MapOptions): Feed {
  const feedBase = childBase(feed.xml?.base, opts.base);
  const links = (feed.atom?.links ?? []) as AtomLink[];
  return {
    format: 'rdf',
    title: titleText([guessed(feed.title), guessed(feed.dc?.titles?.[0])]),
    site_url: resolveUrl(feed.link, feedBase),
    ttl_seconds: ttlSeconds(undefined, feed.sy),
    hub_url: resolveUrl(pickLink(links, 'hub')?.href, feedBase),
    self_url: resolveUrl(pickLink(links, 'self')?.href, feedBase),
    entries: (feed.items ?? []).map((item) =>
      rdfEntry(item, { ...opts, base: childBase(item.xml?.base, feedBase) }),
    ),
  };
}

function rdfEntry(item: RdfFeed.Item<string>, opts: TextOptions): Entry {
  const b = opts.base;
  const extras = itemExtras({ media: item.media }, b);
  const title = text(item.title) ?? text(item.dc?.titles?.[0]);
  const summary = text(item.description) ?? text(item.dc?.descriptions?.[0]);
  return finishEntry(
    {
      guid: text(item.rdf?.about),
      url: resolveUrl(item.link, b) ?? resolveUrl(item.rdf?.about, b),
      title: [guessed(item.title), guessed(item.dc?.titles?.[0])],
      summary: [html(item.description), guessed(item.dc?.descriptions?.[0]), ...extras.summary],
      content: [html(item.content?.encoded)],
      image: extras.image,
      authors: uniq((item.dc?.creators ?? []).map(plainName)),
      categories: uniq(item.dc?.subjects ?? []),
      enclosures: [],
      published_at: firstDate(...(item.dc?.dates ?? []), ...(item.dcterms?.issued ?? [])),
      updated_at: firstDate(...(item.dcterms?.modified ?? []), ...(item.dc?.dates ?? [])),
      key_source: {
        title,
        body: text(item.content?.encoded) ?? summary,
        ...idOf(item.atom?.id, item.dc?.identifiers?.[0]),
      },
    },
    opts,
  );
}

/** JSON Feed 1.0/1.1 document → normalized feed (1.0 `author` arrives as `authors` from feedsmith). */
export function mapJson(feed: JsonFeed.Feed<string>, opts: MapOptions): Feed {
  const base = opts.base;
  const feedAuthors = (feed.authors ?? []).map(personName);
  const hub =
    (feed.hubs ?? []).find((h) => /websub|pubsubhubbub/i.test(h.type ?? '')) ?? feed.hubs?.[0];
  return {
    format: 'json',
    title: titleText([plain(feed.title)]),
    site_url: resolveUrl(feed.home_page_url, base),
    ttl_seconds: null,
    hub_url: resolveUrl(hub?.url, base),
    self_url: resolveUrl(feed.feed_url, base),
    entries: (feed.items ?? []).map((item) => jsonEntry(item, opts, feedAuthors)),
  };
}

function jsonEntry(
  item: JsonFeed.Item<string>,
  opts: TextOptions,
  feedAuthors: Array<string | undefined>,
): Entry {
  const base = opts.base;
  const own = (item.authors ?? []).map(personName);
  const entry = finishEntry(
    {
      guid: text(item.id),
      url: resolveUrl(item.url, base) ?? resolveUrl(item.external_url, base),
      title: [plain(item.title)],
      summary: [plain(item.summary)],
      content: [html(item.content_html), plain(item.content_text)],
      image: resolveUrl(item.image, base) ?? resolveUrl(item.banner_image, base),
      authors: uniq(own.some(Boolean) ? own : feedAuthors),
      categories: uniq(item.tags ?? []),
      enclosures: compact(
        (item.attachments ?? []).map((a) => enclosure(a.url, a.mime_type, a.size_in_bytes, base)),
      ),
      published_at: firstDate(item.date_published),
      updated_at: firstDate(item.date_modified),
      key_source: {
        title: text(item.title),
        body: text(item.content_html) ?? text(item.content_text) ?? text(item.summary),
      },
    },
    opts,
  );
  // JSON Feed §3: content_text is the publisher's own plain version; it wins over a rendering of content_html.
  const ownText = text(item.content_text);
  return ownText && entry.content_html ? { ...entry, content_text: ownText } : entry;
}

/** An entry's identifier besides its guid (types.ts KeySource id): the first of `candidates` that has text. */
function idOf(...candidates: Array<string | null | undefined>): { id?: string } {
  for (const c of candidates) {
    const id = text(c);
    if (id !== null) return { id };
  }
  return {};
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

// Normalized shapes produced by feed parsing: what the poller stores and the webhook carries.

/** A media file attached to an entry (RSS enclosure, Atom rel="enclosure", JSON attachment). */
export type Enclosure = { url: string; type: string | null; length: number | null };

/** One feed item, normalized across RSS, Atom, RDF and JSON Feed. */
export type Entry = {
  guid: string | null; // the feed's own guid / atom:id / json id, trimmed
  url: string | null; // resolved absolute link
  title: string | null;
  summary: string | null; // description / summary
  content: string | null; // content:encoded / atom content / content_html|content_text
  authors: string[];
  categories: string[];
  enclosures: Enclosure[]; // URLs resolved
  published_at: string | null; // ISO 8601 UTC ms (new Date().toISOString() form) or null
  updated_at: string | null;
};

export type FeedFormat = 'rss' | 'atom' | 'rdf' | 'json';

/** A parsed document: feed-level metadata plus its entries in document order. */
export type ParsedFeed = {
  format: FeedFormat;
  title: string | null;
  site_url: string | null; // resolved home page link
  ttl_seconds: number | null; // RSS <ttl> (minutes) as seconds, else sy:updatePeriod/updateFrequency
  hub_url: string | null; // WebSub <link rel="hub">, if any
  self_url: string | null; // <atom:link rel="self">, if any
  entries: Entry[]; // in document order
  degraded: string | null; // null when clean; else a short reason
};

/** Options shared by parseFeed and the parse pool. */
export type ParseOptions = { baseUrl: string; contentLocation?: string | null };

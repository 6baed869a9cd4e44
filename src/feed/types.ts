// Normalized shapes produced by feed parsing: what the poller stores and the webhook carries.

/** A media file attached to an entry (RSS enclosure, Atom rel="enclosure", JSON attachment). */
export type Enclosure = { url: string; type: string | null; length: number | null };

/** One feed item, normalized across RSS, Atom, RDF and JSON Feed. Text follows JSON Feed's convention: `title` and
 *  `summary` are plain text, `*_html` are HTML with absolute URLs (sanitized unless disabled), `content_text` is the
 *  plain rendering of the content. */
export type Entry = {
  guid: string | null; // the feed's own guid / atom:id / json id, trimmed
  url: string | null; // resolved absolute link
  title: string | null; // plain text, one line
  summary: string | null; // plain text of description / summary
  summary_html: string | null; // description / atom summary / dc:description / itunes:summary / media:description
  content_html: string | null; // content:encoded / atom content / content_html|content_text
  content_text: string | null; // plain text of the content
  image: string | null; // media:thumbnail / itunes:image / media:content image / JSON image, resolved
  authors: string[];
  categories: string[];
  enclosures: Enclosure[]; // URLs resolved
  published_at: string | null; // ISO 8601 UTC ms (new Date().toISOString() form) or null
  updated_at: string | null;
  // What keys read besides the fields above, so an entry keeps its key across versions. Never sent.
  key_source: KeySource;
  // Set on an entry too large for any event (feed/slim.ts), whose summary and content are not carried: the content
  // hash of the whole entry and the head of its plain text, which filters read. Never sent.
  slim?: { hash: string; text: string | null };
  // Set on an entry whose summary and content are not rendered yet (they are null until then): the texts chosen for
  // them as the document declared them, and how to render them (feed/parse/entry.ts finishTexts). An entry the feed's
  // history already holds in this version travels so from the parse thread, and is rendered only where it is read.
  unfinished?: UnfinishedTexts;
};

/** `title`, `body`: the title and body as version 1 read them (entity-decoded, untyped), hashed only for the key of an
 *  entry with no guid, link or enclosure. `url`, when present: the link keys read instead of the entry's `url` (null
 *  for a link taken from an Atom <link>'s text, which keys never read: entries keyed without it keep their keys).
 *  `id`: an identifier the feed gives besides its guid (atom:id or dc:identifier in RSS, an Atom link's text), read
 *  only to tell apart entries that would otherwise share a key. */
export type KeySource = {
  title: string | null;
  body: string | null;
  url?: string | null;
  id?: string | null;
};

/** A text chosen for an entry's summary or content, as declared: its value, whether it is HTML, and its base URL. */
export type DeclaredText = { value: string | null; kind: 'text' | 'html'; base?: string | null };
/** What rendering an unfinished entry's summary and content needs (Entry.unfinished). */
export type UnfinishedTexts = {
  summary: DeclaredText | null;
  content: DeclaredText | null;
  base: string | null;
  sanitize: boolean;
  /** The content hash of the rendered entry (feed/identity/content-hash.ts), once the feed's history gave it. */
  hash?: string;
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

/** A parsed document's feed-level fields, without its entries (which travel packed: entry-list.ts). */
export type FeedMeta = Omit<ParsedFeed, 'entries'>;

/** Options shared by parseFeed and the parse pool. `sanitizeHtml` (default true) = delivery.sanitize_html. */
export type ParseOptions = {
  baseUrl: string;
  contentLocation?: string | null;
  sanitizeHtml?: boolean;
  /** Entries come back unfinished (Entry.unfinished, without its hash), their summary and content not rendered. */
  deferTexts?: boolean;
};

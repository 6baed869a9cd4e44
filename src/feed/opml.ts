// OPML subscription lists (OPML 1.0 and 2.0, http://opml.org/spec2.opml): the feed outlines of a document, read
// within bounds and refused when cut short, and a document written from feeds grouped in folders.
import { Parser } from 'htmlparser2';
import { lineAt } from './parse/xml-scan.ts';
import { stripIllegalXmlChars } from './parse/xml-prolog.ts';

/** The document cannot be imported; the message says why, in words for the person who sent it. */
export class OpmlError extends Error {
  override name = 'OpmlError';
}

/** One outline that names a feed, in document order. Folders are flattened: their path is not kept. */
export type OpmlFeed = {
  /** The outline's xmlUrl, entities decoded and trimmed; null for an outline typed as a feed that has none. */
  xmlUrl: string | null;
  /** The outline's title, else its text (OPML 2.0 §"text" is what readers display); null when it has neither. */
  title: string | null;
  htmlUrl: string | null;
  type: string | null;
  /** feedsub's own `feedsubFilter` attribute, as written: a subscription filter's JSON text; null when absent. */
  filter: string | null;
};

/** A feed outline to write: `title` is its text, `paused` adds `feedsubStatus="paused"`, `filter` (a subscription
 *  filter's JSON text) `feedsubFilter`. */
export type OpmlFeedOut = {
  title: string;
  xmlUrl: string;
  htmlUrl: string | null;
  paused: boolean;
  filter: string | null;
};

/** A folder outline (text = `title`) holding its feeds, given page by page so a writer never holds them all. */
export type OpmlFolderOut = {
  title: string;
  pages: Iterable<OpmlFeedOut[]> | AsyncIterable<OpmlFeedOut[]>;
};

/** Elements open at once, <opml> and <body> included: subscription lists nest folders a few levels deep. */
export const OPML_MAX_DEPTH = 50;
// Subscription lists say type="rss" for every kind of feed (OPML 2.0 §"Subscription lists"); some say "atom".
const FEED_TYPES = new Set(['rss', 'atom']);

/** The feed outlines of an OPML document — outlines under <body> with an xmlUrl, or typed rss/atom — at any folder
 *  depth, in document order. Element and attribute names are matched in any case (OPML 1.0 files vary). Throws
 *  OpmlError, naming the line, when the text is not OPML, is cut short or mis-nested (an element closed by another's
 *  end tag: a lenient reader would drop what follows, importing part of the list without a word), nests more than
 *  OPML_MAX_DEPTH elements, or lists more than `maxFeeds` feeds. Entities are the five of XML and character
 *  references: a DOCTYPE is skipped and nothing it declares is ever expanded or fetched. */
export function readOpmlFeeds(text: string, maxFeeds: number): OpmlFeed[] {
  return new OpmlReader(stripIllegalXmlChars(text.replace(/^\uFEFF/, '')), maxFeeds).read();
}

type Frame = { name: string; start: number; list: boolean };

/** One parse: htmlparser2 in XML mode (a streaming tokenizer: no tree, no recursion, no DTD processing) calls these
 *  handlers; a stack of open elements is checked as they open and close, so a refusal stops the parse where the
 *  problem is. */
class OpmlReader {
  readonly #xml: string;
  readonly #maxFeeds: number;
  readonly #parser: Parser;
  readonly #stack: Frame[] = [];
  readonly #feeds: OpmlFeed[] = [];
  #root: 'none' | 'open' | 'closed' = 'none';
  #body = false;
  /** Set once the text is all written: elements closed from then on were never closed in the text. */
  #ending = false;

  constructor(xml: string, maxFeeds: number) {
    this.#xml = xml;
    this.#maxFeeds = maxFeeds;
    this.#parser = new Parser(this, { xmlMode: true, decodeEntities: true });
  }

  read(): OpmlFeed[] {
    this.#parser.write(this.#xml);
    this.#ending = true;
    this.#parser.end();
    if (this.#root === 'none')
      throw new OpmlError('is not an OPML document: it has no <opml> element');
    if (!this.#body) throw new OpmlError('is not an OPML document: <opml> has no <body>');
    return this.#feeds;
  }

  onopentag(tag: string, attrs: Record<string, string>): void {
    const name = tag.toLowerCase();
    const start = this.#parser.startIndex;
    const parent = this.#stack[this.#stack.length - 1];
    if (!parent) this.#openRoot(name, start);
    if (this.#stack.length === OPML_MAX_DEPTH)
      this.#fail(start, `nests elements more than ${OPML_MAX_DEPTH} deep`);
    // The outline tree is <body> directly under <opml> and outlines directly under it or another outline.
    const body = name === 'body' && this.#stack.length === 1;
    if (body) this.#body = true;
    if (name === 'outline' && parent?.list) this.#outline(attrs, start);
    this.#stack.push({ name, start, list: body || (name === 'outline' && !!parent?.list) });
  }

  /** htmlparser2 reports as "implied" both a self-closing tag (at the tag's own offset) and an element closed by an
   *  end tag that is not its own or by the end of the text; only the first is well-formed XML. */
  onclosetag(_tag: string, implied: boolean): void {
    const frame = this.#stack.pop()!;
    const at = this.#parser.startIndex;
    if (implied && (this.#ending || at !== frame.start)) {
      const opened = `<${frame.name}> opened on line ${lineAt(this.#xml, frame.start)}`;
      if (this.#ending) throw new OpmlError(`ends before ${opened} is closed: is it cut short?`);
      const end = this.#xml.slice(at, this.#parser.endIndex + 1);
      this.#fail(at, `${end} closes ${opened}, which has no end tag of its own`);
    }
    if (this.#stack.length === 0) this.#root = 'closed';
  }

  #openRoot(name: string, start: number): void {
    if (this.#root === 'closed') this.#fail(start, 'has a second root element after </opml>');
    if (name !== 'opml')
      throw new OpmlError(`is not an OPML document: its root element is <${name}>, not <opml>`);
    this.#root = 'open';
  }

  #outline(raw: Record<string, string>, start: number): void {
    const a = outlineAttributes(raw);
    if (a.xmlurl === null && !(a.type !== null && FEED_TYPES.has(a.type.toLowerCase()))) return;
    if (this.#feeds.length === this.#maxFeeds)
      this.#fail(
        start,
        `lists more than ${this.#maxFeeds} feeds; import it in parts of at most ${this.#maxFeeds}`,
      );
    this.#feeds.push({
      xmlUrl: a.xmlurl,
      title: a.title ?? a.text,
      htmlUrl: a.htmlurl,
      type: a.type,
      filter: a.feedsubfilter,
    });
  }

  #fail(offset: number, message: string): never {
    throw new OpmlError(`line ${lineAt(this.#xml, offset)}: ${message}`);
  }
}

const READ = ['type', 'xmlurl', 'htmlurl', 'title', 'text', 'feedsubfilter'] as const;
type OutlineAttributes = Record<(typeof READ)[number], string | null>;

/** The attributes a feed outline is read by, named in any case, trimmed; an empty one counts as absent. The first of
 *  a repeated name wins. */
function outlineAttributes(raw: Record<string, string>): OutlineAttributes {
  const out: OutlineAttributes = {
    type: null,
    xmlurl: null,
    htmlurl: null,
    title: null,
    text: null,
    feedsubfilter: null,
  };
  for (const key in raw) {
    const name = key.toLowerCase();
    if (!(READ as readonly string[]).includes(name)) continue;
    const value = raw[key]!.trim();
    if (value !== '' && out[name as keyof OutlineAttributes] === null)
      out[name as keyof OutlineAttributes] = value;
  }
  return out;
}

/** An OPML 2.0 document, chunk by chunk: the head (`title`, dateCreated = `now`), one folder outline per folder with
 *  at least one feed, then the end. Pull-driven: each page of a folder is read only when the previous chunk was
 *  taken, so a caller streaming it holds one page at a time. */
export async function* opmlChunks(
  title: string,
  now: Date,
  folders: Iterable<OpmlFolderOut> | AsyncIterable<OpmlFolderOut>,
): AsyncGenerator<string> {
  yield [
    '<?xml version="1.0" encoding="UTF-8"?>\n<opml version="2.0">\n  <head>\n',
    `    <title>${escapeXml(title)}</title>\n`,
    // OPML 2.0 §"<head>": dates are RFC 822; toUTCString() writes the RFC 1123 form RFC 822 readers accept.
    `    <dateCreated>${now.toUTCString()}</dateCreated>\n  </head>\n  <body>\n`,
  ].join('');
  for await (const folder of folders) {
    let open = false;
    for await (const page of folder.pages) {
      if (page.length === 0) continue;
      const head = open ? '' : `    <outline ${attributes({ text: folder.title })}>\n`;
      open = true;
      yield head + page.map((f) => `      <outline ${attributes(feedAttributes(f))}/>\n`).join('');
    }
    if (open) yield '    </outline>\n';
  }
  yield '  </body>\n</opml>\n';
}

function feedAttributes(f: OpmlFeedOut): Record<string, string | null> {
  return {
    type: 'rss',
    text: f.title,
    title: f.title,
    xmlUrl: f.xmlUrl,
    htmlUrl: f.htmlUrl,
    // OPML has no standard attribute for a paused feed; a custom one (§"<outline>": any attribute may be added) is
    // ignored by other readers, where a category would become a tag.
    feedsubStatus: f.paused ? 'paused' : null,
    // The subscription's filter as JSON, for feedsub to read back on import; other readers ignore it.
    feedsubFilter: f.filter,
  };
}

function attributes(attrs: Record<string, string | null>): string {
  return Object.entries(attrs)
    .filter((a): a is [string, string] => a[1] !== null)
    .map(([name, value]) => `${name}="${escapeXml(value)}"`)
    .join(' ');
}

// XML 1.0 §2.4 and §3.3.3: markup characters are escaped, and tabs and line breaks in attribute values are written as
// character references, which attribute-value normalization keeps (literal ones would become spaces).
const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  '\t': '&#9;',
  '\n': '&#10;',
  '\r': '&#13;',
};

/** Text safe in an attribute value or element content; characters XML cannot carry at all are dropped. */
function escapeXml(value: string): string {
  return stripIllegalXmlChars(value).replace(/[&<>"\t\n\r]/g, (c) => ESCAPES[c]!);
}

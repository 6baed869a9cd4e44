// What the XML repair knows of feed elements, and its scanning helpers: tag ends, base64 text, line numbers.

/** Leaf elements whose content feedsmith reads raw (fast-xml-parser stop nodes): unescaped HTML inside them is
 *  kept as text, so the scan does not check their markup; it only escapes a '<' that starts no tag. */
export const RAW_ELEMENTS = new Set([
  'title',
  'link',
  'description',
  'summary',
  'content',
  'content:encoded',
  'subtitle',
  'rights',
  'guid',
  'comments',
  'pubdate',
  'category',
  'name',
  'email',
  'uri',
  'id',
  'updated',
  'published',
  'source',
]);
/** The rel the repair gives an Atom <link> written with no attribute at all (`<link>https://…</link>`, as RSS writes
 *  it): feedsmith reads no such link (and drops an entry that has nothing else), but reads the text of a link with a
 *  rel as its href. The rel tells the Atom mapper that this URL is the link's text. */
export const TEXT_LINK_REL = 'urn:feedsub:link-text';
/** The elements that are entries. */
export const ITEM_ELEMENTS = new Set(['item', 'entry']);
/** HTML void elements (HTML §13.1.2): written without an end tag, they are closed on the spot rather than around
 *  whatever follows them. */
export const VOID_ELEMENTS = new Set([
  'area',
  'br',
  'col',
  'embed',
  'hr',
  'img',
  'input',
  'source',
  'wbr',
]);
/** A root written <p:rss xmlns:p="…"> (RSS 2.0 has no namespace, so any prefix on it is decoration): its prefix. */
export function rssPrefix(root: string): string | null {
  const colon = root.indexOf(':');
  return colon > 0 && root.slice(colon + 1).toLowerCase() === 'rss'
    ? root.slice(0, colon).toLowerCase()
    : null;
}

/** The local part of a qualified name, lowercased. */
export function localName(name: string): string {
  const colon = name.indexOf(':');
  return (colon === -1 ? name : name.slice(colon + 1)).toLowerCase();
}

/** Base64 text (a CDATA wrapper allowed) decoded as UTF-8 and escaped as XML text. */
export function decodeBase64(raw: string): string {
  const b64 = raw.replace(/<!\[CDATA\[|\]\]>/g, '').replace(/\s+/g, '');
  return Buffer.from(b64, 'base64')
    .toString('utf8')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;');
}

/** True when the markup at `lt` may follow the root: only comments, processing instructions and whitespace may
 *  (XML 1.0 §2.1 Misc). */
export function isTrailer(text: string, lt: number): boolean {
  return lt === -1 || text[lt + 1] === '?' || text.startsWith('<!--', lt);
}

/** Offset of the '>' closing a start tag, skipping quoted attribute values (which may hold a '<' when their quote
 *  closes within 1 KiB of it); -2 when a '<' comes first (the first '<' was text), -1 at the end of the document. A
 *  quote left open ends at the tag's first '>' (repairAttributes then closes it). Quotes and '>' are found through
 *  `markers`, so the scan is linear however the quotes fall. */
export function tagEnd(text: string, from: number, markers: MarkerIndex): number {
  let lt = text.indexOf('<', from);
  for (let j = from; j < text.length; j++) {
    if (lt !== -1 && j >= lt) return -2;
    const c = text[j];
    if (c === '>') return j;
    if (c !== '"' && c !== "'") continue;
    const close = markers.next(c, j + 1);
    if (close === -1 || (lt !== -1 && close > lt + MAX_LT_IN_VALUE)) {
      const gt = markers.next('>', j + 1);
      if (gt !== -1 && (lt === -1 || gt < lt)) return gt;
      return lt === -1 ? -1 : -2;
    }
    if (lt !== -1 && close > lt) lt = text.indexOf('<', close + 1); // a '<' inside the quoted value
    j = close;
  }
  return -1;
}

// name="value" pairs, each after whitespace, then an optional '/': the common case, checked in one pass (the names
// hold no whitespace, so the whitespace between pairs is split one way only).
const WELL_FORMED_ATTRIBUTES = /^(?:\s+[^\s=/>"']+\s*=\s*(?:"[^"<]*"|'[^'<]*'))*\s*\/?$/;

/** A start tag's attribute text as XML needs it: unquoted values quoted (`url=http://x/a.mp3`), an unterminated
 *  quote closed, a name without a value dropped, a '"' or '<' inside a value escaped. The text itself when nothing
 *  needed repair. */
export function repairAttributes(attrs: string): { text: string; repaired: boolean } {
  if (WELL_FORMED_ATTRIBUTES.test(attrs)) return { text: attrs, repaired: false };
  let out = '';
  let repaired = false;
  let i = 0;
  const n = attrs.length;
  const skipSpace = () => {
    while (i < n && /\s/.test(attrs[i]!)) i++;
  };
  while (i < n) {
    skipSpace();
    if (i >= n) break;
    if (attrs[i] === '/' && attrs.slice(i + 1).trim() === '') {
      out += '/';
      break;
    }
    const nameStart = i;
    while (i < n && !/[\s=/>"']/.test(attrs[i]!)) i++;
    const name = attrs.slice(nameStart, i);
    skipSpace();
    if (!name || attrs[i] !== '=') {
      repaired = true; // a stray character, or a name without a value (HTML's boolean attribute)
      if (!name) i++;
      continue;
    }
    i++;
    skipSpace();
    const value = readValue();
    out += ` ${name}="${value.replace(/"/g, '&quot;').replace(/</g, '&lt;')}"`;
  }
  return repaired ? { text: out, repaired } : { text: attrs, repaired: false };

  // A quoted value, an unterminated one (to the end), or an unquoted one (to the next space).
  function readValue(): string {
    const q = attrs[i];
    if (q === '"' || q === "'") {
      const close = attrs.indexOf(q, i + 1);
      if (close !== -1) {
        const value = attrs.slice(i + 1, close);
        if (value.includes('<')) repaired = true;
        i = close + 1;
        return value;
      }
      repaired = true;
      const rest = attrs.slice(i + 1);
      const slash = /\/\s*$/.exec(rest); // the tag's own '/>' after the unterminated value
      i = slash ? i + 1 + slash.index : n;
      return slash ? rest.slice(0, slash.index) : rest;
    }
    const start = i;
    while (i < n && !/\s/.test(attrs[i]!)) i++;
    repaired = true;
    let value = attrs.slice(start, i);
    if (i >= n && value.endsWith('/')) {
      value = value.slice(0, -1); // <enclosure url=http://x/a.mp3/>: the slash closes the tag
      i = start + value.length;
    }
    return value;
  }
}

// How far past a '<' a quoted attribute value may still close (a '<' inside a value is invalid XML, but seen).
const MAX_LT_IN_VALUE = 1024;

/** Where markers (']]>', '-->', quotes, '>') next occur in a document, each searched again only once a query passes it: the
 *  skips over CDATA sections and comments stay linear even when one is never terminated. */
export class MarkerIndex {
  readonly #text: string;
  readonly #last = new Map<string, { from: number; at: number }>();

  constructor(text: string) {
    this.#text = text;
  }

  /** The first occurrence of `marker` at or after `from`, -1 when there is none. */
  next(marker: string, from: number): number {
    // The last answer holds for any `from` between the query that found it and the position found.
    const last = this.#last.get(marker);
    if (last && last.from <= from && (last.at === -1 || last.at >= from)) return last.at;
    const at = this.#text.indexOf(marker, from);
    this.#last.set(marker, { from, at });
    return at;
  }
}

/** The end tag of a raw element (case-insensitive, whitespace before '>'), searched up to `limit` (-1: the end),
 *  skipping CDATA sections and comments (a CDATA section may hold '</description>'). */
export function findEndTag(
  text: string,
  name: string,
  from: number,
  limit: number,
  markers: MarkerIndex,
): { start: number; after: number } | null {
  const lower = name.toLowerCase();
  for (let j = text.indexOf('<', from); j !== -1; j = text.indexOf('<', j + 1)) {
    if (limit !== -1 && j > limit) return null;
    const skip = text.startsWith('<![CDATA[', j)
      ? ']]>'
      : text.startsWith('<!--', j)
        ? '-->'
        : null;
    if (skip) {
      const end = markers.next(skip, j + 4);
      if (end !== -1) j = end;
      continue;
    }
    if (text[j + 1] !== '/' || text.slice(j + 2, j + 2 + name.length).toLowerCase() !== lower)
      continue;
    let k = j + 2 + name.length;
    while (k < text.length && /\s/.test(text[k]!)) k++;
    if (text[k] === '>') return { start: j, after: k + 1 };
  }
  return null;
}

/** The 1-based line of an offset. */
export function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let j = text.indexOf('\n'); j !== -1 && j < offset; j = text.indexOf('\n', j + 1)) line++;
  return line;
}

/** A regular expression matching `s` literally. */
export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** End tags closing the open elements, innermost first. */
export function closeTags(stack: Array<{ out: string }>): string {
  return stack
    .slice()
    .reverse()
    .map((f) => `</${f.out}>`)
    .join('');
}

/** A piece of raw content: a complete CDATA section or comment (or the '&lt;' standing for an unterminated one's
 *  '<'), kept as written; or a span of text to repair. */
export type RawPiece = { kept: string } | { from: number; to: number };

/** Raw content [from, to) cut into pieces around its CDATA sections and comments, with the offsets of those left
 *  unterminated (their '<' becomes text). Searched within the content only, so a feed of many leaves without CDATA is
 *  not rescanned to its end for each; each marker is searched again only once the scan has passed it. */
export function splitRaw(
  text: string,
  from: number,
  to: number,
): { pieces: RawPiece[]; unterminated: number[] } {
  const content = text.slice(from, to);
  const pieces: RawPiece[] = [];
  const unterminated: number[] = [];
  const next = (marker: string, at: number, i: number) =>
    at !== -1 && at < i ? content.indexOf(marker, i) : at;
  let cdata = content.indexOf('<![CDATA[');
  let comment = content.indexOf('<!--');
  let i = 0;
  while (i < content.length) {
    cdata = next('<![CDATA[', cdata, i);
    comment = next('<!--', comment, i);
    const at = Math.min(
      cdata === -1 ? content.length : cdata,
      comment === -1 ? content.length : comment,
    );
    pieces.push({ from: from + i, to: from + at });
    if (at >= content.length) break;
    const end = content.indexOf(at === cdata ? ']]>' : '-->', at);
    if (end === -1) {
      unterminated.push(from + at);
      pieces.push({ kept: '&lt;' });
      i = at + 1;
      continue;
    }
    pieces.push({ kept: content.slice(at, end + 3) });
    i = end + 3;
  }
  return { pieces, unterminated };
}

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

/** Offset of the '>' closing a start tag, skipping quoted attribute values; -2 on a '<' before it (the first '<'
 *  was text), -1 at the end of the document. */
export function tagEnd(text: string, from: number): number {
  // The next '<' is found once and only moved forward, so a tag full of quotes is scanned in linear time.
  let lt = text.indexOf('<', from);
  for (let j = from; j < text.length; j++) {
    if (lt !== -1 && j >= lt) return -2;
    const c = text[j];
    if (c === '>') return j;
    if (c === '"' || c === "'") {
      const close = text.indexOf(c, j + 1);
      if (close === -1) return lt === -1 ? -1 : -2;
      if (lt !== -1 && lt < close) lt = text.indexOf('<', close + 1); // a '<' inside a quoted value
      j = close;
    }
  }
  return -1;
}

/** Where markers (']]>', '-->') next occur in a document, each searched again only once a query passes it: the
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

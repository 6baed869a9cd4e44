// Text repairs inside an XML document: escaping a '<' that starts no closed tag, expanding internal-DTD entities.
import { looksLikeHtml, plainTitle } from './entry-text.ts';
import type { EntityTable } from './xml-prolog.ts';

// A tag's '<' is followed by a name, or by '/' and a name (XML 1.0 §3.1).
const TAG_START = /\/?([A-Za-z_:\u00C0-\uFFFF][^\s/>=<"'!?&;]*)/y;
// HTML void elements (HTML §13.1.2), written without an end tag.
const VOID = new Set(
  'area base br col embed hr img input link meta param source track wbr'.split(' '),
);
const ENTITY_REF = /&([A-Za-z_:][\w.:-]*);/g;
const PREDEFINED = new Set(['amp', 'lt', 'gt', 'quot', 'apos']);
// Entities referring to entities: deeper chains are left unexpanded.
const MAX_NESTING = 8;

/** Raw element content (CDATA sections and comments taken out) with every '<' escaped that does not start a tag the
 *  XML reader will close: `x < y`, `I <3`, `price<10`, a tag with no '>' before the next '<' (`a <b c</title>`), a
 *  stray `<!` or `<?`, and an open tag of the element's own name (the reader would count it as nested). Linear: the
 *  next '>' is searched again only once the scan has passed it. */
export function escapeLooseLt(
  text: string,
  ownName: string,
): { text: string; count: number; tags: KeptTag[] } {
  const tags: KeptTag[] = [];
  if (!text.includes('<')) return { text, count: 0, tags };
  const own = ownName.toLowerCase();
  let out = '';
  let last = 0;
  let count = 0;
  let gt = text.indexOf('>');
  for (let i = text.indexOf('<'); i !== -1;) {
    const next = text.indexOf('<', i + 1);
    if (gt !== -1 && gt < i) gt = text.indexOf('>', i);
    TAG_START.lastIndex = i + 1;
    const tag = TAG_START.exec(text);
    const closed = gt !== -1 && (next === -1 || gt < next);
    const end = tag !== null && tag[0][0] === '/';
    const ownOpen = tag !== null && !end && tag[1]!.toLowerCase() === own;
    if (!tag || !closed || ownOpen) {
      out += `${text.slice(last, i)}&lt;`;
      last = i + 1;
      count++;
    } else if (text[gt - 1] !== '/') tags.push({ name: tag[1]!.toLowerCase(), end });
    i = next;
  }
  return { text: out + text.slice(last), count, tags };
}

/** A tag left as markup in raw content: its lowercase name, and whether it is an end tag (self-closed ones omitted). */
export type KeptTag = { name: string; end: boolean };

/** True when the tags nest properly, HTML's void elements (`<br>`, `<img>`) left unclosed allowed: only then may raw
 *  content keep its markup, which the XML reader parses as elements wherever the leaf is not read raw. */
export function tagsBalance(tags: KeptTag[]): boolean {
  const open: string[] = [];
  for (const t of tags) {
    if (VOID.has(t.name)) continue;
    if (!t.end) open.push(t.name);
    else if (open.pop() !== t.name) return false;
  }
  return open.length === 0;
}

/** Every '<' escaped: raw content whose markup does not nest becomes text (the decoder turns it back into the same
 *  characters, so HTML in it survives). */
export function escapeAllLt(text: string): string {
  return text.replace(/</g, '&lt;');
}

/** What expansions may still add in the whole document (characters), and the expansions made so far. */
export type ExpansionBudget = { chars: number; cache: Map<string, string | null> };

/** Replaces references to the document's declared entities with their replacement text, escaped so it reads as
 *  text in element content and attribute values alike. A reference whose expansion would exceed `budget.chars` is
 *  left as written. Predefined and undeclared references (`&amp;`, `&nbsp;`) are left for the text decoder. */
export function expandEntities(
  text: string,
  entities: EntityTable,
  budget: ExpansionBudget,
): { text: string; overBudget: boolean } {
  let overBudget = false;
  const out = text.replace(ENTITY_REF, (ref: string, name: string) => {
    if (PREDEFINED.has(name) || !entities.has(name)) return ref;
    const expanded = expansion(name, entities, budget, new Set());
    if (expanded === null || expanded.length > budget.chars) {
      overBudget = true;
      return ref;
    }
    budget.chars -= expanded.length;
    return expanded;
  });
  return { text: out, overBudget };
}

// The escaped replacement text of one entity, computed once per document; null when it refers to itself, nests too
// deep or would exceed the budget (checked while it grows, so nested "laughs" stop early; the budget only shrinks,
// so a null stays right).
function expansion(
  name: string,
  entities: EntityTable,
  budget: ExpansionBudget,
  active: Set<string>,
): string | null {
  const cached = budget.cache.get(name);
  if (cached !== undefined) return cached;
  if (active.has(name) || active.size >= MAX_NESTING) return null;
  const value = entities.get(name) ?? '';
  const limit = budget.chars;
  if (value.length > limit) return remember(budget, name, null);
  active.add(name);
  let out = '';
  let last = 0;
  for (const m of value.matchAll(ENTITY_REF)) {
    out += escapeText(value.slice(last, m.index));
    const inner = m[1]!;
    const declared = entities.has(inner) && !PREDEFINED.has(inner);
    const piece = declared ? expansion(inner, entities, budget, active) : m[0];
    if (piece === null || out.length + piece.length > limit) {
      active.delete(name);
      return remember(budget, name, null);
    }
    out += piece;
    last = m.index + m[0].length;
  }
  out += escapeText(value.slice(last));
  active.delete(name);
  return remember(budget, name, out.length > limit ? null : out);
}

function remember(budget: ExpansionBudget, name: string, value: string | null): string | null {
  budget.cache.set(name, value);
  return value;
}

function escapeText(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

// The character references of XML 1.0 §4.1 and its five predefined entities.
const XML_REF = /&(?:(lt|gt|amp|quot|apos)|#(\d{1,7})|#x([0-9A-Fa-f]{1,6}));/g;
const PREDEFINED_TEXT: Record<string, string> = {
  lt: '<',
  gt: '>',
  amp: '&',
  quot: '"',
  apos: "'",
};
const CDATA_OR_COMMENT = /<!\[CDATA\[([\s\S]*?)\]\]>|<!--[\s\S]*?-->/g;

/** The raw content of a leaf that holds plain text, when its text (CDATA sections read as written, references decoded,
 *  comments dropped) looks like HTML (feedparser's guess: escaped, in CDATA or as it is): the plain rendering of that
 *  HTML on one line, as XML text. Null for any other content (text, or child elements such as an Atom-style <name>). */
export function plainLeafText(raw: string): string | null {
  let text = '';
  let last = 0;
  for (const m of raw.matchAll(CDATA_OR_COMMENT)) {
    text += decodeXmlRefs(raw.slice(last, m.index)) + (m[1] ?? '');
    last = m.index + m[0].length;
  }
  text += decodeXmlRefs(raw.slice(last));
  if (!looksLikeHtml(text)) return null;
  return (plainTitle(text, 'html') ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;');
}

function decodeXmlRefs(s: string): string {
  return s.replace(XML_REF, (ref, name?: string, dec?: string, hex?: string) => {
    if (name) return PREDEFINED_TEXT[name]!;
    const code = dec ? Number(dec) : parseInt(hex!, 16);
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : ref;
  });
}

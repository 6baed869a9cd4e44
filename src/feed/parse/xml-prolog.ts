// The XML prolog before feedsmith: illegal characters, root detection, the DOCTYPE and its internal-subset entities.

/** General entities declared in a document's internal DTD subset: name → value as declared (character references
 *  already replaced, XML 1.0 §4.5), other entity references still in it. */
export type EntityTable = Map<string, string>;

// XML 1.0 §2.2 Char production: C0 controls other than TAB/LF/CR, and U+FFFE/U+FFFF are never allowed.
const ILLEGAL_XML_CHARS = /[\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]/g;
const NAME = /[^\s/>=<"'!?]+/y;
// <!ENTITY name "value"> or 'value'; parameter entities (%) and external ones (SYSTEM/PUBLIC) are not matched, so
// they are never expanded: an external entity would mean a network fetch.
const ENTITY_DECL = /<!ENTITY\s+([^\s%"'>]+)\s+(?:"([^"]*)"|'([^']*)')\s*>/y;
// A hostile DTD is bounded before expansion is even considered (expansion has its own budget).
const MAX_ENTITIES = 1000;
const MAX_ENTITY_VALUE = 64 * 1024;

/** Removes characters XML 1.0 forbids; returns the input itself when there are none. */
export function stripIllegalXmlChars(text: string): string {
  return text.replace(ILLEGAL_XML_CHARS, '');
}

/** Offset and lowercased qualified name of the first element, skipping the prolog
 *  (declaration, comments, processing instructions, DOCTYPE); null when there is none. */
export function findRootElement(text: string): { offset: number; name: string } | null {
  let i = text.indexOf('<');
  while (i !== -1) {
    const end = skipMarkupDecl(text, i);
    if (end === -1) return null;
    if (end === i) {
      NAME.lastIndex = i + 1;
      const m = NAME.exec(text);
      return m ? { offset: i, name: m[0].toLowerCase() } : null;
    }
    i = text.indexOf('<', end);
  }
  return null;
}

/** The prolog (text before the root) without its DOCTYPE: feedsmith rejects some internal subsets (parameter
 *  entities), and external DTDs are never fetched anyway; the declared entities are expanded by the repair. */
export function prologWithoutDoctype(prolog: string): string {
  const at = prolog.search(/<!doctype/i);
  if (at === -1) return prolog;
  const end = doctypeEnd(prolog, at + 2);
  return end === -1 ? prolog.slice(0, at) : prolog.slice(0, at) + prolog.slice(end);
}

/** The general entities declared in the DOCTYPE before `rootOffset` (empty when there is none). */
export function internalEntities(text: string, rootOffset: number): EntityTable {
  const entities: EntityTable = new Map();
  const at = text.slice(0, rootOffset).search(/<!doctype/i);
  if (at === -1) return entities;
  const open = text.indexOf('[', at);
  const end = doctypeEnd(text, at + 2);
  if (open === -1 || end === -1 || open > end) return entities;
  for (let i = text.indexOf('<!', open); i !== -1 && i < end; i = text.indexOf('<!', i + 2)) {
    if (text.startsWith('<!--', i)) {
      i = text.indexOf('-->', i + 4);
      if (i === -1) break;
      continue;
    }
    ENTITY_DECL.lastIndex = i;
    const m = ENTITY_DECL.exec(text);
    if (!m) continue;
    const value = m[2] ?? m[3] ?? '';
    if (!entities.has(m[1]!) && value.length <= MAX_ENTITY_VALUE)
      entities.set(m[1]!, replaceCharRefs(value));
    if (entities.size >= MAX_ENTITIES) break;
  }
  return entities;
}

/** End offset of a comment/PI/CDATA/DOCTYPE starting at i, i itself for an element or end tag, and -1 when the
 *  construct is not terminated. */
export function skipMarkupDecl(text: string, i: number): number {
  const c = text[i + 1];
  if (c === '?') return endAfter(text, '?>', i + 2);
  if (c !== '!') return i;
  if (text.startsWith('<!--', i)) return endAfter(text, '-->', i + 4);
  if (text.startsWith('<![CDATA[', i)) return endAfter(text, ']]>', i + 9);
  return doctypeEnd(text, i + 2);
}

function endAfter(text: string, marker: string, from: number): number {
  const at = text.indexOf(marker, from);
  return at === -1 ? -1 : at + marker.length;
}

// <!DOCTYPE ...> may hold an internal subset in [...] whose declarations contain quoted '>' and ']', and comments
// and processing instructions that may contain anything (XML 1.0 §2.8 intSubset).
function doctypeEnd(text: string, from: number): number {
  let depth = 0;
  for (let j = from; j < text.length; j++) {
    const c = text[j];
    if (c === '"' || c === "'") {
      j = text.indexOf(c, j + 1);
      if (j === -1) return -1;
    } else if (c === '<' && depth > 0 && (text[j + 1] === '?' || text.startsWith('<!--', j))) {
      const end = text[j + 1] === '?' ? endAfter(text, '?>', j + 2) : endAfter(text, '-->', j + 4);
      if (end === -1) return -1;
      j = end - 1;
    } else if (c === '[') depth++;
    else if (c === ']') depth--;
    else if (c === '>' && depth <= 0) return j + 1;
  }
  return -1;
}

// Character references in an entity value are replaced when it is declared (XML 1.0 §4.5); out-of-range ones
// become U+FFFD, as a browser does.
function replaceCharRefs(value: string): string {
  return value.replace(/&#(x[0-9a-f]+|[0-9]+);/gi, (_, n: string) => {
    const code = n[0] === 'x' || n[0] === 'X' ? parseInt(n.slice(1), 16) : parseInt(n, 10);
    const valid = code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) && code !== 0;
    return valid ? String.fromCodePoint(code) : '\uFFFD';
  });
}

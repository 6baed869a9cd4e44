// XML hygiene before feedsmith: illegal characters, root detection, well-formedness scan, truncation recovery.

export type XmlDamage = { offset: number; line: number; message: string };
export type XmlCheck = { damage: null } | { damage: XmlDamage; recovered: string | null };

// XML 1.0 §2.2 Char production: C0 controls other than TAB/LF/CR, and U+FFFE/U+FFFF are never allowed.
const ILLEGAL_XML_CHARS = /[\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]/g;
// Leaf elements whose content feedsmith reads raw (fast-xml-parser stop nodes): unescaped HTML inside
// them is tolerated there, so the scan skips to their end tag instead of checking their markup.
const RAW_ELEMENTS = new Set([
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
const ITEM_ELEMENTS = new Set(['item', 'entry']);
const NAME = /[^\s/>=<"'!?]+/y;

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

/** Removes the DOCTYPE declaration before the root: feedsmith rejects some internal subsets
 *  (parameter entities), and external DTDs are never fetched anyway. */
export function stripDoctype(text: string): string {
  const root = findRootElement(text);
  if (!root) return text;
  const at = text.slice(0, root.offset).search(/<!doctype/i);
  if (at === -1) return text;
  const end = doctypeEnd(text, at + 2);
  return end === -1 || end > root.offset ? text : text.slice(0, at) + text.slice(end);
}

/** Checks the element structure of a document starting at its root; on damage, returns a copy cut
 *  after the last complete item (or feed-level element) before it, with open elements closed. */
export function checkXml(text: string, rootOffset: number): XmlCheck {
  const stack: string[] = [];
  let items = 0; // <item>/<entry> elements currently open
  let safe: { offset: number; stack: string[] } | null = null;
  let rootClosed = false;
  let i = rootOffset;
  const fail = (offset: number, message: string): XmlCheck => ({
    damage: { offset, line: lineAt(text, offset), message },
    recovered: safe ? text.slice(0, safe.offset) + closeTags(safe.stack) : null,
  });
  while (i < text.length) {
    const lt = text.indexOf('<', i);
    const textEnd = lt === -1 ? text.length : lt;
    if (stack.length === 0 && text.slice(i, textEnd).trim() !== '')
      return fail(i, 'text outside the root element');
    if (lt === -1) break;
    const declEnd = skipMarkupDecl(text, lt);
    if (declEnd === -1) return fail(lt, 'unterminated comment, CDATA section or declaration');
    if (declEnd > lt) {
      i = declEnd;
      continue;
    }
    if (text[lt + 1] === '/') {
      NAME.lastIndex = lt + 2;
      const name = NAME.exec(text)?.[0];
      const gt = text.indexOf('>', lt);
      if (!name || gt === -1 || text.slice(NAME.lastIndex, gt).trim() !== '')
        return fail(lt, 'broken end tag');
      const open = stack[stack.length - 1] ?? '';
      if (open.toLowerCase() !== name.toLowerCase())
        return fail(lt, `end tag </${name}> does not match <${open}>`);
      stack.pop();
      if (ITEM_ELEMENTS.has(localName(name))) items--;
      if (stack.length === 0) rootClosed = true;
      i = gt + 1;
    } else {
      NAME.lastIndex = lt + 1;
      const name = NAME.exec(text)?.[0];
      if (!name) return fail(lt, "unescaped '<'");
      if (rootClosed) return fail(lt, 'second root element');
      const gt = tagEnd(text, NAME.lastIndex);
      if (gt === -1) return fail(lt, `unterminated start tag <${name}>`);
      i = gt + 1;
      if (text[gt - 1] !== '/') {
        if (RAW_ELEMENTS.has(name.toLowerCase()) && stack.length > 0) {
          const close = findEndTag(text, name, i);
          if (close === -1) return fail(lt, `<${name}> is not closed`);
          i = close;
        } else {
          stack.push(name);
          if (ITEM_ELEMENTS.has(localName(name))) items++;
        }
      }
    }
    if (items === 0 && stack.length > 0) safe = { offset: i, stack: stack.slice() };
  }
  if (stack.length > 0)
    return fail(text.length, `document ends inside <${stack[stack.length - 1]}>`);
  return { damage: null };
}

// Returns the end offset of a comment/PI/CDATA/DOCTYPE starting at i, i itself for an element
// or end tag, and -1 when the construct is not terminated.
function skipMarkupDecl(text: string, i: number): number {
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

// <!DOCTYPE ...> may hold an internal subset in [...] whose declarations contain quoted '>'.
function doctypeEnd(text: string, from: number): number {
  let depth = 0;
  for (let j = from; j < text.length; j++) {
    const c = text[j];
    if (c === '"' || c === "'") {
      j = text.indexOf(c, j + 1);
      if (j === -1) return -1;
    } else if (c === '[') depth++;
    else if (c === ']') depth--;
    else if (c === '>' && depth <= 0) return j + 1;
  }
  return -1;
}

// Offset of the '>' closing a start tag, skipping quoted attribute values; -1 on a stray '<' or EOF.
function tagEnd(text: string, from: number): number {
  for (let j = from; j < text.length; j++) {
    const c = text[j];
    if (c === '>') return j;
    if (c === '<') return -1;
    if (c === '"' || c === "'") {
      j = text.indexOf(c, j + 1);
      if (j === -1) return -1;
    }
  }
  return -1;
}

// Offset just past the matching end tag of a raw element (case-insensitive, whitespace before '>').
function findEndTag(text: string, name: string, from: number): number {
  const lower = name.toLowerCase();
  for (let j = text.indexOf('</', from); j !== -1; j = text.indexOf('</', j + 2)) {
    if (text.slice(j + 2, j + 2 + name.length).toLowerCase() !== lower) continue;
    let k = j + 2 + name.length;
    while (k < text.length && /\s/.test(text[k]!)) k++;
    if (text[k] === '>') return k + 1;
  }
  return -1;
}

function closeTags(stack: string[]): string {
  return stack
    .slice()
    .reverse()
    .map((n) => `</${n}>`)
    .join('');
}

function localName(name: string): string {
  const colon = name.indexOf(':');
  return (colon === -1 ? name : name.slice(colon + 1)).toLowerCase();
}

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let j = text.indexOf('\n'); j !== -1 && j < offset; j = text.indexOf('\n', j + 1)) line++;
  return line;
}

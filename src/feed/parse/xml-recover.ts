// Lenient, bounded repair of real-world XML before feedsmith, keeping every complete item of a damaged document.
import { expandEntities, type ExpansionBudget } from './xml-text.ts';
import { LeafReader, type Frame } from './xml-leaf.ts';
import { internalEntities, skipMarkupDecl, type EntityTable } from './xml-prolog.ts';
import {
  closeTags,
  escapeRegExp,
  MarkerIndex,
  isTrailer,
  ITEM_ELEMENTS,
  lineAt,
  localName,
  RAW_ELEMENTS,
  repairAttributes,
  rssPrefix,
  tagEnd,
  TEXT_LINK_REL,
  VOID_ELEMENTS,
} from './xml-scan.ts';

export type XmlDamage = { offset: number; line: number; message: string };
/** The repaired document (null when nothing usable is left), the first damage, how many repairs were made, and
 *  the damage that stopped the repair (the rest of the document dropped), if any. */
export type XmlRepair = {
  xml: string | null;
  damage: XmlDamage | null;
  repairs: number;
  stopped: XmlDamage | null;
};

const NAME = /[A-Za-z_\u00C0-\uFFFF][^\s/>=<"'!?&;]*/y;
// Bounds on the work a hostile document can cause: repairs (each O(1) or O(depth)) and nesting depth.
const MAX_REPAIRS = 10_000;
const MAX_DEPTH = 256;
// Where items live: RSS <channel> (and the root for RSS 0.90 / RDF), Atom <feed>.
const ITEM_PARENTS = new Set(['channel', 'feed', 'rss', 'rdf']);

// Atom 0.3 mode="base64" (draft-ietf-atompub-format-02 §3.1.2): the content is base64 of the typed text.
const BASE64_MODE = /\bmode\s*=\s*(["'])base64\1/i;

/** Repairs the document whose root element starts at `rootOffset`; the prolog (declaration, DOCTYPE) is dropped
 *  after its internal entities are read. Linear in the input. */
export function repairXml(text: string, rootOffset: number): XmlRepair {
  return new Repairer(text, internalEntities(text, rootOffset)).run(rootOffset);
}

class Repairer {
  readonly #text: string;
  readonly #entities: EntityTable;
  readonly #out: string[] = [];
  readonly #stack: Frame[] = [];
  readonly #markers: MarkerIndex;
  readonly #leaves: LeafReader;
  readonly #budget: ExpansionBudget = { chars: 0, cache: new Map() };
  #items = 0;
  #safe: { chunk: number; stack: Frame[] } | null = null;
  #damage: XmlDamage | null = null;
  #repairs = 0;
  #prefix: string | null = null; // the prefix of a <p:rss> root, removed from every element name
  #root = ''; // the root element's local name: rss, feed or rdf
  #rootClosed = false;
  #fatal: { offset: number; message: string } | null = null;

  constructor(text: string, entities: EntityTable) {
    this.#text = text;
    this.#entities = entities;
    this.#markers = new MarkerIndex(text);
    this.#leaves = new LeafReader(text, this.#markers, {
      out: this.#out,
      repair: (offset, message, count) => this.#repair(offset, message, count),
      stop: (offset, message) => this.#stop(offset, message),
      expandText: (t, offset) => this.#expandText(t, offset),
    });
    // Entity expansion may at most double the document (and 64 KiB for a tiny one): no billion laughs.
    this.#budget.chars = Math.max(64 * 1024, text.length);
  }

  run(from: number): XmlRepair {
    const text = this.#text;
    let i = from;
    while (i < text.length) {
      const lt = text.indexOf('<', i);
      const textEnd = lt === -1 ? text.length : lt;
      if (this.#stack.length > 0) this.#emitText(i, textEnd);
      else if (text.slice(i, textEnd).trim() !== '' || (this.#rootClosed && !isTrailer(text, lt))) {
        if (!this.#rootClosed) return this.#fail(i, 'text outside the root element');
        this.#repair(i, 'content after the root element dropped');
        break;
      }
      if (lt === -1) break;
      i =
        this.#stack.length === 0 && this.#rootClosed ? skipMarkupDecl(text, lt) : this.#markup(lt);
      if (i === -1) return this.#fail(this.#fatal?.offset ?? lt, this.#fatal?.message ?? 'damaged');
      if (this.#repairs > MAX_REPAIRS) return this.#fail(i, `more than ${MAX_REPAIRS} repairs`);
      if (this.#items === 0 && this.#stack.length > 0)
        this.#safe = { chunk: this.#out.length, stack: this.#stack.slice() };
    }
    if (this.#stack.length > 0) {
      const open = this.#stack[this.#stack.length - 1]!.name;
      if (this.#items > 0) return this.#fail(text.length, `document ends inside <${open}>`);
      this.#repair(text.length, `document ends inside <${open}>`);
      this.#out.push(closeTags(this.#stack));
    }
    return { xml: this.#out.join(''), damage: this.#damage, repairs: this.#repairs, stopped: null };
  }

  // One construct starting with '<' at lt; returns where scanning resumes, -1 on unrecoverable damage.
  #markup(lt: number): number {
    const text = this.#text;
    if (text[lt + 1] === '!' || text[lt + 1] === '?') {
      const end = skipMarkupDecl(text, lt);
      if (end === -1)
        return this.#strayLt(lt, 'unterminated comment, CDATA section or declaration');
      // Comments and CDATA stay; a DOCTYPE inside the document is dropped; any other '<!' is text.
      if (text.startsWith('<!--', lt) || text.startsWith('<![CDATA[', lt) || text[lt + 1] === '?')
        this.#out.push(text.slice(lt, end));
      else if (/^<!doctype\s/i.test(text.slice(lt, lt + 10)))
        this.#repair(lt, 'DOCTYPE inside the document dropped');
      else return this.#strayLt(lt, "'<!' starts no comment, CDATA section or DOCTYPE");
      return end;
    }
    if (text[lt + 1] === '/') return this.#endTag(lt);
    return this.#startTag(lt);
  }

  #endTag(lt: number): number {
    const text = this.#text;
    NAME.lastIndex = lt + 2;
    const name = NAME.exec(text)?.[0];
    if (!name) return this.#strayLt(lt, "'</' starts no end tag");
    let gt = NAME.lastIndex;
    while (gt < text.length && /\s/.test(text[gt]!)) gt++;
    const complete = text[gt] === '>';
    if (!complete && gt < text.length && text[gt] !== '<')
      return this.#strayLt(lt, 'broken end tag');
    if (!complete) this.#repair(lt, `end tag </${name}> without '>'`);
    const at = this.#findOpen(name);
    if (at === -1) {
      if (this.#stack.length > 0) this.#repair(lt, `stray end tag </${name}> dropped`);
      return complete ? gt + 1 : gt;
    }
    while (this.#stack.length - 1 > at) this.#implicitClose(lt);
    this.#close();
    return complete ? gt + 1 : gt;
  }

  #startTag(lt: number): number {
    const text = this.#text;
    NAME.lastIndex = lt + 1;
    const name = NAME.exec(text)?.[0];
    if (!name) return this.#strayLt(lt, "unescaped '<'");
    const gt = tagEnd(text, NAME.lastIndex, this.#markers);
    if (gt === -2) return this.#strayLt(lt, "unescaped '<'");
    if (gt === -1) {
      return this.#stop(lt, `unterminated start tag <${name}>`);
    }
    if (this.#stack.length >= MAX_DEPTH)
      return this.#stop(lt, `elements nested deeper than ${MAX_DEPTH}`);
    if (this.#stack.length === 0 && this.#rootClosed) return this.#stop(lt, 'second root element');
    if (this.#stack.length === 0) {
      this.#prefix = rssPrefix(name);
      this.#root = localName(name);
    }
    const out = this.#rename(name);
    const fixed = repairAttributes(text.slice(NAME.lastIndex, gt));
    if (fixed.repaired) this.#repair(lt, `attributes of <${name}> repaired`);
    const base64 = BASE64_MODE.test(fixed.text);
    const attrs = this.#attributes(base64 ? fixed.text.replace(BASE64_MODE, '') : fixed.text);
    const selfClosing = /\/\s*$/.test(fixed.text);
    // An Atom <link> with no attribute (not even a '/'), written the RSS way: TEXT_LINK_REL.
    const textLink = this.#root === 'feed' && localName(out) === 'link' && attrs.trim() === '';
    const chunk = this.#out.length;
    this.#out.push(`<${out}${textLink ? ` rel="${TEXT_LINK_REL}"` : attrs}>`);
    if (selfClosing) return gt + 1;
    const plain = this.#isItemAuthor(out);
    const frame: Frame = { name, out, chunk, closeAt: -1, base64, plain };
    // Base64 text is decoded whatever the element's name (a prefixed <atom:content>, <a:title>): its mode is gone.
    if ((base64 || plain || RAW_ELEMENTS.has(out.toLowerCase())) && this.#stack.length > 0)
      return this.#leaves.read(frame, this.#stack[this.#stack.length - 1]!, gt + 1);
    if (ITEM_ELEMENTS.has(localName(out))) {
      // An item belongs to the channel (or the feed, or the root): whatever is still open inside it (an item, or an
      // element never closed, which would swallow every item after it) was never closed.
      const open = this.#itemParent();
      if (open < this.#stack.length - 1) {
        while (this.#stack.length - 1 > open) this.#implicitClose(lt);
        this.#out.push(this.#out.splice(chunk, 1)[0]!);
        frame.chunk = this.#out.length - 1;
      }
      this.#items++;
    }
    this.#stack.push(frame);
    return gt + 1;
  }

  #emitText(from: number, to: number): void {
    if (from >= to) return;
    // Text between elements holds no '<' (the scan stops at each): only declared entities to expand.
    this.#out.push(this.#expandText(this.#text.slice(from, to), from));
  }

  #expandText(text: string, offset: number): string {
    return this.#entities.size === 0 ? text : this.#expand(text, offset);
  }

  #attributes(attrs: string): string {
    const renamed = this.#prefix
      ? attrs.replace(
          new RegExp(`\\bxmlns:${escapeRegExp(this.#prefix)}\\s*=\\s*("[^"]*"|'[^']*')`, 'g'),
          '',
        )
      : attrs;
    return this.#entities.size === 0 ? renamed : this.#expand(renamed, 0);
  }

  #expand(s: string, offset: number): string {
    const r = expandEntities(s, this.#entities, this.#budget);
    if (r.overBudget) this.#repair(offset, 'entity expansion limit reached');
    return r.text;
  }

  #strayLt(lt: number, message: string): number {
    this.#repair(lt, message);
    if (this.#stack.length > 0) this.#out.push('&lt;');
    return lt + 1;
  }

  // An RSS item's <author> (RSS 2.0: an address and a name, plain text): feedsmith splits it at every '<' and '(' to
  // find the two, so markup in it (escaped, in CDATA or as it is) is made plain text before feedsmith reads it.
  #isItemAuthor(out: string): boolean {
    const parent = this.#stack[this.#stack.length - 1];
    return (
      this.#root === 'rss' &&
      out === 'author' &&
      parent !== undefined &&
      localName(parent.out) === 'item'
    );
  }

  // The depth an item opens at: the innermost open channel, feed or root element, unless the item is an extension's.
  #itemParent(): number {
    for (let k = this.#stack.length - 1; k > 0; k--)
      if (ITEM_PARENTS.has(localName(this.#stack[k]!.out))) return k;
    return this.#stack.length > 0 ? 0 : -1;
  }

  #findOpen(name: string): number {
    const lower = name.toLowerCase();
    for (let k = this.#stack.length - 1; k >= 0; k--)
      if (this.#stack[k]!.name.toLowerCase() === lower) return k;
    return -1;
  }

  #implicitClose(at: number): void {
    const frame = this.#stack[this.#stack.length - 1]!;
    this.#repair(at, `<${frame.name}> is not closed`);
    if (VOID_ELEMENTS.has(localName(frame.out))) {
      this.#out[frame.chunk] = this.#out[frame.chunk]!.replace(/\/?>$/, '/>');
      this.#stack.pop();
    } else this.#close();
  }

  #close(): void {
    const frame = this.#stack.pop()!;
    this.#out.push(`</${frame.out}>`);
    if (ITEM_ELEMENTS.has(localName(frame.out))) this.#items--;
    if (this.#stack.length === 0) this.#rootClosed = true;
  }

  #stop(offset: number, message: string): -1 {
    this.#fatal = { offset, message };
    return -1;
  }

  #rename(name: string): string {
    const p = this.#prefix;
    return p && name.length > p.length + 1 && name.slice(0, p.length + 1).toLowerCase() === `${p}:`
      ? name.slice(p.length + 1)
      : name;
  }

  #repair(offset: number, message: string, count = 1): void {
    this.#repairs += count;
    this.#note(offset, message);
  }

  #note(offset: number, message: string): void {
    if (!this.#damage) this.#damage = { offset, line: lineAt(this.#text, offset), message };
  }

  // Unrecoverable damage: the document up to the last point outside any item, with its open elements closed.
  #fail(offset: number, message: string): XmlRepair {
    this.#note(offset, message);
    const safe = this.#safe;
    const xml = safe ? this.#out.slice(0, safe.chunk).join('') + closeTags(safe.stack) : null;
    const stopped = { offset, line: lineAt(this.#text, offset), message };
    return { xml, damage: this.#damage, repairs: this.#repairs + 1, stopped };
  }
}

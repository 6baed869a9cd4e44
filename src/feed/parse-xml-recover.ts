// Lenient, bounded repair of real-world XML before feedsmith, keeping every complete item of a damaged document.
import { escapeLooseLt, expandEntities, type ExpansionBudget } from './parse-xml-text.ts';
import { internalEntities, skipMarkupDecl, type EntityTable } from './parse-xml-prolog.ts';
import {
  closeTags,
  decodeBase64,
  escapeRegExp,
  findEndTag,
  MarkerIndex,
  isTrailer,
  ITEM_ELEMENTS,
  lineAt,
  localName,
  RAW_ELEMENTS,
  rssPrefix,
  tagEnd,
  VOID_ELEMENTS,
} from './parse-xml-scan.ts';

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

type Frame = { name: string; out: string; chunk: number; closeAt: number; base64?: boolean };
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
  readonly #budget: ExpansionBudget = { chars: 0, cache: new Map() };
  #items = 0;
  #safe: { chunk: number; stack: Frame[] } | null = null;
  #damage: XmlDamage | null = null;
  #repairs = 0;
  #prefix: string | null = null; // the prefix of a <p:rss> root, removed from every element name
  #rootClosed = false;
  #fatal: { offset: number; message: string } | null = null;

  constructor(text: string, entities: EntityTable) {
    this.#text = text;
    this.#entities = entities;
    this.#markers = new MarkerIndex(text);
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
      // Comments and CDATA stay; a DOCTYPE or other declaration inside the document is dropped.
      if (text.startsWith('<!--', lt) || text.startsWith('<![CDATA[', lt) || text[lt + 1] === '?')
        this.#out.push(text.slice(lt, end));
      else this.#repair(lt, 'declaration inside the document dropped');
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
    const gt = tagEnd(text, NAME.lastIndex);
    if (gt === -2) return this.#strayLt(lt, "unescaped '<'");
    if (gt === -1) {
      return this.#stop(lt, `unterminated start tag <${name}>`);
    }
    if (this.#stack.length >= MAX_DEPTH)
      return this.#stop(lt, `elements nested deeper than ${MAX_DEPTH}`);
    if (this.#stack.length === 0 && this.#rootClosed) return this.#stop(lt, 'second root element');
    if (this.#stack.length === 0) this.#prefix = rssPrefix(name);
    const out = this.#rename(name);
    const rawAttrs = text.slice(NAME.lastIndex, gt);
    const base64 = BASE64_MODE.test(rawAttrs);
    const attrs = this.#attributes(base64 ? rawAttrs.replace(BASE64_MODE, '') : rawAttrs);
    const selfClosing = text[gt - 1] === '/';
    const chunk = this.#out.length;
    this.#out.push(`<${out}${attrs}>`);
    if (selfClosing) return gt + 1;
    const frame: Frame = { name, out, chunk, closeAt: -1, base64 };
    if (RAW_ELEMENTS.has(out.toLowerCase()) && this.#stack.length > 0)
      return this.#raw(frame, gt + 1);
    if (ITEM_ELEMENTS.has(localName(out))) {
      // Items never nest: an item starting inside one means the first was never closed.
      const open = this.#stack.findIndex((f) => ITEM_ELEMENTS.has(localName(f.out)));
      if (open !== -1) {
        while (this.#stack.length > open) this.#implicitClose(lt);
        this.#out.push(this.#out.splice(chunk, 1)[0]!);
        frame.chunk = this.#out.length - 1;
      }
      this.#items++;
    }
    this.#stack.push(frame);
    return gt + 1;
  }

  // A leaf read raw: its content up to its end tag, or up to its parent's end when it was never closed.
  #raw(frame: Frame, from: number): number {
    const text = this.#text;
    const parent = this.#stack[this.#stack.length - 1]!;
    const limit = this.#closeAt(parent, from);
    const end = findEndTag(text, frame.name, from, limit, this.#markers);
    if (end !== null) {
      if (frame.base64) this.#out.push(decodeBase64(text.slice(from, end.start)));
      else this.#emitRaw(from, end.start, frame.name);
      this.#out.push(`</${frame.out}>`);
      return end.after;
    }
    const stop = limit === -1 ? text.length : limit;
    if (text.slice(from, stop).trim() === '') {
      this.#out[frame.chunk] = this.#out[frame.chunk]!.replace(/\/?>$/, '/>');
      return stop;
    }
    if (limit === -1) return this.#stop(from, `<${frame.name}> is not closed`);
    this.#repair(from, `<${frame.name}> is not closed`);
    this.#emitRaw(from, stop, frame.name);
    this.#out.push(`</${frame.out}>`);
    return stop;
  }

  // Where the parent's next end tag starts, computed once per frame until the scan passes it (so linear overall).
  #closeAt(frame: Frame, from: number): number {
    if (frame.closeAt === -1 || frame.closeAt < from) {
      const found = findEndTag(this.#text, frame.name, from, -1, this.#markers);
      frame.closeAt = found === null ? Number.MAX_SAFE_INTEGER : found.start;
    }
    return frame.closeAt === Number.MAX_SAFE_INTEGER ? -1 : frame.closeAt;
  }

  #emitText(from: number, to: number): void {
    if (from >= to) return;
    this.#out.push(this.#textOf(from, to));
  }

  // Raw content of the leaf `own`: complete CDATA sections and comments are kept as they are, the text between them
  // is repaired, and an unterminated one is text. Searched within the content only, so a feed of many leaves without
  // CDATA is not rescanned to its end for each.
  #emitRaw(from: number, to: number, own: string): void {
    const content = this.#text.slice(from, to);
    // The next CDATA section and comment, each searched again only once the scan has passed it.
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
      this.#out.push(this.#textOf(from + i, from + at, own));
      if (at >= content.length) break;
      const end = content.indexOf(at === cdata ? ']]>' : '-->', at);
      if (end === -1) {
        this.#repair(from + at, 'unterminated comment or CDATA section');
        this.#out.push('&lt;');
        i = at + 1;
        continue;
      }
      this.#out.push(content.slice(at, end + 3));
      i = end + 3;
    }
  }

  // Text, or raw content of the leaf `own`: loose '<' escaped, declared entities expanded.
  #textOf(from: number, to: number, own = ''): string {
    const raw = this.#text.slice(from, to);
    const escaped = escapeLooseLt(raw, own);
    if (escaped.count > 0) this.#repair(from, "unescaped '<'", escaped.count);
    return this.#entities.size === 0 ? escaped.text : this.#expand(escaped.text, from);
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

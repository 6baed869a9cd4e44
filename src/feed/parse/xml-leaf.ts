// Leaves whose content feedsmith reads raw (title, description, content…): their text repaired, their end found.
import { escapeAllLt, escapeLooseLt, plainLeafText, tagsBalance } from './xml-text.ts';
import { decodeBase64, findEndTag, splitRaw, type MarkerIndex, type RawPiece } from './xml-scan.ts';

/** An open element of the repair: its name as written and as output, the output chunk of its start tag, where its
 *  end tag starts (-1: not searched yet), whether its content is Atom 0.3 base64, and whether it is plain text that
 *  may hold markup (plainLeafText). */
export type Frame = {
  name: string;
  out: string;
  chunk: number;
  closeAt: number;
  base64?: boolean;
  plain?: boolean;
};

/** What reading a leaf needs of the repair: its output, and its bookkeeping of repairs, stops and entities. */
export type LeafHost = {
  out: string[];
  repair(offset: number, message: string, count?: number): void;
  stop(offset: number, message: string): -1;
  expandText(text: string, offset: number): string;
};

/** Reads raw leaves of one document into the host's output. */
export class LeafReader {
  readonly #text: string;
  readonly #markers: MarkerIndex;
  readonly #host: LeafHost;

  constructor(text: string, markers: MarkerIndex, host: LeafHost) {
    this.#text = text;
    this.#markers = markers;
    this.#host = host;
  }

  /** The leaf `frame` (its start tag already output) inside `parent`, from `from`: its content up to its end tag, or
   *  up to the parent's end when it was never closed. Returns where scanning resumes, -1 on unrecoverable damage. */
  read(frame: Frame, parent: Frame, from: number): number {
    const text = this.#text;
    const out = this.#host.out;
    const limit = this.#closeAt(parent, from);
    const end = findEndTag(text, frame.name, from, limit, this.#markers);
    if (end !== null) {
      const plain = frame.plain
        ? plainLeafText(this.#host.expandText(text.slice(from, end.start), from))
        : null;
      if (frame.base64) out.push(decodeBase64(text.slice(from, end.start)));
      else if (plain !== null) out.push(plain);
      else this.#emitRaw(from, end.start, frame.name);
      out.push(`</${frame.out}>`);
      return end.after;
    }
    const stop = limit === -1 ? text.length : limit;
    if (text.slice(from, stop).trim() === '') {
      out[frame.chunk] = out[frame.chunk]!.replace(/\/?>$/, '/>');
      return stop;
    }
    if (limit === -1) return this.#host.stop(from, `<${frame.name}> is not closed`);
    this.#host.repair(from, `<${frame.name}> is not closed`);
    this.#emitRaw(from, stop, frame.name);
    out.push(`</${frame.out}>`);
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

  // Raw content of the leaf `own`: complete CDATA sections and comments are kept as they are, the text between them
  // is repaired, and an unterminated one is text; when the markup left does not nest, all of it is text.
  #emitRaw(from: number, to: number, own: string): void {
    const { pieces, unterminated } = splitRaw(this.#text, from, to);
    for (const at of unterminated) this.#host.repair(at, 'unterminated comment or CDATA section');
    this.#emitPieces(pieces, own);
  }

  #emitPieces(pieces: RawPiece[], own: string): void {
    const host = this.#host;
    const texts = pieces.map((p) =>
      'kept' in p ? null : escapeLooseLt(this.#text.slice(p.from, p.to), own),
    );
    const balanced = tagsBalance(texts.flatMap((t) => t?.tags ?? []));
    pieces.forEach((p, k) => {
      if ('kept' in p) return host.out.push(p.kept);
      const t = texts[k]!;
      // Not counted as a repair: the text decoder turns the escaped markup back into the same characters (the HTML in
      // an RSS <description> does not nest more often than not).
      if (!balanced && t.tags.length > 0) {
        const all = escapeAllLt(this.#text.slice(p.from, p.to));
        return host.out.push(host.expandText(all, p.from));
      }
      if (t.count > 0) host.repair(p.from, "unescaped '<'", t.count);
      host.out.push(host.expandText(t.text, p.from));
    });
  }
}

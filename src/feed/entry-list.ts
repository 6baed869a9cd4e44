// A document's entries as the parse thread hands them over: each serialized (V8's structured-clone format) into one
// buffer, transferred (not copied) to the main thread, and read there one entry at a time, only where an entry is
// needed. Deserialized whole, a large document's entries would put megabytes of strings on the main thread's heap for
// each poll, held until the poll is recorded, and the young generation would be collected all the more often.
import { deserialize, serialize } from 'node:v8';
import { finishTexts } from './parse/entry.ts';
import type { Entry } from './types.ts';

/** The entries of one document: each serialized, one after another, and where each one ends. */
export type PackedEntries = { bytes: Uint8Array; ends: Uint32Array };

/** Packs `entries`. V8's serializer, not JSON: several times faster on the corpus, and small beside reading the
 *  documents. */
export function packEntries(entries: readonly Entry[]): PackedEntries {
  const parts = entries.map((e) => serialize(e));
  let size = 0;
  for (const p of parts) size += p.length;
  const bytes = new Uint8Array(size);
  const ends = new Uint32Array(parts.length);
  let at = 0;
  parts.forEach((p, i) => {
    bytes.set(p, at);
    at += p.length;
    ends[i] = at;
  });
  return { bytes, ends };
}

/** The buffers to transfer with a message carrying `packed`. */
export function transferOf(packed: PackedEntries): ArrayBuffer[] {
  return [packed.bytes.buffer as ArrayBuffer, packed.ends.buffer as ArrayBuffer];
}

/** A document's entries, read from their packed form when asked for; each call reads its entry anew (callers keep what
 *  they use). `publishedAt` comes along unpacked: scheduling the next poll reads every entry's date. */
export class EntryList {
  readonly #packed: PackedEntries;
  readonly publishedAt: readonly (string | null)[];

  constructor(packed: PackedEntries, publishedAt: readonly (string | null)[]) {
    this.#packed = packed;
    this.publishedAt = publishedAt;
  }

  get length(): number {
    return this.#packed.ends.length;
  }

  /** The entry at `position` (0 ≤ position < length), rendered: one the parse thread left unrendered (the feed's history
   *  holds it as it is: read-document.ts) is rendered here, where the record needs it after all. */
  at(position: number): Entry {
    const { bytes, ends } = this.#packed;
    if (!(position >= 0 && position < ends.length))
      throw new RangeError(`no entry at ${position} of ${ends.length}`);
    const start = position === 0 ? 0 : ends[position - 1]!;
    return finishTexts(deserialize(bytes.subarray(start, ends[position])) as Entry);
  }

  /** Every entry, in document order. */
  all(): Entry[] {
    return Array.from({ length: this.length }, (_, i) => this.at(i));
  }
}

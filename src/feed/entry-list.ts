// A document's entries as the parse thread hands them over: packed as UTF-8 JSON in one buffer, transferred (not
// copied) to the main thread, and read there one entry at a time, only where an entry is needed. Deserialized whole,
// the 200 entries of a 1 MiB document were ~2 MB of strings on the main thread's heap per poll, held until the poll was
// recorded: at 5 such documents a second, a mark-compact every second or so, the API's p99 following.
import type { Entry } from './types.ts';

/** The entries of one document: their JSON, one after another, and where each one ends. */
export type PackedEntries = { bytes: Uint8Array; ends: Uint32Array };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Packs `entries` (any JSON-safe Entry: strings, numbers, null, arrays, plain objects). */
export function packEntries(entries: readonly Entry[]): PackedEntries {
  const texts = entries.map((e) => JSON.stringify(e));
  let size = 0;
  for (const t of texts) size += Buffer.byteLength(t);
  const bytes = new Uint8Array(size);
  const ends = new Uint32Array(texts.length);
  let at = 0;
  texts.forEach((t, i) => {
    at += encoder.encodeInto(t, bytes.subarray(at)).written;
    ends[i] = at;
  });
  return { bytes, ends };
}

/** The buffers to transfer with a message carrying `packed`. */
export function transferOf(packed: PackedEntries): ArrayBuffer[] {
  return [packed.bytes.buffer as ArrayBuffer, packed.ends.buffer as ArrayBuffer];
}

/** A document's entries, read from their packed JSON when asked for; each call reads its entry anew (callers keep what
 *  they use). `publishedAt` comes along unpacked: scheduling the next poll reads every entry's date. */
export class EntryList {
  readonly #packed: PackedEntries;
  readonly publishedAt: readonly (string | null)[];

  constructor(packed: PackedEntries, publishedAt: readonly (string | null)[]) {
    this.#packed = packed;
    this.publishedAt = publishedAt;
  }

  /** Packs `entries` into a list (tests, and documents read without the parse thread). */
  static of(entries: readonly Entry[]): EntryList {
    return new EntryList(
      packEntries(entries),
      entries.map((e) => e.published_at),
    );
  }

  get length(): number {
    return this.#packed.ends.length;
  }

  /** The entry at `position` (0 ≤ position < length). */
  at(position: number): Entry {
    const { bytes, ends } = this.#packed;
    if (!(position >= 0 && position < ends.length))
      throw new RangeError(`no entry at ${position} of ${ends.length}`);
    const start = position === 0 ? 0 : ends[position - 1]!;
    return JSON.parse(decoder.decode(bytes.subarray(start, ends[position]))) as Entry;
  }

  /** Every entry, in document order. */
  all(): Entry[] {
    return Array.from({ length: this.length }, (_, i) => this.at(i));
  }
}

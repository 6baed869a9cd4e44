// Entries too large for any webhook event, made slim where their document is read (feed/parse/read-document.ts, on
// the parse thread for a large body): no event carries such an entry's summary and content (docs/webhooks.md), so they
// are dropped there rather than carried to the main thread, where turning a megabyte of text into an event's or the
// entry history's JSON would hold the event loop for tens of milliseconds only to drop it.
import type { Entry } from './types.ts';

/** Characters of an entry's text fields together above which no event can carry it whole: MAX_EVENT_BYTES of
 *  webhook/event.ts (a test holds them equal), since a character takes at least one byte of an event's JSON. */
export const SLIM_ABOVE_CHARS = 256 * 1024;
/** Characters of a slim entry's plain text that filters still read (rules on `text`, feed/filter/rules.ts). */
export const SLIM_TEXT_CHARS = 64 * 1024;

/** The entry as it is carried further: itself, or, when its text fields together exceed SLIM_ABOVE_CHARS, without its
 *  summary and content, with `slim` keeping what still reads them: its content hash (`hash`, of the whole entry:
 *  feed/identity/content-hash.ts) and the head of its plain text for filters. key_source stays whole: held entries are
 *  keyed again from it (actions/ingest/identity.ts). */
export function slimEntry(entry: Entry, hash: string): Entry {
  if (textChars(entry) <= SLIM_ABOVE_CHARS) return entry;
  const text = entry.content_text ?? entry.summary;
  return {
    ...entry,
    summary: null,
    summary_html: null,
    content_html: null,
    content_text: null,
    slim: { hash, text: text === null ? null : text.slice(0, SLIM_TEXT_CHARS) },
  };
}

/** The characters of every text an event shows of the entry: a lower bound of its JSON's bytes. */
function textChars(e: Entry): number {
  const len = (s: string | null) => (s === null ? 0 : s.length);
  let n =
    len(e.guid) +
    len(e.url) +
    len(e.title) +
    len(e.summary) +
    len(e.summary_html) +
    len(e.content_html) +
    len(e.content_text) +
    len(e.image);
  for (const a of e.authors) n += a.length;
  for (const c of e.categories) n += c.length;
  for (const x of e.enclosures) n += x.url.length + len(x.type);
  return n;
}

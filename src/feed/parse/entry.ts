// Turns an entry's candidate texts (each with its declared type) into the typed Entry fields; reads Atom's types.
import { looksLikeHtml, plainTitle, typedText, type TextKind } from './entry-text.ts';
import { childBase } from './urls.ts';
import { text } from './values.ts';
import { shortHash } from '../identity/short-hash.ts';
import type { Entry, UnfinishedTexts } from '../types.ts';

/** One candidate text: its value as feedsmith read it (entities decoded once), how it was declared, and the base
 *  its relative URLs resolve against when it is not the entry's. */
export type Typed = { value: string | null; kind: TextKind; base?: string | null };
/** An entry before its text is typed: candidates in order of preference (the first non-empty one is used). */
export type Draft = Omit<
  Entry,
  'title' | 'summary' | 'summary_html' | 'content_html' | 'content_text'
> & { title: Typed[]; summary: Typed[]; content: Typed[] };
/** The entry's base URL, whether HTML is sanitized (delivery.sanitize_html), and whether the summary and content are
 *  left unrendered (`defer`: Entry.unfinished, for finishTexts). */
export type TextOptions = { base: string | null; sanitize: boolean; defer?: boolean };

type V1Entry = Pick<
  Entry,
  'guid' | 'url' | 'title' | 'summary' | 'authors' | 'categories' | 'enclosures'
> &
  Pick<Entry, 'published_at' | 'updated_at'> & { content: string | null };
type AtomText = { value?: string; type?: string; xml?: { base?: string } };

/** The finished entry: plain-text title, summary and content in both renderings; with `opts.defer`, its summary and
 *  content chosen but not rendered (Entry.unfinished: finishTexts renders them). */
export function finishEntry(draft: Draft, opts: TextOptions): Entry {
  const { title, summary, content, ...rest } = draft;
  const chosen = { summary: pick(summary), content: pick(content) };
  const s = opts.defer ? NO_TEXT : render(chosen.summary, opts);
  const c = opts.defer ? NO_TEXT : render(chosen.content, opts);
  const unfinished = opts.defer
    ? { unfinished: { ...chosen, base: opts.base, sanitize: opts.sanitize } }
    : {};
  return {
    guid: rest.guid,
    url: rest.url,
    title: titleText(title),
    summary: s.text,
    summary_html: s.html,
    content_html: c.html,
    content_text: c.text,
    image: rest.image,
    authors: rest.authors,
    categories: rest.categories,
    enclosures: rest.enclosures,
    published_at: rest.published_at,
    updated_at: rest.updated_at,
    key_source: rest.key_source,
    ...unfinished,
  };
}

const NO_TEXT = { text: null, html: null };

/** The entry with its summary and content rendered, as finishEntry renders them; the entry itself when they are. */
export function finishTexts(entry: Entry): Entry {
  const u = entry.unfinished;
  if (u === undefined) return entry;
  const { unfinished: _, ...rest } = entry;
  const s = render(u.summary, u);
  const c = render(u.content, u);
  return {
    ...rest,
    summary: s.text,
    summary_html: s.html,
    content_html: c.html,
    content_text: c.text,
  };
}

/** What an unfinished entry's content hash follows from: its title and updated date, and the declared summary and
 *  content with how they render (`version`: the parser's, so a parser that renders anew does not reuse old hashes).
 *  Two entries with one source hash have one content hash. */
export function sourceHash(entry: Entry, version: number): string {
  const u = entry.unfinished;
  if (u === undefined) throw new Error('sourceHash: the entry is finished');
  const declared = (t: UnfinishedTexts['summary']) =>
    t === null ? null : [t.value, t.kind, t.base === undefined ? u.base : t.base];
  const fields = [
    version,
    u.sanitize,
    entry.title,
    entry.updated_at,
    declared(u.summary),
    declared(u.content),
  ];
  return shortHash(JSON.stringify(fields));
}

/** A title as plain text on one line, from its candidates in order of preference: a feed's or an entry's alike. HTML
 *  (an Atom html or xhtml title, an RSS title that looks like HTML) is rendered to its text, so no markup, and no URL
 *  of it, relative or not, is left in a title. */
export function titleText(candidates: Typed[]): string | null {
  const t = pick(candidates);
  return t ? plainTitle(t.value, t.kind) : null;
}

/** An entry stored by version 1 (a held entry, JSON with `summary` and `content` as the feed had them) in today's
 *  shape: its title and texts typed as an RSS feed's would be, URLs resolved against its link, sanitized. */
export function fromV1Entry(entry: Entry): Entry {
  if ('summary_html' in entry) return entry;
  const v1 = entry as V1Entry;
  const { title, summary, content } = v1;
  return finishEntry(
    {
      guid: v1.guid,
      url: v1.url,
      authors: v1.authors,
      categories: v1.categories,
      enclosures: v1.enclosures,
      published_at: v1.published_at,
      updated_at: v1.updated_at,
      image: null,
      title: [guessed(title)],
      summary: [html(summary)],
      content: [html(content)],
      key_source: { title, body: content ?? summary },
    },
    { base: v1.url, sanitize: true },
  );
}

/** A text an RSS-family feed declares as plain (titles, dc:description, itunes:summary): HTML when it looks like
 *  HTML, as feedparser decides for non-Atom feeds. */
export function guessed(value: unknown): Typed {
  const v = text(value);
  return { value: v, kind: v !== null && looksLikeHtml(v) ? 'html' : 'text' };
}

/** A text that is HTML by definition (RSS description, content:encoded, JSON content_html). */
export function html(value: unknown): Typed {
  return { value: text(value), kind: 'html' };
}

/** A text that is plain by definition (JSON Feed title, summary, content_text). */
export function plain(value: unknown): Typed {
  return { value: text(value), kind: 'text' };
}

/** An Atom text construct by its type (RFC 4287 §3.1, §4.1.3): text, html, xhtml, or a media type (Atom 0.3's
 *  text/html, text/plain, application/xhtml+xml). Content of another media type is base64 (§4.1.3.3): it is decoded,
 *  and kept when it is text; content that is not base64 at all (JSON written as it is, say) is kept as its text, as
 *  feedparser does. `base` is the entry's; the element's own xml:base applies on top. */
export function atomText(t: AtomText | undefined, base: string | null): Typed {
  const value = typeof t?.value === 'string' ? t.value : null;
  const elementBase = childBase(t?.xml?.base, base);
  const type = t?.type?.trim().toLowerCase() || 'text';
  if (['html', 'xhtml', 'text/html', 'application/xhtml+xml'].includes(type))
    return { value: text(value), kind: 'html', base: elementBase };
  if (type === 'text' || type.startsWith('text/') || /[/+]xml$/.test(type))
    return { value: text(value), kind: 'text', base: elementBase };
  return { value: text(decodeBase64Text(value)), kind: 'text', base: elementBase };
}

// Content of another media type: the UTF-8 text its base64 encodes, null when that is not text (an image, say), or
// the content itself when it holds a character base64 never does (RFC 4648 §4), so it is not base64 at all.
function decodeBase64Text(value: string | null): string | null {
  if (value === null) return null;
  if (!/^[A-Za-z0-9+/=\s]+$/.test(value)) return value;
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  return /[\uFFFD\x00-\x08\x0E-\x1F]/.test(decoded) ? null : decoded;
}

function pick(candidates: Typed[]): Typed | null {
  return candidates.find((c) => c.value !== null && c.value.trim() !== '') ?? null;
}

function render(t: Typed | null, opts: TextOptions): { text: string | null; html: string | null } {
  if (!t) return { text: null, html: null };
  return typedText(t.value, t.kind, {
    base: t.base === undefined ? opts.base : t.base,
    sanitize: opts.sanitize,
  });
}

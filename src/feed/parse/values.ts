// Small readers shared by the format mappers: trimmed text, people, links, enclosures, dates, lists.
import { demoronize } from './decode.ts';
import { parseFeedDate } from './dates.ts';
import { looksLikeHtml, plainTitle } from './entry-text.ts';
import { resolveUrl } from './urls.ts';
import type { Enclosure } from '../types.ts';

export type AtomLink = { href?: string; rel?: string; type?: string; length?: number };
export type Person = { name?: string; email?: string; link?: string; uri?: string; url?: string };

/** Trimmed, demoronized text; null when empty. Numbers become their decimal text. */
export function text(value: unknown): string | null {
  if (typeof value === 'number') return String(value);
  if (typeof value !== 'string') return null;
  return demoronize(value.trim()) || null;
}

/** The non-empty texts, each once, in order. */
export function uniq(values: Array<string | null | undefined>): string[] {
  const out = new Set<string>();
  for (const v of values) {
    const t = text(v);
    if (t) out.add(t);
  }
  return [...out];
}

/** The values that are not null. */
export function compact<T>(values: Array<T | null>): T[] {
  return values.filter((v): v is T => v !== null);
}

/** Display string for a person: the name when there is one, else the email or link. */
export function personName(p: Person | string | undefined): string | undefined {
  if (typeof p === 'string') return p;
  return text(p?.name) ?? text(p?.email) ?? text(p?.link ?? p?.uri ?? p?.url) ?? undefined;
}

/** A name the feed gives as plain text (dc:creator, itunes:author) on one line: its text when it looks like HTML
 *  (feedparser's guess: escaped markup, a CDATA section of it), else as written. */
export function plainName(value: unknown): string | null {
  const t = text(value);
  return t !== null && looksLikeHtml(t) ? plainTitle(t, 'html') : t;
}

/** The first date that parses, as ISO UTC; null when none does. */
export function firstDate(...raws: Array<string | undefined>): string | null {
  for (const raw of raws) {
    const iso = parseFeedDate(raw);
    if (iso) return iso;
  }
  return null;
}

/** Atom link choice (RFC 4287 §4.2.7.2: no rel means "alternate"); an HTML alternate wins over others. */
export function pickLink(links: AtomLink[], rel: string): AtomLink | undefined {
  const matching = links.filter(
    (l) => (l.rel?.trim().toLowerCase() || 'alternate') === rel && l.href,
  );
  return matching.find((l) => !l.type || /html/i.test(l.type)) ?? matching[0];
}

/** The rel="enclosure" links as enclosures (null where the href is unusable). */
export function linkEnclosures(links: AtomLink[], base: string | null): Array<Enclosure | null> {
  return links
    .filter((l) => l.rel?.trim().toLowerCase() === 'enclosure')
    .map((l) => enclosure(l.href, l.type, l.length, base));
}

/** An enclosure with its URL resolved; null when the URL is unusable. */
export function enclosure(
  url: string | undefined,
  type: string | undefined,
  length: number | undefined,
  base: string | null,
): Enclosure | null {
  const resolved = resolveUrl(url, base);
  if (!resolved) return null;
  const len = typeof length === 'number' && Number.isFinite(length) && length >= 0 ? length : null;
  return { url: resolved, type: text(type), length: len };
}

/** Enclosures once per URL, the first seen kept. */
export function uniqueEnclosures(list: Array<Enclosure | null>): Enclosure[] {
  const seen = new Set<string>();
  return compact(list).filter((e) => !seen.has(e.url) && seen.add(e.url));
}

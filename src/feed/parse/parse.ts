// Feed text → ParsedFeed: detects the format from the root element, recovers truncated XML, normalizes entries.
import { parseAtomFeed, parseJsonFeed, parseRdfFeed, parseRssFeed, ParseError } from 'feedsmith';
import type { JsonFeed } from 'feedsmith';
import { mapAtom, mapJson, mapRdf, mapRss, type MapOptions } from './formats.ts';
import { documentBase } from './urls.ts';
import { findRootElement, prologWithoutDoctype, stripIllegalXmlChars } from './xml-prolog.ts';
import { repairXml } from './xml-recover.ts';
import type { FeedFormat, ParsedFeed, ParseOptions } from '../types.ts';

/** The text is not a feed at all (HTML, unknown XML, invalid JSON) or nothing could be recovered. */
export class FeedParseError extends Error {
  override name = 'FeedParseError';
}

/**
 * The parser's version. Raise it when parsing starts to read entries an earlier version could not (markup it now
 * repairs, elements it now falls back to): such entries are old, not new, and a feed read by an older version takes
 * an upgrade pass on its next parse instead of sending them (actions/ingest/upgrade.ts), and a known entry it reads
 * differently is stored without being sent as an update (actions/ingest/entries.ts). 2: lenient XML repair, internal
 * DTD entities, prefixed core elements, extension fallbacks. 3: look-alike entries told apart by atom:id or
 * dc:identifier, Atom entries whose only link has no attribute; and, for known entries, base64 text in prefixed
 * elements, content of another media type that is not base64, dc:date as the update date.
 */
export const PARSER_VERSION = 3;

const SNIFF_LIMIT = 65536;
const XML_FORMATS: Record<string, FeedFormat> = { rss: 'rss', feed: 'atom', rdf: 'rdf' };
const JSON_FEED_VERSION = /"version"\s*:\s*"https?:\/\/jsonfeed\.org\/version\//i;

/** Cheap sniff used before parsing: 'feed' | 'html' | 'unknown'. Looks at the first 64 KiB only. */
export function sniffDocument(text: string): 'feed' | 'html' | 'unknown' {
  const head = text
    .slice(0, SNIFF_LIMIT)
    .replace(/^\uFEFF/, '')
    .trimStart();
  if (head.startsWith('{')) return JSON_FEED_VERSION.test(head) ? 'feed' : 'unknown';
  const root = findRootElement(head);
  if (root && localName(root.name) in XML_FORMATS) return 'feed';
  if (root?.name === 'html' || /^<!doctype\s+html/i.test(head)) return 'html';
  return 'unknown';
}

/** Text → ParsedFeed. Throws FeedParseError when the text is not a feed at all (e.g. HTML) or
 *  nothing can be recovered. baseUrl = final fetch URL; contentLocation = HTTP Content-Location. */
export function parseFeed(text: string, opts: ParseOptions): ParsedFeed {
  refuseByHead(text);
  const clean = stripIllegalXmlChars(text).replace(/^\uFEFF/, '');
  // `defer` reaches each entry's TextOptions (feed/parse/entry.ts) through the mapping's options.
  const base: MapOptions & { defer: boolean } = {
    base: documentBase(opts.baseUrl, opts.contentLocation),
    sanitize: opts.sanitizeHtml ?? true,
    defer: opts.deferTexts === true,
  };
  if (clean.trimStart().startsWith('{')) {
    const json = readJsonFeed(clean);
    // Never deferred: a JSON Feed item's own content_text replaces the content's rendering after it (formats.ts).
    const opts = { ...base, defer: false };
    return { ...(json ? mapJson(json, opts) : emptyFeed('json')), degraded: null };
  }
  const root = findRootElement(clean);
  if (!root) throw new FeedParseError('parse: not a feed (no XML root element)');
  const format = XML_FORMATS[localName(root.name)];
  if (!format) throw new FeedParseError(`parse: not a feed (${describeRoot(root.name)})`);
  const notes: string[] = [];
  let prolog = prologWithoutDoctype(clean.slice(0, root.offset));
  if (clean.slice(0, clean.indexOf('<')).trim() !== '') {
    prolog = ''; // e.g. a PHP warning printed before the XML declaration
    notes.push('text before the root element dropped');
  }
  const repaired = repairXml(clean, root.offset);
  const damage = repaired.damage;
  if (damage) {
    const more = repaired.repairs > 1 ? ` (and ${repaired.repairs - 1} more)` : '';
    const stop = repaired.stopped;
    const stopped =
      stop && stop.offset !== damage.offset
        ? `; stopped at line ${stop.line}: ${stop.message}`
        : '';
    const where = `malformed XML at line ${damage.line}: ${damage.message}${more}${stopped}`;
    if (repaired.xml === null) throw new FeedParseError(`parse: ${where}; nothing recovered`);
    const feed = parseXml(format, prolog + repaired.xml, base);
    notes.push(`${where}; recovered ${feed.entries.length} items`);
    return { ...feed, degraded: notes.join('; ') };
  }
  const feed = parseXml(format, prolog + (repaired.xml ?? ''), base);
  return { ...feed, degraded: notes.length ? notes.join('; ') : null };
}

// How much of a long text the early refusal reads: far more than any prolog before a real feed's root element.
const HEAD_CHARS = 64 * 1024;

/** Refuses a long text whose head shows it is not a feed (notFeedByHead) before the whole text is copied (cleaned,
 *  then repaired), which for a 10 MiB body of random bytes would take several times its size of the parse heap. */
function refuseByHead(text: string): void {
  const refused = text.length > HEAD_CHARS ? notFeedByHead(text.slice(0, HEAD_CHARS)) : null;
  if (refused !== null) throw new FeedParseError(refused);
}

/** The "not a feed" error for a document whose first characters, `head`, already show it is not one; null when the
 *  head decides nothing. A root element that is not a feed's gives the error the whole text would get: the cleaning is
 *  per character and the root is searched from the start, so the head gives the same root as the whole text whenever
 *  the root's name ends before the cut (the root element is ASCII in every charset a feed can be in, so a head decoded on
 *  its own, its last character perhaps cut, names the same root as the whole document decoded). No root element at all
 *  in a head of a longer document refuses it too: no feed has that much before its root, and random bytes whose head
 *  opened a processing instruction or comment would otherwise be read whole (up to the body cap) to find one. */
export function notFeedByHead(head: string): string | null {
  const clean = stripIllegalXmlChars(head).replace(/^\uFEFF/, '');
  if (clean.trimStart().startsWith('{')) return null;
  const root = findRootElement(clean);
  if (!root) return `parse: not a feed (no XML root element in its first ${HEAD_CHARS / 1024} KiB)`;
  if (root.offset + 1 + root.name.length >= clean.length) return null;
  return XML_FORMATS[localName(root.name)]
    ? null
    : `parse: not a feed (${describeRoot(root.name)})`;
}

function parseXml(
  format: FeedFormat,
  text: string,
  base: MapOptions,
): Omit<ParsedFeed, 'degraded'> {
  try {
    if (format === 'rss') return mapRss(parseRssFeed(text), base);
    if (format === 'atom') return mapAtom(parseAtomFeed(text), base);
    return mapRdf(parseRdfFeed(text), base);
  } catch (err) {
    // feedsmith reports a well-formed feed with nothing in it as ParseError: that is an empty feed.
    if (err instanceof ParseError) return emptyFeed(format);
    throw new FeedParseError(`parse: unable to parse ${format} (${describe(err)})`, { cause: err });
  }
}

// What a JSON string may hold through an escape and an XML feed's text never does (its parser reads &#0; or &#xD800; as
// U+FFFD): a NUL, or half of a surrogate pair. Stored JSON text escapes them again (\u0000, \ud800), which
// PostgreSQL's json operators refuse, and text columns cannot hold a NUL; JSON Feed strings read them as U+FFFD too.
const UNSTORABLE = /\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
/** An escape in JSON text that may read as one of UNSTORABLE (a pair's high half may be followed by its low one). */
const UNSTORABLE_ESCAPE = /\\u(?:0000|d[89a-f])/i;

// Null for a JSON Feed with nothing in it (feedsmith's ParseError), like an empty XML feed.
function readJsonFeed(text: string): JsonFeed.Feed<string> | null {
  let value: unknown;
  try {
    value = UNSTORABLE_ESCAPE.test(text)
      ? JSON.parse(text, (_key, v: unknown) =>
          typeof v === 'string' ? v.replace(UNSTORABLE, '\uFFFD') : v,
        )
      : JSON.parse(text);
  } catch (err) {
    throw new FeedParseError(`parse: invalid JSON (${describe(err)})`, { cause: err });
  }
  const version =
    typeof value === 'object' && value !== null
      ? (value as Record<string, unknown>).version
      : undefined;
  if (typeof version !== 'string' || !/jsonfeed\.org/i.test(version)) {
    throw new FeedParseError('parse: not a feed (JSON without a jsonfeed.org version)');
  }
  try {
    return parseJsonFeed<string>(value);
  } catch (err) {
    if (err instanceof ParseError) return null;
    throw new FeedParseError(`parse: unable to parse json (${describe(err)})`, { cause: err });
  }
}

function emptyFeed(format: FeedFormat): Omit<ParsedFeed, 'degraded'> {
  return {
    format,
    title: null,
    site_url: null,
    ttl_seconds: null,
    hub_url: null,
    self_url: null,
    entries: [],
  };
}

function localName(name: string): string {
  return name.slice(name.indexOf(':') + 1);
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${err.message}${cause}`.slice(0, 200);
}

/** The root element as an error shows it: its name when it reads as one (`<html>`), else not at all, so random bytes
 *  that happen to follow a '<' never reach a feed's last_error. */
function describeRoot(name: string): string {
  return /^[A-Za-z_][\w.:-]{0,63}$/.test(name)
    ? `root element <${name}>`
    : 'its root element is not a name';
}

// Typed entry text (JSON Feed's convention): plain titles, HTML prepared by entry-html.ts, plain renderings.
import { Parser } from 'htmlparser2';
import { isAllowedTag, prepareHtml, type HtmlOptions } from './entry-html.ts';

/** How a feed declared a text: literal text, or HTML (Atom html and xhtml, RSS description, JSON content_html). */
export type TextKind = 'text' | 'html';
/** One text field in both renderings; both null when the feed had nothing there. */
export type TypedText = { text: string | null; html: string | null };

// Block elements start a new paragraph in the text rendering; these only a new line.
const PARAGRAPHS = new Set(
  'address article aside blockquote details div dl figure footer form h1 h2 h3 h4 h5 h6 header hr main nav ol p pre section table ul'.split(
    ' ',
  ),
);
const LINES = new Set(['br', 'li', 'tr', 'dt', 'dd', 'figcaption', 'caption', 'summary']);
// Text content needs only these escaped (HTML §13.1.3); quotes stay, as sanitize-html leaves them in text.
const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' };
// Structural breaks while rendering, told apart from newlines written inside <pre>.
const LINE = '\u0000';
const PARAGRAPH = '\u0001';
// Starts at a break character, so it never backtracks through a long run of spaces.
const BREAKS = /[\u0000\u0001][\u0000\u0001 \t]*/g;
const SKIPPED = new Set(['script', 'style', 'template', 'noscript', 'head', 'title']);
// feedparser's test for RSS text that is really HTML: a closing tag or an entity reference (and, in its words,
// "all tags must be in a restricted subset of valid HTML tags").
const HTML_CLOSE_TAG = /<\/(\w+)>/;
const ENTITY = /&#?\w+;/;

/** A declared-type value in both renderings. `html` is made safe and absolute by prepareHtml; `text` is the literal
 *  text or the HTML's plain rendering. */
export function typedText(value: string | null, kind: TextKind, opts: HtmlOptions): TypedText {
  if (value === null || value.trim() === '') return { text: null, html: null };
  if (kind === 'text') {
    const text = value.trim();
    return { text, html: escapeHtml(text) };
  }
  if (!/[<&]/.test(value)) {
    // HTML without a tag or an entity is its own text: no parse needed (most summaries; a third of the cost).
    const text = value.replace(/\s+/g, ' ').trim();
    return { text, html: escapeHtml(value.trim()) };
  }
  const html = prepareHtml(value, opts);
  return { text: htmlToText(html) || null, html: html.trim() || null };
}

/** A title as plain text on one line: HTML is rendered, literal text kept as it is (only whitespace collapsed). */
export function plainTitle(value: string | null, kind: TextKind): string | null {
  if (value === null) return null;
  const text = kind === 'html' ? htmlToText(value) : value;
  return text.replace(/\s+/g, ' ').trim() || null;
}

/** feedparser's guess for RSS elements declared as plain text: HTML when it has a closing tag or an entity
 *  reference, and every tag in it is one the allowlist knows. */
export function looksLikeHtml(value: string): boolean {
  if (!HTML_CLOSE_TAG.test(value) && !ENTITY.test(value)) return false;
  const tags = [...value.matchAll(/<\/?(\w+)/g)].map((m) => m[1]!.toLowerCase());
  return tags.every(isAllowedTag);
}

/** The plain-text rendering of HTML: entities decoded, scripts and styles dropped, block elements on their own
 *  lines (paragraphs separated by a blank line), runs of spaces collapsed. */
export function htmlToText(html: string): string {
  const parts: string[] = [];
  let skipping = 0;
  let pre = 0; // inside <pre>, whitespace is kept as written (HTML §13.2.6.4.7)
  const parser = new Parser(
    {
      onopentag(name) {
        if (SKIPPED.has(name)) skipping++;
        if (name === 'pre') pre++;
        if (PARAGRAPHS.has(name)) pushBreak(parts, PARAGRAPH);
        else if (LINES.has(name)) pushBreak(parts, LINE);
      },
      ontext(text) {
        if (skipping === 0) parts.push(pre > 0 ? text : text.replace(/[^\S\u00A0]+/g, ' '));
      },
      onclosetag(name) {
        if (SKIPPED.has(name)) skipping = Math.max(0, skipping - 1);
        if (name === 'pre') pre = Math.max(0, pre - 1);
        if (PARAGRAPHS.has(name)) pushBreak(parts, PARAGRAPH);
      },
    },
    { decodeEntities: true },
  );
  parser.end(html);
  // A run of breaks (with the spaces around it) is one paragraph break when it holds one, else one line break.
  return parts
    .join('')
    .replace(BREAKS, (run) => (run.includes(PARAGRAPH) ? '\n\n' : '\n'))
    .trim();
}

// A break, with the spaces that end the text before it dropped (a manual scan: a regex anchored at the end would
// backtrack through a long run of spaces).
function pushBreak(parts: string[], kind: string): void {
  const last = parts.length - 1;
  const prev = parts[last];
  if (prev !== undefined) {
    let end = prev.length;
    while (end > 0 && (prev[end - 1] === ' ' || prev[end - 1] === '\t')) end--;
    parts[last] = prev.slice(0, end);
  }
  parts.push(kind);
}

/** Text as HTML text content: '&', '<' and '>' escaped (one pass). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>]/g, (c) => HTML_ESCAPES[c]!);
}

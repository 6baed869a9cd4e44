// Typed entry text (JSON Feed's convention): plain titles, sanitized HTML with absolute URLs, plain renderings.
import { Parser } from 'htmlparser2';
import sanitizeHtml from 'sanitize-html';
import { absoluteUrl } from './parse-urls.ts';

/** How a feed declared a text: literal text, or HTML (Atom html and xhtml, RSS description, JSON content_html). */
export type TextKind = 'text' | 'html';
/** What preparing HTML needs: the base its relative URLs resolve against, and whether to sanitize it. */
export type HtmlOptions = { base: string | null; sanitize: boolean };
/** One text field in both renderings; both null when the feed had nothing there. */
export type TypedText = { text: string | null; html: string | null };

// The allowlist (README › Webhooks): structure, inline formatting, tables, lists, links, images and media. No
// scripts, styles, forms, frames, event handlers, classes or ids.
const ALLOWED_TAGS = [
  ...[
    'a',
    'abbr',
    'b',
    'bdi',
    'bdo',
    'br',
    'cite',
    'code',
    'data',
    'del',
    'dfn',
    'em',
    'i',
    'ins',
    'kbd',
  ],
  ...[
    'mark',
    'q',
    'rp',
    'rt',
    'ruby',
    's',
    'samp',
    'small',
    'span',
    'strike',
    'strong',
    'sub',
    'sup',
  ],
  ...[
    'time',
    'u',
    'var',
    'wbr',
    'address',
    'article',
    'aside',
    'blockquote',
    'dd',
    'details',
    'div',
  ],
  ...[
    'dl',
    'dt',
    'figcaption',
    'figure',
    'footer',
    'h1',
    'h2',
    'h3',
    'h4',
    'h5',
    'h6',
    'header',
    'hr',
  ],
  ...[
    'li',
    'main',
    'nav',
    'ol',
    'p',
    'pre',
    'section',
    'summary',
    'ul',
    'caption',
    'col',
    'colgroup',
  ],
  ...[
    'table',
    'tbody',
    'td',
    'tfoot',
    'th',
    'thead',
    'tr',
    'img',
    'picture',
    'audio',
    'video',
    'source',
  ],
  'track',
];
const ALLOWED_ATTRIBUTES: Record<string, string[]> = {
  '*': ['title', 'lang', 'dir'],
  a: ['href', 'hreflang'],
  img: ['src', 'srcset', 'alt', 'width', 'height', 'sizes'],
  source: ['src', 'srcset', 'type', 'media', 'sizes'],
  audio: ['src', 'controls', 'loop', 'muted', 'preload'],
  video: ['src', 'poster', 'controls', 'loop', 'muted', 'preload', 'width', 'height'],
  track: ['src', 'kind', 'srclang', 'label', 'default'],
  blockquote: ['cite'],
  q: ['cite'],
  del: ['cite', 'datetime'],
  ins: ['cite', 'datetime'],
  time: ['datetime'],
  data: ['value'],
  ol: ['start', 'reversed', 'type'],
  li: ['value'],
  td: ['colspan', 'rowspan', 'headers'],
  th: ['colspan', 'rowspan', 'headers', 'scope', 'abbr'],
  col: ['span'],
  colgroup: ['span'],
};
// Links may be web pages or mail; images and media only web URLs: no javascript:, data:, vbscript: or file:.
const ALLOWED_SCHEMES = ['http', 'https', 'mailto'];
const URL_ATTRIBUTES = ['href', 'src', 'poster', 'cite', 'background', 'longdesc'];
const SANITIZE: sanitizeHtml.IOptions = {
  allowedTags: ALLOWED_TAGS,
  allowedAttributes: ALLOWED_ATTRIBUTES,
  allowedSchemes: ALLOWED_SCHEMES,
  allowedSchemesByTag: {
    img: ['http', 'https'],
    source: ['http', 'https'],
    audio: ['http', 'https'],
    video: ['http', 'https'],
    track: ['http', 'https'],
  },
  allowedSchemesAppliedToAttributes: ['href', 'src', 'cite', 'poster'],
  allowProtocolRelative: false,
  disallowedTagsMode: 'discard',
  nonTextTags: ['script', 'style', 'textarea', 'option', 'noscript', 'template', 'title'],
};
const PASS_THROUGH: sanitizeHtml.IOptions = {
  allowedTags: false,
  allowedAttributes: false,
  allowVulnerableTags: true,
  parseStyleAttributes: false,
  allowedSchemesAppliedToAttributes: [],
  allowProtocolRelative: true,
};
// Block elements start a new paragraph in the text rendering; these only a new line.
const PARAGRAPHS = new Set(
  'address article aside blockquote details div dl figure footer form h1 h2 h3 h4 h5 h6 header hr main nav ol p pre section table ul'.split(
    ' ',
  ),
);
const LINES = new Set(['br', 'li', 'tr', 'dt', 'dd', 'figcaption', 'caption', 'summary']);
const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
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
  return tags.every((t) => ALLOWED_TAGS.includes(t));
}

/** HTML with every URL attribute absolute (against `base`), sanitized unless `sanitize` is false. */
export function prepareHtml(html: string, opts: HtmlOptions): string {
  const resolve: sanitizeHtml.Transformer = (tagName, attribs) => ({
    tagName,
    attribs: absoluteAttributes(attribs, opts.base),
  });
  if (!opts.sanitize)
    return sanitizeHtml(html, { ...PASS_THROUGH, transformTags: { '*': resolve } });
  return sanitizeHtml(html, { ...SANITIZE, transformTags: { iframe: iframeAsLink, '*': resolve } });
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

/** Text as HTML: the five special characters escaped (one pass). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

// An embedded frame (a video player, mostly) becomes a link to it: the reader keeps the reference, and no page of the
// receiver embeds a third party's active content.
function iframeAsLink(_tag: string, attribs: sanitizeHtml.Attributes): sanitizeHtml.Tag {
  const src = attribs.src ?? '';
  return { tagName: 'a', attribs: { href: src }, text: attribs.title || src };
}

function absoluteAttributes(
  attribs: sanitizeHtml.Attributes,
  base: string | null,
): sanitizeHtml.Attributes {
  const out: sanitizeHtml.Attributes = { ...attribs };
  for (const name of URL_ATTRIBUTES) {
    const value = out[name];
    if (value !== undefined) out[name] = absoluteUrl(value, base);
  }
  for (const name of ['srcset', 'imagesrcset']) {
    const value = out[name];
    if (value !== undefined) out[name] = absoluteSrcset(value, base);
  }
  return out;
}

// srcset (HTML §4.8.4.3): comma-separated "url [descriptors]" candidates; a URL is a run of non-space characters
// (commas inside it allowed, trailing ones end the candidate). A linear scan, like the HTML parsing algorithm.
function absoluteSrcset(srcset: string, base: string | null): string {
  const out: string[] = [];
  let i = 0;
  while (i < srcset.length) {
    while (i < srcset.length && (srcset[i] === ',' || /\s/.test(srcset[i]!))) i++;
    let end = i;
    while (end < srcset.length && !/\s/.test(srcset[end]!)) end++;
    let urlEnd = end;
    while (urlEnd > i && srcset[urlEnd - 1] === ',') urlEnd--;
    const url = srcset.slice(i, urlEnd);
    if (!url) break;
    let descriptors = '';
    if (urlEnd === end) {
      const comma = srcset.indexOf(',', end);
      const stop = comma === -1 ? srcset.length : comma;
      descriptors = srcset.slice(end, stop).trim();
      end = stop;
    }
    out.push(descriptors ? `${absoluteUrl(url, base)} ${descriptors}` : absoluteUrl(url, base));
    i = end;
  }
  return out.join(', ');
}

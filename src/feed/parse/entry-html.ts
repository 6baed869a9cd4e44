// Entry HTML made safe to show: every URL absolute, and sanitized by sanitize-html with the allowlist docs/webhooks.md
// shows.
import sanitizeHtml from 'sanitize-html';
import { absoluteUrl } from './urls.ts';

/** What preparing HTML needs: the base its relative URLs resolve against, and whether to sanitize it. */
export type HtmlOptions = { base: string | null; sanitize: boolean };

/** The allowlist's tags (docs/webhooks.md › The HTML allowlist, a test keeps them equal): structure, inline formatting,
 *  tables, lists, links, images and media. No scripts, styles, forms, frames, event handlers, classes or ids. */
export const ALLOWED_TAGS: readonly string[] = (
  'a abbr b bdi bdo br cite code data del dfn em i ins kbd mark q rp rt ruby s samp small span strike strong sub ' +
  'sup time u var wbr address article aside blockquote dd details div dl dt figcaption figure footer h1 h2 h3 h4 ' +
  'h5 h6 header hr li main nav ol p pre section summary ul caption col colgroup table tbody td tfoot th thead tr ' +
  'img picture audio video source track'
).split(' ');
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
  allowedTags: [...ALLOWED_TAGS],
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
/** True for the tags the allowlist keeps (lowercase names). */
export function isAllowedTag(name: string): boolean {
  return ALLOWED_TAGS.includes(name);
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

// Feed bytes → text: picks the charset from BOM, HTTP header, XML declaration or the bytes themselves.
import { isAscii } from 'node:buffer';
import iconv from 'iconv-lite';
import { detectLegacyCharset } from './decode-detect.ts';

export type Decoded = {
  text: string;
  charset: string;
  source: 'bom' | 'http' | 'xml' | 'utf-8' | 'detected' | 'fallback';
};

type Wide = 'utf-16le' | 'utf-16be' | 'utf-32le' | 'utf-32be';

// Labels reported under one name: latin-1 spellings, and the GB family decoded as its superset.
const ALIASES: Record<string, string> = {
  latin1: 'iso-8859-1',
  'iso8859-1': 'iso-8859-1',
  'iso_8859-1': 'iso-8859-1',
  l1: 'iso-8859-1',
  utf8: 'utf-8',
  ascii: 'us-ascii',
  'iso-646-us': 'us-ascii',
  gb2312: 'gb18030',
  gbk: 'gb18030',
  'x-gbk': 'gb18030',
  cp936: 'gb18030',
};

// windows-1252 meanings of 0x80–0x9F (WHATWG Encoding); the five undefined bytes keep their C1 code point.
const CP1252_HIGH = [
  0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039, 0x152,
  0x8d, 0x17d, 0x8f, 0x90, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x2dc, 0x2122,
  0x161, 0x203a, 0x153, 0x9d, 0x17e, 0x178,
];

/** Replaces C1 control characters (U+0080–U+009F) with their windows-1252 meaning: in feeds they are
 *  always mis-decoded or mis-escaped windows-1252 punctuation (feedparser "demoronizes" the same way). */
export function demoronize(text: string): string {
  return text.replace(/[\x80-\x9f]/g, (c) =>
    String.fromCharCode(CP1252_HIGH[c.charCodeAt(0) - 0x80]!),
  );
}

/** Bytes → text. Never throws. Order: BOM → HTTP charset (RFC 3023 rules) → XML declaration
 *  (also detects UTF-16/32 without BOM from the first bytes of '<?xml') → valid UTF-8 → a detected
 *  non-Latin legacy charset, when nothing declared one → windows-1252. */
export function decodeFeed(bytes: Uint8Array, contentType: string | null): Decoded {
  const bom = detectBom(bytes);
  if (bom)
    return {
      text: decodeWith(bytes.subarray(bom.skip), bom.charset),
      charset: bom.charset,
      source: 'bom',
    };
  const wide = sniffWide(bytes);
  const http = httpCharset(contentType);
  if (wide) {
    const source = http && /^utf-?(16|32)/.test(http) ? 'http' : 'xml';
    return { text: decodeWith(bytes, wide), charset: wide, source };
  }
  const utf8 = validUtf8(bytes);
  const fromHttp = http ? tryDeclared(bytes, http, utf8, 'http') : null;
  if (fromHttp) return fromHttp;
  const declared = xmlDeclaredCharset(bytes);
  const fromXml = declared ? tryDeclared(bytes, declared, utf8, 'xml') : null;
  if (fromXml) return fromXml;
  if (utf8 !== null) return { text: utf8, charset: 'utf-8', source: 'utf-8' };
  // Detection only when no declaration spoke: a declared charset the bytes contradict (UTF-8 that
  // does not validate, us-ascii with 8-bit bytes) falls back to windows-1252, undetected.
  const spoke = [charsetParam(contentType), declared].some((c) => c !== null && knownCharset(c));
  const detected = spoke ? null : detectLegacyCharset(bytes);
  if (detected) return { text: decodeWith(bytes, detected), charset: detected, source: 'detected' };
  return { text: decodeWith(bytes, 'windows-1252'), charset: 'windows-1252', source: 'fallback' };
}

/** Charset named by a Content-Type header under RFC 3023 §3: the charset parameter when present;
 *  text/* without one means us-ascii; other types defer to the document. Null when none applies. */
export function httpCharset(contentType: string | null): string | null {
  if (!contentType) return null;
  return charsetParam(contentType) ?? (/^\s*text\//i.test(contentType) ? 'us-ascii' : null);
}

// The charset parameter of a Content-Type, canonicalized; null when there is none.
function charsetParam(contentType: string | null): string | null {
  for (const param of (contentType ?? '').split(';').slice(1)) {
    const m = /^\s*charset\s*=\s*["']?\s*([^"'\s;]+)\s*["']?\s*$/i.exec(param);
    if (m?.[1]) return canonicalLabel(m[1]);
  }
  return null;
}

// A declared charset is used unless the bytes contradict it: us-ascii with 8-bit bytes, UTF-8 that
// does not validate, or a legacy single-byte charset on text that is valid non-ASCII UTF-8
// (a mislabelled UTF-8 feed, the usual case in the wild; Miniflux makes the same call).
function tryDeclared(
  bytes: Uint8Array,
  label: string,
  utf8: string | null,
  source: 'http' | 'xml',
): Decoded | null {
  const charset = canonicalLabel(label);
  if (!knownCharset(charset)) return null;
  const ascii = isAscii(bytes); // native: a loop over the bytes would cost a share of the parse thread's time
  if (charset === 'us-ascii') return ascii ? { text: utf8 ?? '', charset, source } : null;
  if (/^utf-?(16|32)/.test(charset)) return null; // wide charsets without a BOM or '<' pattern: not credible
  if (charset === 'utf-8') return utf8 !== null ? { text: utf8, charset, source } : null;
  if (!ascii && utf8 !== null && isSingleByte(charset)) return null;
  return { text: decodeWith(bytes, charset), charset, source };
}

function detectBom(b: Uint8Array): { charset: string; skip: number } | null {
  if (b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) return { charset: 'utf-8', skip: 3 };
  if (b[0] === 0x00 && b[1] === 0x00 && b[2] === 0xfe && b[3] === 0xff)
    return { charset: 'utf-32be', skip: 4 };
  if (b[0] === 0xff && b[1] === 0xfe && b[2] === 0x00 && b[3] === 0x00)
    return { charset: 'utf-32le', skip: 4 };
  if (b[0] === 0xfe && b[1] === 0xff) return { charset: 'utf-16be', skip: 2 };
  if (b[0] === 0xff && b[1] === 0xfe) return { charset: 'utf-16le', skip: 2 };
  return null;
}

// XML 1.0 Appendix F: a document without BOM that starts with '<' reveals its width and byte order.
function sniffWide(b: Uint8Array): Wide | null {
  if (b.length < 4) return null;
  if (b[0] === 0 && b[1] === 0 && b[2] === 0 && b[3] === 0x3c) return 'utf-32be';
  if (b[0] === 0x3c && b[1] === 0 && b[2] === 0 && b[3] === 0) return 'utf-32le';
  if (b[0] === 0 && b[1] === 0x3c && b[2] === 0 && b[3] !== 0) return 'utf-16be';
  if (b[0] === 0x3c && b[1] === 0 && b[2] !== 0 && b[3] === 0) return 'utf-16le';
  return null;
}

function xmlDeclaredCharset(bytes: Uint8Array): string | null {
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 1024)).toString(
    'latin1',
  );
  const m = /^\s*<\?xml\s[^>]*?\bencoding\s*=\s*["']\s*([A-Za-z0-9._:-]+)\s*["']/.exec(head);
  return m?.[1] ? canonicalLabel(m[1]) : null;
}

function canonicalLabel(label: string): string {
  const l = label.trim().toLowerCase();
  return ALIASES[l] ?? l;
}

function knownCharset(charset: string): boolean {
  if (charset === 'us-ascii' || /^utf-?(16|32)/.test(charset)) return true;
  return textDecoderFor(charset) !== null || iconv.encodingExists(charset);
}

function isSingleByte(charset: string): boolean {
  const enc = textDecoderFor(charset)?.encoding ?? charset;
  return /^(windows-|iso-8859-|koi8|ibm866|macintosh|x-mac)/.test(enc);
}

function textDecoderFor(charset: string): InstanceType<typeof TextDecoder> | null {
  try {
    return new TextDecoder(charset === 'iso-8859-1' ? 'windows-1252' : charset);
  } catch {
    return null;
  }
}

function decodeWith(bytes: Uint8Array, charset: string): string {
  // Node 20's TextDecoder('windows-1252') decodes 0x80–0x9F as latin-1; decode as latin-1 and remap.
  if (charset === 'windows-1252' || charset === 'iso-8859-1' || charset === 'us-ascii') {
    return decodeWindows1252(bytes);
  }
  if (charset.startsWith('utf-32')) return iconv.decode(Buffer.from(bytes), charset);
  const decoder = textDecoderFor(charset);
  if (decoder) return decoder.decode(bytes);
  if (iconv.encodingExists(charset)) return iconv.decode(Buffer.from(bytes), charset);
  return decodeWith(bytes, 'windows-1252');
}

// windows-1252 bytes → text: latin-1 as it is (a one-byte string) when no byte is in 0x80–0x9F; else through
// a table into UTF-16 in one pass, in the text's own size. demoronize's replace builds a string per match, which on a
// long text with many such bytes (a 10 MiB body of random bytes has over a million) costs many times that.
function decodeWindows1252(bytes: Uint8Array): string {
  if (!bytes.some((b) => b >= 0x80 && b <= 0x9f))
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('latin1');
  const utf16le = Buffer.allocUnsafe(bytes.length * 2);
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    const unit = b >= 0x80 && b <= 0x9f ? CP1252_HIGH[b - 0x80]! : b;
    utf16le[2 * i] = unit & 0xff;
    utf16le[2 * i + 1] = unit >> 8;
  }
  return utf16le.toString('utf16le');
}

function validUtf8(bytes: Uint8Array): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}

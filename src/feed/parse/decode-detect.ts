// Undeclared legacy charsets: the non-Latin encoding a detector (jschardet) reads in bytes that are not UTF-8.
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import type { DetectionResult } from 'jschardet';

type Detector = {
  detectAll: (bytes: Uint8Array, options?: { minimumThreshold?: number }) => DetectionResult[];
};

// Detector answers acted on → the WHATWG Encoding name decoded with (a superset where WHATWG has
// one: TIS-620 → windows-874, CP949 → euc-kr, GB2312 → gb18030). Only scripts for which the
// windows-1252 fallback is certainly wrong: Chinese, Japanese, Korean, Cyrillic, Greek, Hebrew,
// Arabic, Thai. Latin answers (ISO-8859-2, windows-1250/1254, …) are ignored: between Latin code
// pages the detector's scores on feed-sized texts are too close to overrule windows-1252, which
// is what decodes such feeds correctly today.
const ACCEPTED: Readonly<Record<string, string>> = {
  big5: 'big5',
  'euc-jp': 'euc-jp',
  shift_jis: 'shift_jis',
  cp932: 'shift_jis',
  'euc-kr': 'euc-kr',
  cp949: 'euc-kr',
  gb2312: 'gb18030',
  gb18030: 'gb18030',
  'koi8-r': 'koi8-r',
  'koi8-u': 'koi8-u',
  'windows-1251': 'windows-1251',
  'iso-8859-5': 'iso-8859-5',
  ibm866: 'ibm866',
  maccyrillic: 'x-mac-cyrillic',
  'iso-8859-7': 'iso-8859-7',
  'windows-1253': 'windows-1253',
  'iso-8859-8': 'iso-8859-8',
  'windows-1255': 'windows-1255',
  'iso-8859-6': 'iso-8859-6',
  'windows-1256': 'windows-1256',
  'tis-620': 'windows-874',
  cp874: 'windows-874',
};

// On 35 undeclared legacy documents (230 B – 32 KB; feedparser's cases, transcodings, markup-heavy
// 4 KB feeds) and 357 undeclared windows-1252 or other Latin ones, right answers score 0.13 to 1.0
// (the three misses are one-character texts), while the best non-Latin answer on a Western document
// scores 0.08, on text with a run of accents: the threshold lies between. ASCII dilutes the score,
// so the sample starts at the first non-ASCII byte: a long ASCII channel header would crowd the text
// out.
const MIN_CONFIDENCE = 0.1;
const SAMPLE_BYTES = 64 * 1024;

/** The WHATWG name of the non-Latin legacy charset the bytes are in, when the detector names one
 *  with enough confidence; null otherwise (the caller keeps windows-1252). For bytes that are not
 *  UTF-8 and declare nothing; never throws. */
export function detectLegacyCharset(bytes: Uint8Array): string | null {
  const firstHigh = bytes.findIndex((b) => b > 0x7f);
  if (firstHigh === -1) return null;
  const sample = bytes.subarray(firstHigh, firstHigh + SAMPLE_BYTES);
  // No legacy text charset has a NUL byte (UTF-16 without a BOM is sniffed before): binary bytes are not worth loading
  // the detector's ~25 MB model for.
  if (sample.includes(0)) return null;
  let best: DetectionResult | undefined;
  try {
    best = loadDetector().detectAll(sample, { minimumThreshold: 0 })[0];
  } catch {
    return null; // a detector fault must not cost the feed: the caller keeps windows-1252
  }
  const charset = ACCEPTED[best?.encoding?.toLowerCase() ?? ''];
  return charset && best!.confidence >= MIN_CONFIDENCE ? charset : null;
}

// Loaded on first use, not at import: its model takes ~25 MB once unpacked and ~11 MB and 40 ms
// just to load, and most instances never meet an undeclared legacy feed (parse workers, which
// load this file too, never do). The bundled executable is CommonJS: `require` exists there and
// esbuild bundles this call. Under tsx (ESM, development) there is no `require`: resolve from the
// entry script, then the working directory, both in the checkout (import.meta would do, but the
// worker bundles must not contain it). Node caches the module after the first load.
function loadDetector(): Detector {
  if (typeof require === 'function') return require('jschardet') as Detector;
  const bases = [process.argv[1], join(process.cwd(), 'index.js')];
  for (const base of bases) {
    try {
      if (base) return createRequire(resolve(base))('jschardet') as Detector;
    } catch {
      // not resolvable from this base: try the next
    }
  }
  throw new Error('decode: unable to load jschardet');
}

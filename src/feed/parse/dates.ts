// Feed date strings → ISO 8601 UTC: RFC 822/1123/2822, RFC 3339, W3C-DTF and the loose forms real feeds write.
import { parseZone, toUtc } from './dates-zones.ts';

// Month names and abbreviations feeds write, in English and the languages whose CMS installs most
// often localize RFC 822 dates (French, German, Spanish, Italian, Dutch, Portuguese). Matched as
// whole words, so "septe" or "Jant" are not months.
const MONTH_NAMES: readonly string[] = [
  'jan january janv janvier januar jänner ene enero gen gennaio januari janeiro',
  'feb february fév fev févr fevr février fevrier februar febrero febbraio februari fevereiro',
  'mar march mars mär märz maerz mrz marzo maart mrt março marco',
  'apr april avr avril abr abril aprile',
  'may mai mayo mag maggio mei maio',
  'jun june juin juni junio giu giugno junho',
  'jul july juil juillet juli julio lug luglio julho',
  'aug august août aout ago agosto augustus',
  'sep sept september septembre septiembre setiembre set settembre setembro',
  'oct october octobre okt oktober octubre ott ottobre out outubro',
  'nov november novembre noviembre novembro',
  'dec december déc décembre decembre dez dezember dic diciembre dicembre dezembro',
];
const MONTHS: ReadonlyMap<string, number> = new Map(
  MONTH_NAMES.flatMap((names, i) => names.split(' ').map((n): [string, number] => [n, i + 1])),
);

// Building blocks of the grammars below (flags iu), with named groups that the readers below
// share. Every grammar is anchored at both ends and the zone part must read as a zone, so nothing
// is skipped: "2013-01-27-01" or "… 1:2:3:4 GMT" fail.
const P = {
  // A leading weekday in any language ("Thu,", "Thurs", "Di,", "jeu.,"): ignored, as it is often wrong.
  wd: String.raw`(?<wd>\p{L}{2,12}(?!\p{L})\.?,?\s*)?`,
  day: String.raw`(?<d>\d{1,2})(?:st|nd|rd|th)?\.?`,
  mon: String.raw`(?<mon>\p{L}{3,10})(?!\p{L})\.?`,
  // 4 digits, or 2–3 digits and 'YY (RFC 2822 §4.3); never directly followed by a digit or ':'.
  year: String.raw`(?<y>\d{4}|'\d{2}|\d{2,3})(?![\d:])`,
  // Between the date and the time: space, comma, "at", " - " (Drupal), or an ISO 8601 "T".
  sep: String.raw`(?:[Tt]|\s*,?\s*(?:(?:at|-)\s+)?)`,
  // H:MM[:SS[.fff]] with ':' (or '.' as RFC 2822 obsolete syntax allows), then am/pm, a.m./p.m.
  time: String.raw`(?<h>\d{1,2})(?<tsep>[:.])(?<mi>\d{1,2})(?:\k<tsep>(?<s>\d{1,2})(?:[.,](?<frac>\d{1,9}))?)?(?!\d)(?:\s*(?<ampm>[ap])\.?m\.?(?!\p{L}))?`,
  zone: String.raw`\s*(?<zone>.*)`,
};
// After a written date: an optional time, then the zone.
const TAIL = `(?:${P.sep}${P.time})?${P.zone}`;
const grammar = (...parts: string[]) => new RegExp(`^${parts.join('')}$`, 'iu');

// Numeric year first: W3C-DTF / RFC 3339 (YYYY, YYYY-MM, YYYY-MM-DD[Thh:mm[:ss[.f]]][zone]), the
// space-separated SQL form, YYYY/M/D (Chinese CMSs, Perforce), and Google's three-digit "2003-012-31".
const ISO = grammar(
  P.wd,
  String.raw`(?<y>\d{4})(?:(?<dsep>[-/.])(?<mo>0\d\d|\d{1,2})(?:\k<dsep>(?<d>\d{1,2}))?)?`,
  `(?:(?:[Tt]|\\s*,?\\s+)${P.time})?`,
  P.zone,
);
// ISO 8601 basic format: YYYYMMDD[Thhmm[ss[.f]]][zone].
const BASIC = grammar(
  String.raw`(?<y>\d{4})(?<mo>\d{2})(?<d>\d{2})`,
  String.raw`(?:[Tt](?<h>\d{2})(?<mi>\d{2})(?:(?<s>\d{2})(?:[.,](?<frac>\d{1,9}))?)?)?`,
  P.zone,
);
// Dates with a month name, tried in this order:
const WRITTEN = [
  // RFC 822/2822 and its variants: [Weekday,] D Mon[,] YYYY [time] [zone], also "19-Nov-82".
  grammar(P.wd, P.day, String.raw`(?:\s+|[-/])`, P.mon, String.raw`(?:,?\s+|[-/,])`, P.year, TAIL),
  // US style: [Weekday,] Month D[,] YYYY [[at|-] time] [zone], and JavaScript's Date#toString.
  grammar(P.wd, P.mon, String.raw`\s*`, P.day, String.raw`(?:,\s*|\s+)`, P.year, TAIL),
  // asctime and Unix date: Weekday Mon D HH:MM:SS [zone] YYYY.
  grammar(
    P.wd,
    P.mon,
    String.raw`\s+`,
    P.day,
    String.raw`\s+`,
    P.time,
    String.raw`(?:\s+(?<zone>\S+))?\s+(?<y>\d{4})`,
  ),
  // Year first: 2013-Feb-03.
  grammar(P.wd, String.raw`(?<y>\d{4})(?:\s+|[-/])`, P.mon, String.raw`(?:\s+|[-/])`, P.day, TAIL),
];

const MIN_MS = Date.UTC(1000, 0, 1);
const MAX_MS = Date.UTC(10000, 0, 1);

type Fields = { y: number; mo: number; d: number; h: number; mi: number; s: number; ms: number };
type Time = { h: number; mi: number; s: number; ms: number };

type Groups = Partial<Record<string, string>>;
// Each grammar with its reader, in the order tried; the first that yields a date wins.
const FORMS: ReadonlyArray<[RegExp, (g: Groups) => string | null]> = [
  [ISO, numeric],
  [BASIC, numeric],
  ...WRITTEN.map((form): [RegExp, (g: Groups) => string | null] => [form, written]),
];

/** Parses a feed date to `Date#toISOString()` form (UTC, milliseconds); null when the text is not
 *  wholly a date we can place in time. Pure: no clock, so a future date is returned as written. */
export function parseFeedDate(raw: string | null | undefined): string | null {
  const s = normalize(raw ?? '');
  if (!s || s.length > 120) return null; // real dates are short; bounds the regex work on junk
  for (const [form, read] of FORMS) {
    const groups = form.exec(s)?.groups;
    const parsed = groups ? read(groups) : null;
    if (parsed) return parsed;
  }
  return null;
}

// Whitespace runs become one space; CJK year/month/day markers (2014年04月08日, 2004년 05월 28일)
// become ISO hyphens.
function normalize(raw: string): string {
  return raw
    .normalize('NFC')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^(\d{4}) ?[年년] ?(\d{1,2}) ?[月월] ?(\d{1,2}) ?[日일]/, '$1-$2-$3');
}

// An all-numeric date (ISO or BASIC groups).
function numeric(g: Groups): string | null {
  const time = readTime(g);
  const zone = g.zone ?? '';
  if ((g.wd || (g.dsep && g.dsep !== '-')) && !g.d) return null; // "Nov 2020", "2014.05"
  if (time === null || (g.h && !g.d)) return null; // W3C-DTF: a time needs a full date
  if (!g.h && zone) return null; // a zone without a time ("2013-01-27-01") is junk
  return build({ y: Number(g.y), mo: Number(g.mo ?? 1), d: Number(g.d ?? 1), ...time }, zone);
}

// A date with a month name: checks the month word, reads the time and the zone.
function written(g: Groups): string | null {
  const mo = MONTHS.get((g.mon ?? '').toLowerCase());
  const time = readTime(g);
  if (!mo || !g.y || time === null) return null;
  return build({ y: fullYear(g.y), mo, d: Number(g.d), ...time }, g.zone ?? '');
}

// The time groups → fields; midnight when absent; null for "12.34.56.78" or "13 PM".
function readTime(g: Groups): Time | null {
  if (g.h === undefined) return { h: 0, mi: 0, s: 0, ms: 0 };
  if (g.tsep === '.' && g.frac !== undefined) return null; // dotted times have no fraction
  let hour = Number(g.h);
  if (g.ampm) {
    if (hour < 1 || hour > 12) return null;
    hour = (hour % 12) + (g.ampm.toLowerCase() === 'p' ? 12 : 0);
  }
  return { h: hour, mi: Number(g.mi), s: Number(g.s ?? 0), ms: millis(g.frac) };
}

// Fractional seconds are truncated to milliseconds (rounding could carry into the next second).
function millis(frac: string | undefined): number {
  return frac ? Number(frac.slice(0, 3).padEnd(3, '0')) : 0;
}

// RFC 2822 §4.3: two-digit years 00–49 are 20xx and 50–99 19xx; three digits add 1900.
function fullYear(y: string): number {
  const digits = y.replace("'", '');
  const n = Number(digits);
  if (digits.length === 2) return n < 50 ? 2000 + n : 1900 + n;
  return digits.length === 3 ? 1900 + n : n;
}

// Checks every field (no month 13, no 30 February, no 25 o'clock; 24:00 and a leap second are
// allowed), applies the zone and formats. Years outside 1000–9999 are junk for a feed.
function build(f: Fields, zoneText: string): string | null {
  if (f.y < 1000 || f.y > 9999 || f.mo < 1 || f.mo > 12 || f.d < 1 || f.d > 31) return null;
  if (f.h > 24 || f.mi > 59 || f.s > 60 || (f.h === 24 && f.mi + f.s + f.ms > 0)) return null;
  if (new Date(Date.UTC(f.y, f.mo - 1, f.d)).getUTCDate() !== f.d) return null;
  const zone = parseZone(zoneText);
  if (zone === null) return null;
  const local = Date.UTC(f.y, f.mo - 1, f.d, f.h, f.mi, Math.min(f.s, 59), f.ms);
  const utc = toUtc(local, zone);
  if (utc === null || !(utc >= MIN_MS && utc < MAX_MS)) return null; // a zone can push 9999 past
  return new Date(utc).toISOString();
}

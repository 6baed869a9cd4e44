// Feed date strings → ISO 8601 UTC: RFC 822/1123, RFC 3339, W3C-DTF partial dates and common broken forms.

const MONTHS: Record<string, number> = {
  jan: 1,
  feb: 2,
  mar: 3,
  apr: 4,
  may: 5,
  jun: 6,
  jul: 7,
  aug: 8,
  sep: 9,
  oct: 10,
  nov: 11,
  dec: 12,
};
// RFC 822 §5.1 zones; military letters other than Z are unreliable (RFC 1123 §5.2.14) and read as UTC.
const ZONES: Record<string, number> = {
  ut: 0,
  utc: 0,
  gmt: 0,
  z: 0,
  wet: 0,
  bst: 60,
  cet: 60,
  cest: 120,
  eet: 120,
  eest: 180,
  est: -300,
  edt: -240,
  cst: -360,
  cdt: -300,
  mst: -420,
  mdt: -360,
  pst: -480,
  pdt: -420,
  akst: -540,
  akdt: -480,
  hst: -600,
  ast: -240,
  adt: -180,
  nzst: 720,
  nzdt: 780,
  jst: 540,
  kst: 540,
  ist: 330,
  aest: 600,
  aedt: 660,
  acst: 570,
  awst: 480,
  msk: 180,
};

// [weekday,] D Mon YYYY [H]H:MM[:SS][.fff] [zone] — weekday ignored (often wrong), seconds optional.
const RFC822 =
  /^(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,?\s*)?(\d{1,2})[\s-]+([a-z]{3,})\.?[\s-]+(\d{2,4})(?:[\sT,]+(\d{1,2})[:.](\d{2})(?:[:.](\d{2})(?:\.\d+)?)?)?\s*(.*)$/i;
// Mon D, YYYY [time] (US style) and "Weekday Mon D HH:MM:SS [zone] YYYY" (asctime / JavaScript Date).
const US_STYLE =
  /^(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,?\s*)?([a-z]{3,})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})(?:[\sT,]+(?:at\s+)?(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([ap]m)?)?\s*(.*)$/i;
const ASCTIME =
  /^(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,?\s*)?([a-z]{3,})\s+(\d{1,2})\s+(\d{1,2}):(\d{2})(?::(\d{2}))?\s+(?:([a-z]{1,5}|[+-]\d{2}:?\d{2})\s+)?(\d{4})\s*(.*)$/i;
// YYYY[-MM[-DD]][(T| )hh:mm[:ss[.fff]]][zone]; also compact YYYYMMDD[Thhmmss].
const ISO =
  /^(\d{4})(?:-?(\d{2})(?:-?(\d{2}))?)?(?:(?:[Tt]|\s+)(\d{1,2})(?::?(\d{2}))(?::?(\d{2})(?:[.,](\d+))?)?)?\s*(.*)$/;

// YYYY/M/D [H:MM[:SS]] [zone] — seen in Chinese and other CMS feeds; zoneless means UTC.
const SLASHED =
  /^(\d{4})[/.](\d{1,2})[/.](\d{1,2})(?:[\sT]+(\d{1,2}):(\d{2})(?::(\d{2}))?)?\s*(.*)$/;

/** Parses a feed date; returns `new Date().toISOString()` form in UTC, or null when unparseable. */
export function parseFeedDate(raw: string | null | undefined): string | null {
  const s = raw?.trim().replace(/\s+/g, ' ');
  if (!s) return null;
  return parseIso(s) ?? parseRfc822(s) ?? parseUsStyle(s) ?? parseAsctime(s) ?? parseSlashed(s);
}

function parseIso(s: string): string | null {
  const m = ISO.exec(s);
  if (!m) return null;
  const [, y, mo, d, h, mi, sec, frac, zone = ''] = m;
  if (!mo && (h || zone)) return null; // "2004 12:00" is not a W3C-DTF form
  const offset = parseZone(zone, true);
  if (offset === null) return null;
  const ms = frac ? Math.round(Number(`0.${frac}`) * 1000) : 0;
  return build(
    Number(y),
    Number(mo ?? 1),
    Number(d ?? 1),
    Number(h ?? 0),
    Number(mi ?? 0),
    Number(sec ?? 0),
    ms,
    offset,
  );
}

function parseSlashed(s: string): string | null {
  const m = SLASHED.exec(s);
  if (!m) return null;
  const [, y, mo, d, h, mi, sec, zone = ''] = m;
  const offset = parseZone(zone, false);
  if (offset === null) return null;
  return build(
    Number(y),
    Number(mo),
    Number(d),
    Number(h ?? 0),
    Number(mi ?? 0),
    Number(sec ?? 0),
    0,
    offset,
  );
}

function parseRfc822(s: string): string | null {
  const m = RFC822.exec(s);
  if (!m) return null;
  const [, d, mon, y, h, mi, sec, zone = ''] = m;
  const month = monthNumber(mon);
  const offset = parseZone(zone, false);
  if (month === null || offset === null) return null;
  return build(
    fullYear(y!),
    month,
    Number(d),
    Number(h ?? 0),
    Number(mi ?? 0),
    Number(sec ?? 0),
    0,
    offset,
  );
}

function parseUsStyle(s: string): string | null {
  const m = US_STYLE.exec(s);
  if (!m) return null;
  const [, mon, d, y, h, mi, sec, ampm, zone = ''] = m;
  const month = monthNumber(mon);
  const offset = parseZone(zone, false);
  if (month === null || offset === null) return null;
  let hour = Number(h ?? 0);
  if (ampm && hour > 12) return null;
  if (ampm) hour = (hour % 12) + (ampm.toLowerCase() === 'pm' ? 12 : 0);
  return build(Number(y), month, Number(d), hour, Number(mi ?? 0), Number(sec ?? 0), 0, offset);
}

function parseAsctime(s: string): string | null {
  const m = ASCTIME.exec(s);
  if (!m) return null;
  const [, mon, d, h, mi, sec, zone = '', y, rest = ''] = m;
  const month = monthNumber(mon);
  const offset = parseZone(zone || rest, false);
  if (month === null || offset === null) return null;
  return build(Number(y), month, Number(d), Number(h), Number(mi), Number(sec ?? 0), 0, offset);
}

// Zone → minutes east of UTC; '' means UTC. Accepts +hhmm, +hh:mm, +hh, GMT+2, names, and a
// trailing "(Zone Name)" comment. Returns null for anything else so garbage is not read as a date.
function parseZone(zone: string, isoOnly: boolean): number | null {
  const z = zone
    .replace(/\([^)]*\)\s*$/, '')
    .trim()
    .toLowerCase();
  if (z === '') return 0;
  const num = /^(?:(?:gmt|utc|ut)\s*)?([+-])(\d{1,2})(?::?(\d{2}))?$/.exec(z);
  if (num) {
    const mins = Number(num[2]) * 60 + Number(num[3] ?? 0);
    return mins > 18 * 60 ? null : num[1] === '-' ? -mins : mins;
  }
  if (isoOnly) return z === 'z' ? 0 : null;
  if (z in ZONES) return ZONES[z]!;
  return /^[a-y]$/.test(z) ? 0 : null;
}

function monthNumber(name: string | undefined): number | null {
  return name ? (MONTHS[name.slice(0, 3).toLowerCase()] ?? null) : null;
}

// RFC 2822 §4.3: two-digit years < 50 are 20xx, others 19xx; three digits add 1900.
function fullYear(y: string): number {
  const n = Number(y);
  if (y.length === 2) return n < 50 ? 2000 + n : 1900 + n;
  return y.length === 3 ? 1900 + n : n;
}

function build(
  y: number,
  mo: number,
  d: number,
  h: number,
  mi: number,
  s: number,
  ms: number,
  offsetMin: number,
): string | null {
  if (y < 1000 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 24 || mi > 59 || s > 60)
    return null;
  if (h === 24 && (mi > 0 || s > 0)) return null;
  const t = Date.UTC(y, mo - 1, d, h, mi, Math.min(s, 59), ms) - offsetMin * 60_000;
  const check = new Date(Date.UTC(y, mo - 1, d));
  if (check.getUTCDate() !== d) return null; // 31 Feb and the like
  return Number.isFinite(t) ? new Date(t).toISOString() : null;
}

// Zone text of a feed date → a UTC offset: numeric offsets, the abbreviation table, IANA names, military letters.

/** How a date's zone turns local time into UTC: a fixed offset (minutes east of UTC) or an IANA zone
 *  whose offset depends on the date (daylight saving time). */
export type Zone = { offset: number } | { iana: string };

// Abbreviation → minutes east of UTC. The names feeds actually write (RFC 822 §5.1, then the tz
// database's abbreviations still in use). Several abbreviations name more than one zone; each such
// line says which one we read and why. Names left out on purpose: SST (Samoa −11 / Singapore +8,
// and SGT is Singapore's), CCT, BDT, ECT — too evenly split to guess; a date with them is not read.
const ZONES: Readonly<Record<string, number>> = {
  // Universal (RFC 822 §5.1; UCT is an old tz alias).
  ut: 0,
  utc: 0,
  uct: 0,
  gmt: 0,
  z: 0,
  // Europe.
  wet: 0,
  west: 60,
  bst: 60, // British Summer Time, not Bangladesh (+6, written BST rarely; the tz database says +06).
  ist: 330, // India (the most populous writer of "IST"); Irish Summer Time (+1) and Israel (+2) lose.
  cet: 60,
  cest: 120,
  met: 60, // Middle European Time, the old name of CET, still used by some CMSs (feedparser reads it so).
  mest: 120,
  mez: 60, // German spellings of CET/CEST.
  mesz: 120,
  eet: 120,
  eest: 180,
  msk: 180,
  msd: 240,
  trt: 180,
  // Africa and the Middle East.
  wat: 60,
  cat: 120,
  sast: 120,
  eat: 180,
  idt: 180, // Israel Daylight Time; "IST" above is India, so Israel's winter time is not read as such.
  irst: 210,
  gst: 240, // Gulf Standard Time (UAE, Oman); South Georgia (−2) has almost no publishers.
  pkt: 300,
  npt: 345,
  // Asia and Oceania.
  ict: 420,
  wib: 420,
  wita: 480,
  wit: 540,
  hkt: 480,
  sgt: 480,
  myt: 480,
  pht: 480,
  awst: 480,
  jst: 540,
  kst: 540,
  acst: 570,
  acdt: 630,
  aest: 600,
  aedt: 660,
  chst: 600,
  nzst: 720,
  nzdt: 780,
  // The Americas (RFC 822 §5.1 names the US ones).
  est: -300, // US Eastern; Australian writers use AEST.
  edt: -240,
  cst: -360, // US Central, as RFC 822 defines it; China (+8) and Cuba (−5) also write CST.
  cdt: -300,
  mst: -420,
  mdt: -360,
  pst: -480, // US Pacific; Philippine time is written PHT (or PST, then read wrongly by 16 hours).
  pdt: -420,
  akst: -540,
  akdt: -480,
  hst: -600,
  hdt: -540,
  ast: -240, // Atlantic Standard Time (Canada, Caribbean); Arabia (+3) writes AST too, less often in feeds.
  adt: -180,
  nst: -210,
  ndt: -150,
  art: -180,
  brt: -180,
  brst: -120,
  clt: -240,
  clst: -180,
  cot: -300,
  pet: -300,
  vet: -240,
  uyt: -180,
};

// US generic names (no standard/daylight letter): the offset in force on that date, from the IANA
// zone (Node's ICU tz database), so "16:31 PT" in July is PDT and in January PST.
const GENERIC: Readonly<Record<string, string>> = {
  et: 'America/New_York',
  ct: 'America/Chicago',
  mt: 'America/Denver',
  pt: 'America/Los_Angeles',
  at: 'America/Halifax',
};
// Their formatters, built once: making one costs ~0.1 ms, using one ~5 µs. Intl formatters are
// immutable, so this is a constant table, not state. Other IANA names get one per date (rare).
const GENERIC_FORMATS: ReadonlyMap<string, Intl.DateTimeFormat> = new Map(
  Object.values(GENERIC).map((iana) => [iana, offsetFormat(iana)!]),
);

const DAY_MS = 86_400_000;

const NUMERIC = /^(?:([a-z]{1,5})\s*)?([+-])(\d{1,2})(?::?(\d{2}))?(?:\s*(\S+))?$/i;

/** Reads the zone part of a feed date ('' = no zone = UTC, as every major reader does); null when
 *  it is anything but a zone, so that trailing junk never passes as a date. */
export function parseZone(text: string): Zone | null {
  const z = text.replace(/\s*\([^()]*\)$/, '').trim(); // RFC 5322 §3.2.2 comment, "(CEST)"
  if (z === '') return { offset: 0 };
  const lower = z.toLowerCase();
  const numeric = NUMERIC.exec(z);
  if (numeric) return numericZone(numeric);
  const named = ZONES[lower];
  if (named !== undefined) return { offset: named };
  const generic = GENERIC[lower];
  if (generic) return { iana: generic };
  if (/^[a-z]+(?:\/[a-z0-9_+-]+)+$/i.test(z)) return { iana: z }; // checked when used (toUtc)
  // RFC 822's military letters had their signs reversed; RFC 1123 §5.2.14 says to read them as
  // -0000 (UTC, local zone unknown). J is not a zone.
  if (/^[a-ik-y]$/.test(lower)) return { offset: 0 };
  return null;
}

function numericZone(m: RegExpExecArray): Zone | null {
  const [, name, sign, hh = '', mm = '00', trailer] = m;
  // A bare offset has two hour digits (RFC 822 ±hhmm, RFC 3339 ±hh:mm); "GMT+2" may have one.
  if (name ? !isZoneName(name) : hh.length !== 2) return null;
  const hours = Number(hh);
  const minutes = Number(mm);
  if (hours > 14 || minutes > 59) return null; // real offsets span −12:00 … +14:00
  const offset = (sign === '-' ? -1 : 1) * (hours * 60 + minutes);
  if (trailer === undefined) return { offset };
  const again = parseZone(trailer);
  if (trailer.startsWith('+') || trailer.startsWith('-'))
    return again && 'offset' in again && again.offset === offset ? { offset } : null;
  return isZoneName(trailer) ? { offset } : null;
}

function isZoneName(name: string): boolean {
  const lower = name.toLowerCase();
  return lower in ZONES || lower in GENERIC;
}

/** UTC milliseconds of the wall-clock time `localMs` (its fields read as if UTC) in `zone`; null
 *  for an IANA name ICU does not know. A wall time that occurs twice (autumn) is the earlier one, one
 *  skipped by the spring jump is read with the offset before the jump (Temporal's "compatible"). */
export function toUtc(localMs: number, zone: Zone): number | null {
  if ('offset' in zone) return localMs - zone.offset * 60_000;
  const format = GENERIC_FORMATS.get(zone.iana) ?? offsetFormat(zone.iana);
  if (!format) return null;
  const before = offsetAt(format, localMs - DAY_MS);
  const after = offsetAt(format, localMs + DAY_MS);
  if (before === null || after === null) return null;
  const fits = [before, after].filter((o) => offsetAt(format, localMs - o * 60_000) === o);
  return localMs - (fits.length > 0 ? Math.max(...fits) : before) * 60_000;
}

// A formatter that prints only the zone's offset ("GMT-07:00"); null for a name ICU does not know.
function offsetFormat(iana: string): Intl.DateTimeFormat | null {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: iana, timeZoneName: 'longOffset' });
  } catch {
    return null; // RangeError: not a zone ICU knows
  }
}

function offsetAt(format: Intl.DateTimeFormat, utcMs: number): number | null {
  if (!Number.isFinite(utcMs)) return null;
  const name = format.formatToParts(utcMs).find((p) => p.type === 'timeZoneName')?.value ?? '';
  const m = /^GMT(?:([+-])(\d{2}):(\d{2}))?/.exec(name); // "GMT", "GMT-07:00", "GMT+05:45"
  if (!m) return null;
  return m[1] ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) : 0;
}

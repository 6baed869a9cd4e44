// The subscription filter language: keep and block rules on an entry's fields (docs/api.md › Filters), its bounds, and
// the values of an entry each field reads. Pure: no storage, no engine.
import type { Entry } from '../types.ts';

/** The fields a rule may read. */
export const FILTER_FIELDS = [
  'title',
  'text',
  'author',
  'category',
  'url',
  'enclosure_type',
] as const;
export type FilterField = (typeof FILTER_FIELDS)[number];
/** A rule: `contains` (a case-insensitive word or phrase) or `matches` (an RE2 pattern, case-insensitive). */
export type FilterRule =
  { field: FilterField; contains: string } | { field: FilterField; matches: string };
/** A subscription's filter: an entry is sent when it matches a keep rule (or there are none) and no block rule. */
export type Filter = { keep: FilterRule[]; block: FilterRule[] };
export type FilterList = keyof Filter;

/** At most this many rules in each list. */
export const FILTER_RULES_MAX = 20;
/** A `contains` phrase or a `matches` pattern has at most this many characters. */
export const FILTER_TEXT_MAX = 256;
/** A `matches` pattern compiles to at most this many RE2 instructions (a pattern's matching time grows with it). */
export const FILTER_PROGRAM_MAX = 1000;
/** A `matches` rule reads at most this many characters (UTF-16 code units) of each value: the first 16 KiB of a long
 *  text. A `contains` rule reads the whole value. */
export const MATCH_INPUT_CHARS = 16 * 1024;

/** A rule as a request gives it, validated: exactly one of `contains` and `matches`. */
export type RuleInput = {
  field: FilterField;
  contains?: string | undefined;
  matches?: string | undefined;
};

/** The filter as stored and shown: both lists present, each rule with its field first. */
export function normalizeFilter(filter: {
  keep?: RuleInput[] | undefined;
  block?: RuleInput[] | undefined;
}): Filter {
  const rule = (r: RuleInput): FilterRule =>
    r.contains !== undefined
      ? { field: r.field, contains: r.contains }
      : { field: r.field, matches: r.matches ?? '' };
  return { keep: (filter.keep ?? []).map(rule), block: (filter.block ?? []).map(rule) };
}

/** The stored filter text read back; undefined for none (null, or a text that is not a filter). */
export function readFilter(text: string | null): Filter | undefined {
  if (text === null) return undefined;
  try {
    const value = JSON.parse(text) as Filter;
    return Array.isArray(value.keep) && Array.isArray(value.block) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The rule's place as an API path names it: `filter.keep[1]`. */
export function rulePath(list: FilterList, index: number): string {
  return `filter.${list}[${index}]`;
}

/** The rule in words: `title contains "security"`, `category matches /^cve-/`. */
export function describeRule(rule: FilterRule): string {
  return 'contains' in rule
    ? `${rule.field} contains ${JSON.stringify(rule.contains)}`
    : `${rule.field} matches /${rule.matches}/`;
}

/** The values of `entry` that rules on `field` read: `text` is the plain content, else the summary (of an entry too
 *  large for an event, their first SLIM_TEXT_CHARS: feed/slim.ts); the list fields (author, category, enclosure_type)
 *  have one value per item; an absent value is no value. */
export function fieldValues(entry: Entry, field: FilterField): string[] {
  const one = (s: string | null | undefined) => (s === null || s === undefined ? [] : [s]);
  switch (field) {
    case 'title':
      return one(entry.title);
    case 'text':
      return one(entry.slim ? entry.slim.text : (entry.content_text ?? entry.summary));
    case 'author':
      return entry.authors ?? [];
    case 'category':
      return entry.categories ?? [];
    case 'url':
      return one(entry.url);
    case 'enclosure_type':
      return (entry.enclosures ?? []).flatMap((e) => one(e.type));
  }
}

/** How a `contains` rule compares: Unicode lower case (String.prototype.toLowerCase, locale-independent), every run of
 *  white space as one space, the ends trimmed. A phrase matches where its folded text is a substring of the value's. */
export function foldText(s: string): string {
  return s.toLowerCase().replace(/\s+/g, ' ').trim();
}

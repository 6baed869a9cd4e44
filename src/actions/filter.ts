// A subscription's filter as requests give it (the valibot schema the API validates it with, and the OpenAPI document
// describes it with), its patterns checked, and the stored text; and the judging of entries every path that makes an
// entries event shares: which entries a subscription's filter sends, counted when it does not.
import * as v from 'valibot';
import type { Ctx } from '../context.ts';
import { invalid, type FieldIssue } from '../errors.ts';
import {
  filterSubject,
  judge,
  patternBudget,
  patternIssue,
  type FilterSubject,
  type FilterVerdict,
  type PatternBudget,
} from '../feed/filter/match.ts';
import type { Entry } from '../feed/types.ts';
import { countFiltered, type SubscriptionRow } from '../store/subscriptions.ts';
import type { EventEntry } from '../webhook/event.ts';
import {
  FILTER_FIELDS,
  FILTER_PROGRAM_MAX,
  FILTER_RULES_MAX,
  FILTER_TEXT_MAX,
  MATCH_INPUT_CHARS,
  normalizeFilter,
  readFilter,
  rulePath,
  type Filter,
  type RuleInput,
} from '../feed/filter/rules.ts';

const TEXT = `must be a string of 1 to ${FILTER_TEXT_MAX} characters`;
const Text = v.pipe(v.string(TEXT), v.minLength(1, TEXT), v.maxLength(FILTER_TEXT_MAX, TEXT));
const Field = v.pipe(
  v.picklist(FILTER_FIELDS, `must be one of ${FILTER_FIELDS.join(', ')}`),
  v.description(
    'The entry field the rule reads: `title`; `text` (the plain text of the content, else of the summary); `author`, `category` and `enclosure_type` (a list: the rule matches when any value does); `url` (the entry’s link).',
  ),
);

const Contains = v.pipe(
  Text,
  v.description(
    'A word or phrase, matched case-insensitively (Unicode lower case) anywhere in the field, white space runs counting as one space: `"bot"` matches "Dependabot".',
  ),
);
const Matches = v.pipe(
  Text,
  v.description(
    `An RE2 regular expression (https://github.com/google/re2/wiki/Syntax: no backreferences, no lookaround), matched case-insensitively and unanchored (use ^ and $) against the first ${MATCH_INPUT_CHARS} characters of the field; at most ${FILTER_PROGRAM_MAX} compiled instructions. Matching takes time linear in the input.`,
  ),
);
/** Exactly one of `contains` and `matches` (the OpenAPI document says it with oneOf: http/api/openapi/convert.ts). */
export const OneTest = v.check(
  (r: RuleInput) => (r.contains === undefined) !== (r.matches === undefined),
  'must have either "contains" or "matches"',
);
/** One rule: a field and either a phrase it contains or a pattern it matches. */
export const FilterRuleInput = v.pipe(
  v.strictObject({ field: Field, contains: v.optional(Contains), matches: v.optional(Matches) }),
  OneTest,
  v.examples([
    { field: 'title', contains: 'security' },
    { field: 'category', matches: '^cve-' },
  ]),
);
const Rule = FilterRuleInput;
const RULES = `must be a list of at most ${FILTER_RULES_MAX} rules`;
const Rules = v.pipe(v.array(Rule, RULES), v.maxLength(FILTER_RULES_MAX, RULES));

/** A filter as a request gives it. */
export const FilterInput = v.pipe(
  v.strictObject({
    keep: v.optional(
      v.pipe(
        Rules,
        v.description(
          'An entry is sent only when one of these matches; none (or empty): every entry is.',
        ),
      ),
    ),
    block: v.optional(
      v.pipe(Rules, v.description('An entry one of these matches is never sent, kept or not.')),
    ),
  }),
  v.description(
    'Which entries this subscription is sent (in `subscription.entries`, `subscription.entries_updated` and backfills): one that matches a keep rule (or every one when there are none) and no block rule. Entries filtered out take no sequence number and are counted in `entries_filtered`.',
  ),
  v.examples([
    {
      keep: [
        { field: 'title', contains: 'security' },
        { field: 'category', matches: '^cve-' },
      ],
      block: [{ field: 'author', contains: 'bot' }],
    },
  ]),
);

/** A rule as the API shows it. */
const RuleView = v.union([
  v.object({ field: Field, contains: v.string() }),
  v.object({ field: Field, matches: v.string() }),
]);
/** The filter as the API shows it: both lists, each rule as given. */
export const FilterView = v.pipe(
  v.object({ keep: v.array(RuleView), block: v.array(RuleView) }),
  v.description('The filter; null when every entry is sent.'),
  v.examples([
    {
      keep: [
        { field: 'title' as const, contains: 'security' },
        { field: 'category' as const, matches: '^cve-' },
      ],
      block: [{ field: 'author' as const, contains: 'bot' }],
    },
  ]),
);

/** The stored text of a filter a request gave (validated by FilterInput): null for none (null, or no rule at all).
 *  400 naming each pattern that does not compile or is too complex (`filter.keep[1].matches`). */
export function filterText(
  value: v.InferOutput<typeof FilterInput> | null | undefined,
): string | null {
  if (value === undefined || value === null) return null;
  const filter = normalizeFilter(value);
  const issues: FieldIssue[] = [];
  for (const list of ['keep', 'block'] as const)
    filter[list].forEach((rule, index) => {
      const issue = 'matches' in rule ? patternIssue(rule.matches) : undefined;
      if (issue) issues.push({ path: `${rulePath(list, index)}.matches`, message: issue });
    });
  if (issues.length > 0) throw invalid(issues);
  return filter.keep.length + filter.block.length === 0 ? null : JSON.stringify(filter);
}

/** Refuses a body whose `filter` is an array: valibot's object schemas take one (an array is an object, its members
 *  none of the keys), JSON Schema's do not. Call before validating the body. */
export function refuseArrayFilter(input: unknown): void {
  if (
    typeof input === 'object' &&
    input !== null &&
    Array.isArray((input as { filter?: unknown }).filter)
  )
    throw invalid([{ path: 'filter', message: 'must be a JSON object or null' }]);
}

/** The stored filter as the API shows it; null for none. */
export function filterView(text: string | null): Filter | null {
  return readFilter(text) ?? null;
}

/** The entries of one batch a subscription's filter sends (all of them without a filter), in their order; the others
 *  are counted on the subscription and in `ctx.filtered`. */
export type EntrySieve = (
  sub: Pick<SubscriptionRow, 'id' | 'entry_filter'>,
  entries: EventEntry[],
) => Promise<EventEntry[]>;

/** A sieve for one batch of entries (a document's, a release's chunk, a backfill's): the entries are read for the rules
 *  once whatever the number of subscriptions, and their patterns share one budget (PATTERN_BUDGET_MS). `count: false`
 *  leaves the entries it drops uncounted (a backfill's: they were never new). Call inside the transaction that queues
 *  the events. */
export function entrySieve(
  ctx: Ctx,
  { budget = patternBudget(), count = true }: { budget?: PatternBudget; count?: boolean } = {},
): EntrySieve {
  const subjects = new Map<EventEntry, FilterSubject>();
  const subject = (e: EventEntry) => {
    let s = subjects.get(e);
    if (s === undefined) subjects.set(e, (s = filterSubject(e)));
    return s;
  };
  return async (sub, entries) => {
    const compiled = ctx.filters.get(sub.entry_filter);
    if (compiled === undefined) return entries;
    const kept: EventEntry[] = [];
    for (const e of entries) {
      const verdict = judge(compiled, subject(e), budget);
      if (verdict.kept) kept.push(e);
      else if (count) ctx.filtered[verdict.reason] += 1;
    }
    if (count && kept.length < entries.length)
      await countFiltered(ctx.db, sub.id, entries.length - kept.length);
    return kept;
  };
}

/** What the subscription's filter decides about one entry now; undefined without a filter. */
export function judgeNow(ctx: Ctx, filter: string | null, entry: Entry): FilterVerdict | undefined {
  const compiled = ctx.filters.get(filter);
  return compiled === undefined
    ? undefined
    : judge(compiled, filterSubject(entry), patternBudget());
}

// "Test this filter against the feed's recent entries": a filter not saved yet, judged on the newest entries the
// subscription's feed stores, each with what the filter would do and why. Nothing is written.
import type { Ctx } from '../context.ts';
import { filterSubject, judge, patternBudget, type FilterVerdict } from '../feed/filter/match.ts';
import { describeRule, readFilter, rulePath, type Filter } from '../feed/filter/rules.ts';
import type { Entry } from '../feed/types.ts';
import { recentHistory } from '../store/entry-history.ts';
import { filterText, FilterInput } from './filter.ts';
import { requireSubscription } from './subscriptions.ts';
import { validate } from './validate.ts';
import * as v from 'valibot';

/** Entries a preview judges at most: the feed's newest. */
export const PREVIEW_ENTRIES = 20;

/** One entry of the preview and what the filter does with it. */
export type PreviewRow = {
  id: string;
  title: string | null;
  url: string | null;
  first_seen_at: string;
  sent: boolean;
  /** Why, in words: "sent", "blocked by rule filter.block[0] (author contains "bot")", "no keep rule matched". */
  why: string;
};

/** The filter `input` (as the API takes `filter`; null for none) judged on the newest PREVIEW_ENTRIES entries of the
 *  application's subscription's feed, newest first. 400 naming the bad rule as create and update would; 404 for
 *  another application's subscription. Its patterns run within one budget, as a poll's do. */
export async function previewFilter(
  ctx: Ctx,
  applicationId: string,
  subscriptionId: string,
  input: unknown,
): Promise<PreviewRow[]> {
  const sub = await requireSubscription(ctx, applicationId, subscriptionId);
  const text = filterText(
    validate(v.strictObject({ filter: v.nullable(FilterInput) }), { filter: input }).filter,
  );
  const filter = readFilter(text);
  const compiled = ctx.filters.get(text);
  const budget = patternBudget();
  return (await recentHistory(ctx.db, sub.feed_id, PREVIEW_ENTRIES)).map((row) => {
    const entry = JSON.parse(row.entry) as Entry & { id: string };
    const verdict =
      compiled === undefined ? undefined : judge(compiled, filterSubject(entry), budget);
    return {
      id: row.key,
      title: entry.title,
      url: entry.url,
      first_seen_at: row.first_seen_at,
      sent: verdict === undefined || verdict.kept,
      why: verdictWords(filter, verdict),
    };
  });
}

/** A verdict in words (the trace says the same). */
export function verdictWords(
  filter: Filter | undefined,
  verdict: FilterVerdict | undefined,
): string {
  if (filter === undefined || verdict === undefined) return 'sent: no filter';
  const undecided = verdict.undecided.length > 0 ? ' (a pattern could not be decided in time)' : '';
  if (verdict.kept)
    return filter.keep.length === 0
      ? `sent: no block rule matched${undecided}`
      : `sent: a keep rule matched${undecided}`;
  if (verdict.reason === 'blocked')
    return `blocked by rule ${rulePath(verdict.rule.list, verdict.rule.index)} (${describeRule(filter[verdict.rule.list][verdict.rule.index]!)})`;
  return 'not sent: no keep rule matched';
}

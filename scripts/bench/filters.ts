// The changed path again with 20 filter rules on every subscription, beside the same path without rules: block rules
// that no entry matches, so every rule runs on every new entry and the same events are made as without them.
import { performance } from 'node:perf_hooks';
import { updateSubscriptionFromInput } from '../../src/actions/subscriptions.ts';
import type { PollSummary } from '../../src/worker/poll/poller.ts';
import { pollTick } from '../../src/worker/poll/round.ts';
import { ratio } from './raw.ts';
import type { Bench } from './setup.ts';
import { rate } from './table.ts';

/** 20 rules on every field: 10 phrases, 10 patterns (each compiled once and kept between polls), none matching. */
const FIELDS = ['title', 'text', 'author', 'category', 'url', 'enclosure_type'];
export const BENCH_FILTER = {
  keep: [],
  block: [
    // a phrase and a pattern on each of the six fields, then a second pair on the four text fields
    ...FIELDS.flatMap((field, i) => [
      { field, contains: `never said ${i}` },
      { field, matches: `^zz-${i}-\\d+$|\\bnever-seen-${i}\\b` },
    ]),
    ...FIELDS.slice(0, 4).flatMap((field, i) => [
      { field, contains: `absent phrase ${i}` },
      { field, matches: `(sponsored|advert)-${i}` },
    ]),
  ],
};

/** Sets `filter` (null: none) on every subscription of the bench, through the action the API runs. */
async function setFilters(b: Bench, filter: unknown): Promise<void> {
  const subs = (await b.ctx.db.all('SELECT id, application_id FROM subscriptions ORDER BY id')) as {
    id: string;
    application_id: string;
  }[];
  for (const s of subs)
    await updateSubscriptionFromInput(b.ctx, s.application_id, s.id, { filter });
}

/** Polls the 20 %-changed round again with BENCH_FILTER on every subscription, and adds its rate and its ratio to the
 *  rate of the same path without rules (`plain`, feeds polled per second); the filters are removed after. Returns the
 *  round's summary (its events wait to be delivered). */
export async function measureFilteredPolls(b: Bench, plain: number): Promise<PollSummary> {
  if (BENCH_FILTER.block.length !== 20) throw new Error('bench: the filter has 20 rules');
  await setFilters(b, BENCH_FILTER);
  await b.round('change=0.2&add=2&etags=1');
  const t = performance.now();
  const { summary } = await pollTick(b.ctx, b.workers.pollerDeps, { all: true });
  const ms = performance.now() - t;
  const perSecond = summary.fetched / (ms / 1000);
  b.row(
    'feeds polled/s, changed path (20 % changed), 20 filter rules on every subscription',
    rate(summary.fetched, ms),
    `10 phrases and 10 RE2 patterns on every field, none matching (every rule runs on every new entry, the same events made); ${summary.newEntries} new entries, ${summary.events} events, ${(ms / 1000).toFixed(2)} s`,
  );
  b.row('changed path: 20 filter rules vs none', ratio(perSecond, plain), 'target ≥ 90 %');
  await setFilters(b, null);
  return summary;
}

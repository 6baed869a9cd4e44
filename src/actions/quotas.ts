// Per-application quotas counted in the database ([quotas]): endpoints and subscriptions held, new feed URLs per hour,
// test events per minute, backfill entries per hour. Each check runs inside the transaction that creates what it
// counts, so two requests at once cannot both take the last one. A limit of 0 turns its check off.
import type { Ctx } from '../context.ts';
import { tooManyRequests } from '../errors.ts';
import { countApplicationEndpoints } from '../store/endpoints.ts';
import {
  countQuotaUsage,
  lockQuota,
  pruneQuotaUsage,
  quotaUsesSince,
  recordQuotaUsage,
  usedQuotaOn,
} from '../store/quota-usage.ts';
import { applicationUsesFeed, countApplicationSubscriptions } from '../store/subscriptions.ts';

/** Retry-After of a quota on what an application holds. Nothing frees it with time — only a deletion or a higher
 *  limit — so the wait is long enough that a client retrying on 429 by itself does not hammer the server meanwhile. */
export const HELD_QUOTA_RETRY_SECONDS = 3600;

/** 429 unless the application may have one more endpoint. Call inside the transaction that inserts it. */
export async function checkEndpointQuota(ctx: Ctx, applicationId: string): Promise<void> {
  await checkHeld(ctx, applicationId, 'endpoints_per_application', 'endpoints', () =>
    countApplicationEndpoints(ctx.db, applicationId),
  );
}

/** 429 unless the application may have one more subscription. Call inside the transaction that inserts it. */
export async function checkSubscriptionQuota(ctx: Ctx, applicationId: string): Promise<void> {
  await checkHeld(ctx, applicationId, 'subscriptions_per_application', 'subscriptions', () =>
    countApplicationSubscriptions(ctx.db, applicationId),
  );
}

/** 429 when `count()` of what the application holds has reached its quota; the detail says what to delete. */
async function checkHeld(
  ctx: Ctx,
  applicationId: string,
  quota: 'endpoints_per_application' | 'subscriptions_per_application',
  things: string,
  count: () => Promise<number>,
): Promise<void> {
  const limit = ctx.config.quotas[quota];
  if (limit === 0) return;
  await lockQuota(ctx.db, applicationId, quota);
  if ((await count()) < limit) return;
  throw tooManyRequests(
    quota,
    limit,
    HELD_QUOTA_RETRY_SECONDS,
    `The application has ${limit} ${things}, its limit (quotas.${quota}). Delete ${things} it no longer uses, or ask the operator to raise the limit.`,
  );
}

/** Counts `feedId` as a new feed URL of the application — unless one of its subscriptions already uses that feed, or
 *  it was counted within the hour (unsubscribing and subscribing again is free) — and answers 429 once the hour's are
 *  spent. Call inside the transaction that inserts the subscription, after the feed record is found or made: a refusal
 *  rolls that back. Each new feed URL is a first fetch within a second, to a host of the client's choosing. */
export async function chargeNewFeedUrl(
  ctx: Ctx,
  applicationId: string,
  feedId: string,
  now: Date,
): Promise<void> {
  const limit = ctx.config.quotas.new_feed_urls_per_hour;
  if (limit === 0 || (await applicationUsesFeed(ctx.db, applicationId, feedId))) return;
  const window = { quota: 'new_feed_urls_per_hour', limit, ms: 3600_000 };
  const since = new Date(now.getTime() - window.ms).toISOString();
  await lockQuota(ctx.db, applicationId, window.quota);
  if (await usedQuotaOn(ctx.db, applicationId, window.quota, feedId, since)) return;
  await chargeWindow(ctx, applicationId, window, { subject: feedId, amount: 1 }, now, (wait) =>
    [
      `The application subscribed to ${limit} feed URLs it did not have within the last hour, its limit (quotas.new_feed_urls_per_hour).`,
      `Subscribing to a feed URL it already has is not limited; a new one is possible again in ${wait} s.`,
    ].join(' '),
  );
}

/** Counts one test event sent now and answers 429 once the minute's are spent. Call before sending it: a test is a
 *  signed POST to a URL of the client's choosing, so the count must hold even while earlier tests are still waiting. */
export async function chargeTestEvent(ctx: Ctx, applicationId: string, now: Date): Promise<void> {
  const limit = ctx.config.quotas.test_events_per_minute;
  if (limit === 0) return;
  const window = { quota: 'test_events_per_minute', limit, ms: 60_000 };
  await chargeWindow(
    ctx,
    applicationId,
    window,
    { subject: null, amount: 1 },
    now,
    (wait) =>
      `The application sent ${limit} test events within the last minute, its limit (quotas.test_events_per_minute); try again in ${wait} s.`,
  );
}

/** Counts the `entries` a new subscription's backfill asks for and answers 429, saying how many are left this hour,
 *  when they do not fit in the hour's. Call inside the transaction that inserts the subscription. Entries count as
 *  asked, whether or not the feed has that many: a feed not fetched yet has no history to count, and what a request
 *  costs is then known before it is made. Each entry is read from the history and sent to a URL of the client's
 *  choosing, so a create and delete loop would otherwise send a feed's history again and again. */
export async function chargeBackfill(
  ctx: Ctx,
  applicationId: string,
  entries: number,
  now: Date,
): Promise<void> {
  const limit = ctx.config.quotas.backfill_entries_per_hour;
  if (limit === 0 || entries === 0) return;
  const window = { quota: 'backfill_entries_per_hour', limit, ms: 3600_000 };
  await chargeWindow(
    ctx,
    applicationId,
    window,
    { subject: null, amount: entries },
    now,
    (wait, used) =>
      entries > limit
        ? `A backfill of ${entries} entries is more than quotas.backfill_entries_per_hour allows in an hour (${limit}); ask for at most ${limit}.`
        : [
            `The application's backfills asked for ${used} entries within the last hour; its limit is ${limit} (quotas.backfill_entries_per_hour), so ${limit - used} are left this hour.`,
            `Ask for at most ${limit - used}, or for ${entries} again in ${wait} s.`,
          ].join(' '),
  );
}

/** A sliding window over quota_usage, (now - window, now]: forget the application's uses before it, refuse when
 *  `use.amount` more would pass `limit`, else record this use. Every use counts at least 1, so rows per application
 *  and quota never exceed the limit. `detail` is given the wait and what the window holds. */
async function chargeWindow(
  ctx: Ctx,
  applicationId: string,
  window: { quota: string; limit: number; ms: number },
  use: { subject: string | null; amount: number },
  now: Date,
  detail: (waitSeconds: number, used: number) => string,
): Promise<void> {
  const since = new Date(now.getTime() - window.ms).toISOString();
  await lockQuota(ctx.db, applicationId, window.quota);
  await pruneQuotaUsage(ctx.db, applicationId, window.quota, since);
  const used = await countQuotaUsage(ctx.db, applicationId, window.quota, since);
  if (used + use.amount > window.limit) {
    const opensAt = await roomAt(
      ctx,
      applicationId,
      window,
      since,
      used + use.amount - window.limit,
    );
    const wait = Math.max(
      1,
      Math.ceil(((opensAt ?? now.getTime() + window.ms) - now.getTime()) / 1000),
    );
    throw tooManyRequests(window.quota, window.limit, wait, detail(wait, used));
  }
  await recordQuotaUsage(ctx.db, {
    application_id: applicationId,
    quota: window.quota,
    subject: use.subject,
    used_at: now.toISOString(),
    amount: use.amount,
  });
}

/** When the window has left enough of its uses (oldest first) to free `needed`: when the use that frees the last of it
 *  leaves the window; undefined when all of them would not free it (a use larger than the limit). */
async function roomAt(
  ctx: Ctx,
  applicationId: string,
  window: { quota: string; ms: number },
  since: string,
  needed: number,
): Promise<number | undefined> {
  let freed = 0;
  for (const use of await quotaUsesSince(ctx.db, applicationId, window.quota, since)) {
    freed += use.amount ?? 1;
    if (freed >= needed) return Date.parse(use.used_at) + window.ms;
  }
  return undefined;
}

// Feed use-cases: the health view a subscriber may read.
import { notFound } from '../errors.ts';
import { countFeedsOfApplication, getFeed, listFeedsOfApplication, type FeedRow, type FeedStatus } from '../store/feeds.ts';
import type { Page } from '../store/page.ts';
import { applicationUsesFeed } from '../store/subscriptions.ts';
import type { Ctx } from './context.ts';

export type FeedView = {
  id: string; url: string; feed_url: string; discovered_url: string | null; title: string | null; site_url: string | null;
  format: string | null; status: FeedRow['status']; last_polled_at: string | null; last_success_at: string | null;
  next_poll_at: string | null; interval_seconds: number | null; last_http_status: number | null; error_count: number;
  network_error_count: number; http_error_count: number; parse_error_count: number; last_error: string | null;
  last_error_at: string | null; degraded: string | null; entry_count: number; created_at: string; updated_at: string;
};

/** The feed view for an application that has a subscription to it; 404 otherwise. */
export function requireFeedView(ctx: Ctx, applicationId: string, id: string): FeedView {
  const feed = getFeed(ctx.db, id);
  if (!feed || !applicationUsesFeed(ctx.db, applicationId, id)) throw notFound('Feed');
  return feedView(feed);
}

/** The public fields of a feed record (never its credentials). */
export function feedView(f: FeedRow): FeedView {
  return {
    id: f.id, url: f.url, feed_url: f.fetch_url, discovered_url: f.discovered_url, title: f.title, site_url: f.site_url,
    format: f.format, status: f.status, last_polled_at: f.last_polled_at, last_success_at: f.last_success_at,
    next_poll_at: f.status === 'gone' ? null : f.next_poll_at, interval_seconds: f.interval_seconds,
    last_http_status: f.last_http_status, error_count: f.error_count, network_error_count: f.network_error_count,
    http_error_count: f.http_error_count, parse_error_count: f.parse_error_count, last_error: f.last_error,
    last_error_at: f.last_error_at, degraded: f.degraded, entry_count: f.entry_count, created_at: f.created_at, updated_at: f.updated_at,
  };
}

/** One page of the feeds the application's subscriptions use, newest first, optionally of some statuses. */
export function listApplicationFeeds(ctx: Ctx, applicationId: string, q: { limit: number; after?: string | undefined; statuses?: FeedStatus[] | undefined }): Page<FeedView & { subscription_count: number }> {
  const page = listFeedsOfApplication(ctx.db, applicationId, q);
  return { data: page.data.map((f) => ({ ...feedView(f), subscription_count: f.subscription_count })), next: page.next };
}

/** How many of the application's feeds are in each status. */
export function countApplicationFeeds(ctx: Ctx, applicationId: string): Record<FeedStatus, number> {
  return countFeedsOfApplication(ctx.db, applicationId);
}

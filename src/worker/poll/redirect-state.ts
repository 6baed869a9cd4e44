// Where a feed is fetched from next, after a poll: a discovered feed URL at once, a permanent redirect only once seen
// several times in a row (never 302/307). Pure.
import type { FeedRow } from '../../store/feeds.ts';

/** Permanent redirects to one target seen in a row that move the feed to it. */
const PERMANENT_REDIRECTS_TO_MOVE = 3;

/** A discovered feed URL replaces the fetch URL at once; a permanent redirect only after repeated sightings (never 302/307). */
export function redirectState(
  feed: FeedRow,
  permanentTo: string | null,
  discovered: string | null,
): Pick<FeedRow, 'fetch_url' | 'discovered_url' | 'redirect_url' | 'redirect_count'> {
  if (discovered)
    return {
      fetch_url: discovered,
      discovered_url: discovered,
      redirect_url: null,
      redirect_count: 0,
    };
  const target = permanentTo; // fetchFeed already leaves credentials out of it
  if (!target || target === feed.fetch_url)
    return {
      fetch_url: feed.fetch_url,
      discovered_url: feed.discovered_url,
      redirect_url: null,
      redirect_count: 0,
    };
  const count = feed.redirect_url === target ? feed.redirect_count + 1 : 1;
  if (count >= PERMANENT_REDIRECTS_TO_MOVE)
    return {
      fetch_url: target,
      discovered_url: feed.discovered_url,
      redirect_url: null,
      redirect_count: 0,
    };
  return {
    fetch_url: feed.fetch_url,
    discovered_url: feed.discovered_url,
    redirect_url: target,
    redirect_count: count,
  };
}

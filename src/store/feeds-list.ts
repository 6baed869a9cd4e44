// SQL for GET /v1/feeds: one page of the feeds an application's subscriptions use, newest first, optionally of some
// statuses. With a status filter the page is the intersection of two sets ordered by feed id, the application's
// subscriptions and the feeds in those statuses, and either can be the small one: an application with 100,000
// subscriptions asking for its 3 feeds in error, or one with 10 subscriptions asking for `active` among 100,000 active
// feeds of other applications. Both are walked in chunks, turn about, and the first walk that can answer does.
import type { Sql } from '../db/engine.ts';
import type { FeedRow, FeedStatus } from './feeds.ts';
import { toPage, type Page } from './page.ts';
import { jsonValues } from './sql.ts';

export type ListedFeed = FeedRow & { subscription_count: number; held_entries: number };

/** Rows each step of a walk reads. */
const CHUNK = 256;
/** Above every feed id (ids are ASCII): the cursor of a walk that starts at the newest. */
const TOP = '\uffff';

/** One page of the application's feeds, newest first, of `statuses` when any, with how many of its subscriptions use
 *  each and how many entries each holds back. */
export async function listFeedsOfApplication(
  db: Sql,
  applicationId: string,
  q: { limit: number; after?: string | undefined; statuses?: FeedStatus[] | undefined },
): Promise<Page<ListedFeed>> {
  const statuses = [...new Set(q.statuses ?? [])];
  const ids = await (statuses.length
    ? await idsByIntersection(db, applicationId, statuses, q.after ?? TOP, q.limit + 1)
    : await idsBySubscription(db, applicationId, q.after ?? TOP, q.limit + 1));
  return toPage(await feedRows(db, applicationId, ids), q.limit);
}

/** Without a filter every feed of the application's subscriptions belongs on the page: its subscriptions in feed id
 *  order ("SEARCH subscriptions USING COVERING INDEX subscriptions_by_application_feed (application_id=? AND
 *  feed_id<?)"), distinct, no sort, stopping at `want`. */
async function idsBySubscription(
  db: Sql,
  app: string,
  after: string,
  want: number,
): Promise<string[]> {
  return db.column<string>(
    `SELECT DISTINCT feed_id FROM subscriptions
      WHERE application_id = @app AND feed_id < @after ORDER BY feed_id DESC LIMIT @want`,
    { app, after, want },
  );
}

/** A walk down one ordered set of feed ids: the ids it found on the page, and the cursor below which it has not
 *  looked yet (null once it has looked at everything). */
type Walk = { found: Set<string>; cursor: string | null };

/** The first `want` feed ids below `after` that are both the application's and in one of `statuses`. Steps the walk
 *  of the application's subscriptions and the walks of each status's feeds by one chunk each, in turn, until one of
 *  them has found `want` ids or has looked at everything: its answer is then complete. Costs at most about twice the
 *  cheaper walk. */
async function idsByIntersection(
  db: Sql,
  app: string,
  statuses: FeedStatus[],
  after: string,
  want: number,
): Promise<string[]> {
  const mine: Walk = { found: new Set(), cursor: after };
  const ofStatus = new Map(statuses.map((s) => [s, { found: new Set(), cursor: after } as Walk]));
  for (;;) {
    // Both walks step before either answers (one chunk more than needed at most), so each statement runs on every
    // call and the plan test sees both.
    await stepSubscriptions(db, app, new Set(statuses), mine);
    const answer = await stepStatuses(db, app, ofStatus, want);
    if (mine.cursor === null || mine.found.size >= want) return [...mine.found].slice(0, want);
    if (answer) return answer;
  }
}

/** The next chunk of the application's subscriptions, by feed id ("SEARCH s USING COVERING INDEX
 *  subscriptions_by_application_feed (application_id=? AND feed_id<?)", each feed then by its key). */
async function stepSubscriptions(
  db: Sql,
  app: string,
  statuses: Set<string>,
  walk: Walk,
): Promise<void> {
  const rows = await db.all<{ id: string; status: string }>(
    `SELECT s.feed_id AS id, f.status FROM subscriptions s JOIN feeds f ON f.id = s.feed_id
      WHERE s.application_id = @app AND s.feed_id < @cursor ORDER BY s.feed_id DESC LIMIT @n`,
    { app, cursor: walk.cursor, n: CHUNK },
  );
  for (const r of rows) if (statuses.has(r.status)) walk.found.add(r.id);
  walk.cursor = rows.length < CHUNK ? null : rows[rows.length - 1]!.id;
}

/** Steps the status walk that has looked least far down (the one the others wait on) by a chunk; returns the answer
 *  once the ids found above every walk's cursor are `want` or every walk is done, else undefined. */
async function stepStatuses(
  db: Sql,
  app: string,
  walks: Map<FeedStatus, Walk>,
  want: number,
): Promise<string[] | undefined> {
  const open = [...walks].filter(([, w]) => w.cursor !== null);
  const [status, walk] = open.reduce((a, b) => (b[1].cursor! > a[1].cursor! ? b : a));
  // Whether each feed is the application's: a scalar subquery, one seek per feed read. PostgreSQL would run an EXISTS
  // here as a hashed subplan, reading every subscription of the application (100,000 of them: a third of a second) to
  // answer for 256 feeds.
  const rows = await db.all<{ id: string; mine: number | boolean }>(
    `SELECT f.id,
        (SELECT 1 FROM subscriptions s WHERE s.application_id = @app AND s.feed_id = f.id LIMIT 1) IS NOT NULL AS mine
      FROM feeds f WHERE f.status = @status AND f.id < @cursor ORDER BY f.id DESC LIMIT @n`,
    { app, status, cursor: walk.cursor, n: CHUNK },
  );
  for (const r of rows) if (r.mine) walk.found.add(r.id);
  walk.cursor = rows.length < CHUNK ? null : rows[rows.length - 1]!.id;
  // Every id at or above the highest open cursor has been looked at by every walk.
  const cursors = [...walks.values()].map((w) => w.cursor).filter((c) => c !== null);
  const floor = cursors.length ? cursors.reduce((a, b) => (b > a ? b : a)) : '';
  const sure = [...walks.values()]
    .flatMap((w) => [...w.found])
    .filter((id) => id >= floor)
    .sort()
    .reverse();
  return sure.length >= want || cursors.length === 0 ? sure.slice(0, want) : undefined;
}

/** The listed feeds' rows, newest first, with the application's subscription count and the held entries of each (by
 *  key: "SEARCH f USING INDEX sqlite_autoindex_feeds_1 (id=?)"). */
async function feedRows(db: Sql, app: string, ids: string[]): Promise<ListedFeed[]> {
  if (ids.length === 0) return [];
  return db.all<ListedFeed>(
    `SELECT f.*,
        (SELECT count(*) FROM subscriptions s WHERE s.application_id = @app AND s.feed_id = f.id) AS subscription_count,
        (SELECT count(*) FROM held_entries h WHERE h.feed_id = f.id) AS held_entries
      FROM feeds f WHERE f.id IN (${jsonValues(db, '@ids')}) ORDER BY f.id DESC`,
    { app, ids: JSON.stringify(ids) },
  );
}

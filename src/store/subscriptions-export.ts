// SQL for exporting subscriptions as a feed list: each endpoint's subscriptions in URL order, page by page.
import type { Sql } from '../db/engine.ts';

/** What a feed list shows of a subscription: its URL (never credentials: they live on the feed record), its status
 *  and filter, and its feed's title and site. */
export type ExportedSubscription = {
  url: string;
  status: 'active' | 'paused';
  feed_title: string | null;
  feed_site_url: string | null;
  /** Its filter's JSON text, or null. */
  entry_filter: string | null;
};

/** Up to `limit` of the endpoint's subscriptions whose URL sorts after `afterUrl` (null: from the first), by URL —
 *  the order of the UNIQUE (endpoint_id, url) index, so each page is an index range however many there are. */
export async function exportSubscriptionsPage(
  db: Sql,
  applicationId: string,
  endpointId: string,
  afterUrl: string | null,
  limit: number,
): Promise<ExportedSubscription[]> {
  return db.all<ExportedSubscription>(
    `SELECT s.url, s.status, s.entry_filter, f.title AS feed_title, f.site_url AS feed_site_url
       FROM subscriptions s JOIN feeds f ON f.id = s.feed_id
      WHERE s.endpoint_id = @endpoint AND s.application_id = @application AND s.url > @after
      ORDER BY s.url LIMIT @limit`,
    {
      endpoint: endpointId,
      application: applicationId,
      after: afterUrl ?? '',
      limit,
    },
  );
}

// Exporting an application's subscriptions as an OPML feed list: one folder per endpoint, read a page at a time.
import type { Ctx } from '../context.ts';
import { opmlChunks, type OpmlFeedOut, type OpmlFolderOut } from '../feed/opml.ts';
import { listEndpoints, type EndpointRow } from '../store/endpoints.ts';
import {
  exportSubscriptionsPage,
  type ExportedSubscription,
} from '../store/subscriptions-export.ts';
import { requireOwnEndpoint } from './subscriptions.ts';

/** Rows read per query, and so per chunk written. */
export const EXPORT_PAGE_SIZE = 200;

/** The OPML 2.0 document of the application's subscriptions — of one endpoint when `endpointId` is given — as text
 *  chunks to stream: a folder per endpoint (text = its title), holding an outline per subscription (text = its feed's
 *  title, else its URL; xmlUrl = the subscribed URL, never credentials; htmlUrl = the feed's site; paused ones
 *  marked `feedsubStatus="paused"`; a filter as its JSON in `feedsubFilter`, which an import reads back). The endpoint is checked here, before any chunk (404 when not the application's);
 *  the rows are read as the chunks are taken, one page per chunk, so the document is never held whole. */
export async function exportSubscriptionsOpml(
  ctx: Ctx,
  applicationId: string,
  endpointId: string | undefined,
): Promise<AsyncIterable<string>> {
  const only =
    endpointId === undefined ? null : await requireOwnEndpoint(ctx, applicationId, endpointId);
  const endpoints = only ? [only] : allEndpoints(ctx, applicationId);
  const title = only ? `feedsub subscriptions of ${only.title}` : 'feedsub subscriptions';
  return opmlChunks(title, ctx.clock.now(), folders(ctx, applicationId, endpoints));
}

async function* allEndpoints(ctx: Ctx, applicationId: string): AsyncGenerator<EndpointRow> {
  let after: string | undefined;
  do {
    const page = await listEndpoints(ctx.db, applicationId, { limit: EXPORT_PAGE_SIZE, after });
    yield* page.data;
    after = page.next ?? undefined;
  } while (after !== undefined);
}

async function* folders(
  ctx: Ctx,
  applicationId: string,
  endpoints: Iterable<EndpointRow> | AsyncIterable<EndpointRow>,
): AsyncGenerator<OpmlFolderOut> {
  for await (const endpoint of endpoints)
    yield { title: endpoint.title, pages: feedPages(ctx, applicationId, endpoint.id) };
}

async function* feedPages(
  ctx: Ctx,
  applicationId: string,
  endpointId: string,
): AsyncGenerator<OpmlFeedOut[]> {
  let after: string | null = null;
  for (;;) {
    const rows = await exportSubscriptionsPage(
      ctx.db,
      applicationId,
      endpointId,
      after,
      EXPORT_PAGE_SIZE,
    );
    if (rows.length > 0) yield rows.map(feedOut);
    if (rows.length < EXPORT_PAGE_SIZE) return;
    after = rows[rows.length - 1]!.url;
  }
}

function feedOut(row: ExportedSubscription): OpmlFeedOut {
  return {
    title: row.feed_title?.trim() || row.url,
    xmlUrl: row.url,
    htmlUrl: row.feed_site_url,
    paused: row.status === 'paused',
    filter: row.entry_filter,
  };
}

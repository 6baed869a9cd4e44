// /v1/feeds: the shared feed records, readable by applications subscribed to them: list, read, refresh, release a hold.
import { Hono } from 'hono';
import type { Ctx } from '../../context.ts';
import {
  listFeedsFromQuery,
  requestFeedRefresh,
  requireFeedView,
  resolveIdentityChange,
} from '../../actions/feeds.ts';
import type { ApiEnv } from '../auth.ts';
import { pageQuery, readJson } from '../body.ts';
import { sendJson } from '../json.ts';

/** The feeds sub-app. */
export function feedsApi(ctx: Ctx): Hono<ApiEnv> {
  return new Hono<ApiEnv>()
    .get('/', async (c) =>
      sendJson(
        c,
        200,
        await listFeedsFromQuery(ctx, c.get('applicationId'), {
          ...pageQuery(c),
          status: c.req.query('status'),
        }),
      ),
    )
    .get('/:id', async (c) =>
      sendJson(c, 200, await requireFeedView(ctx, c.get('applicationId'), c.req.param('id'))),
    )
    .post('/:id/refresh', async (c) =>
      sendJson(c, 202, await requestFeedRefresh(ctx, c.get('applicationId'), c.req.param('id'))),
    )
    .post('/:id/accept-identity-change', async (c) =>
      sendJson(
        c,
        200,
        await resolveIdentityChange(
          ctx,
          c.get('applicationId'),
          c.req.param('id'),
          (await readJson(c)).value,
        ),
      ),
    );
}

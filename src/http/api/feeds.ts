// /v1/feeds: the shared feed records, readable by applications subscribed to them.
import { Hono } from 'hono';
import type { Ctx } from '../../context.ts';
import { requireFeedView, resolveIdentityChange } from '../../actions/feeds.ts';
import type { ApiEnv } from '../auth.ts';
import { readJson } from '../body.ts';
import { sendJson } from '../json.ts';

/** The feeds sub-app. */
export function feedsApi(ctx: Ctx): Hono<ApiEnv> {
  return new Hono<ApiEnv>()
    .get('/:id', (c) =>
      sendJson(c, 200, requireFeedView(ctx, c.get('applicationId'), c.req.param('id'))),
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

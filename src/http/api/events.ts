// /v1/events: the application's webhook events with their attempts, and resending one.
import { Hono } from 'hono';
import type { Ctx } from '../../context.ts';
import { listEventViews, requireEventDetail, resendEvent } from '../../actions/events.ts';
import type { ApiEnv } from '../auth.ts';
import { idFilter, pageQuery } from '../body.ts';
import { sendJson } from '../json.ts';

/** The events sub-app. */
export function eventsApi(ctx: Ctx): Hono<ApiEnv> {
  return new Hono<ApiEnv>()
    .get('/', async (c) =>
      sendJson(
        c,
        200,
        await listEventViews(ctx, c.get('applicationId'), {
          ...pageQuery(c),
          subscription: idFilter(c, 'subscription'),
          endpoint: idFilter(c, 'endpoint'),
          status: c.req.query('status'),
        }),
      ),
    )
    .get('/:id', async (c) =>
      sendJson(c, 200, await requireEventDetail(ctx, c.get('applicationId'), c.req.param('id'))),
    )
    .post('/:id/resend', async (c) =>
      sendJson(c, 200, await resendEvent(ctx, c.get('applicationId'), c.req.param('id'))),
    );
}

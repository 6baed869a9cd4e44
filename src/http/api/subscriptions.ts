// /v1/subscriptions: tie a feed URL to an endpoint with metadata; read, change, pause, delete; import and export OPML;
// the feed's entry history and the trace of one entry.
import { Hono, type Context } from 'hono';
import type { Ctx } from '../../context.ts';
import {
  createSubscription,
  listSubscriptionViews,
  removeSubscription,
  requireSubscription,
  subscriptionView,
  updateSubscriptionFromInput,
} from '../../actions/subscriptions.ts';
import { listHistory } from '../../actions/entry-history.ts';
import { traceEntry } from '../../actions/trace.ts';
import { exportSubscriptionsOpml } from '../../actions/subscriptions-export.ts';
import { importSubscriptions } from '../../actions/subscriptions-import.ts';
import type { ApiEnv } from '../auth.ts';
import { idFilter, pageQuery, rawMember, readJson } from '../body.ts';
import { sendJson } from '../json.ts';
import { sendOpml } from '../opml.ts';

/** The subscriptions sub-app. */
export function subscriptionsApi(ctx: Ctx): Hono<ApiEnv> {
  return new Hono<ApiEnv>()
    .post('/', async (c) => {
      const body = await readJson(c);
      return sendJson(
        c,
        201,
        await createSubscription(ctx, c.get('applicationId'), body.value, {
          metadata: rawMember(body, 'metadata'),
        }),
      );
    })
    .get('/', async (c) =>
      sendJson(
        c,
        200,
        await listSubscriptionViews(ctx, c.get('applicationId'), {
          ...pageQuery(c),
          endpoint: idFilter(c, 'endpoint'),
        }),
      ),
    )
    .post('/import', async (c) => {
      const body = await readJson(c);
      return sendJson(
        c,
        200,
        await importSubscriptions(ctx, c.get('applicationId'), body.value, {
          metadata: rawMember(body, 'metadata'),
        }),
      );
    })
    .get('/export', async (c) =>
      sendOpml(
        c,
        await exportSubscriptionsOpml(ctx, c.get('applicationId'), idFilter(c, 'endpoint')),
      ),
    )
    .get('/:id/entries', (c) => listEntries(ctx, c))
    .get('/:id/trace', (c) => traceOne(ctx, c))
    .get('/:id', async (c) =>
      sendJson(
        c,
        200,
        subscriptionView(await requireSubscription(ctx, c.get('applicationId'), c.req.param('id'))),
      ),
    )
    .patch('/:id', async (c) => {
      const body = await readJson(c);
      return sendJson(
        c,
        200,
        await updateSubscriptionFromInput(
          ctx,
          c.get('applicationId'),
          c.req.param('id'),
          body.value,
          {
            metadata: rawMember(body, 'metadata'),
          },
        ),
      );
    })
    .delete('/:id', async (c) => {
      await removeSubscription(ctx, c.get('applicationId'), c.req.param('id'));
      return c.body(null, 204);
    });
}

/** GET /:id/entries: a page of the subscription's feed's entry history. */
async function listEntries(ctx: Ctx, c: Context<ApiEnv>): Promise<Response> {
  const sub = await requireSubscription(ctx, c.get('applicationId'), c.req.param('id') ?? '');
  return sendJson(c, 200, await listHistory(ctx, sub.feed_id, pageQuery(c, 'entries')));
}

/** GET /:id/trace?entry=: why an entry was or was not delivered to the subscription. */
async function traceOne(ctx: Ctx, c: Context<ApiEnv>): Promise<Response> {
  const id = c.req.param('id') ?? '';
  return sendJson(c, 200, await traceEntry(ctx, c.get('applicationId'), id, c.req.query('entry')));
}

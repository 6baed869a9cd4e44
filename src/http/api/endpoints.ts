// /v1/endpoints: register webhook URLs, read and change them, reveal and rotate their signing secret, test, recover.
import { Hono } from 'hono';
import type { Ctx } from '../../context.ts';
import {
  createEndpoint,
  endpointSecret,
  endpointView,
  listEndpointViews,
  recoverEndpoint,
  removeEndpoint,
  requireEndpoint,
  rotateEndpointSecret,
  updateEndpointFromInput,
} from '../../actions/endpoints.ts';
import { sendTestEvent } from '../../actions/events.ts';
import type { ApiEnv } from '../auth.ts';
import { pageQuery, readJson } from '../body.ts';
import { sendJson } from '../json.ts';

/** The endpoints sub-app. */
export function endpointsApi(ctx: Ctx): Hono<ApiEnv> {
  return new Hono<ApiEnv>()
    .post('/', async (c) =>
      sendJson(
        c,
        201,
        await createEndpoint(ctx, c.get('applicationId'), (await readJson(c)).value),
      ),
    )
    .get('/', async (c) =>
      sendJson(c, 200, await listEndpointViews(ctx, c.get('applicationId'), pageQuery(c))),
    )
    .get('/:id', async (c) =>
      sendJson(
        c,
        200,
        endpointView(await requireEndpoint(ctx, c.get('applicationId'), c.req.param('id'))),
      ),
    )
    .get('/:id/secret', async (c) =>
      sendJson(c, 200, await endpointSecret(ctx, c.get('applicationId'), c.req.param('id'))),
    )
    .patch('/:id', async (c) =>
      sendJson(
        c,
        200,
        await updateEndpointFromInput(
          ctx,
          c.get('applicationId'),
          c.req.param('id'),
          (await readJson(c)).value,
        ),
      ),
    )
    .post('/:id/rotate-secret', async (c) =>
      sendJson(c, 200, await rotateEndpointSecret(ctx, c.get('applicationId'), c.req.param('id'))),
    )
    .post('/:id/test', async (c) =>
      sendJson(c, 200, await sendTestEvent(ctx, c.get('applicationId'), c.req.param('id'))),
    )
    .post('/:id/recover', async (c) =>
      sendJson(
        c,
        200,
        await recoverEndpoint(
          ctx,
          c.get('applicationId'),
          c.req.param('id'),
          (await readJson(c)).value,
        ),
      ),
    )
    .delete('/:id', async (c) => {
      await removeEndpoint(ctx, c.get('applicationId'), c.req.param('id'));
      return c.body(null, 204);
    });
}

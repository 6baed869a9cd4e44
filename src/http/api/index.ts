// /v1: request limits, authentication, idempotency and body limits in front of one sub-app per resource.
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Ctx } from '../../context.ts';
import { ApiError } from '../../errors.ts';
import { idempotency, requireKey, type ApiEnv } from '../auth.ts';
import { limitApplicationRate, requestLimits, type RequestLimits } from '../ratelimit.ts';
import { endpointsApi } from './endpoints.ts';
import { eventsApi } from './events.ts';
import { feedsApi } from './feeds.ts';
import { openapiDocument } from './openapi.ts';
import { limitFailedKeys } from './ratelimit.ts';
import { storageApi } from './storage.ts';
import { subscriptionsApi } from './subscriptions.ts';

/** The /v1 sub-app. The OpenAPI document is public; everything else needs a key and is rate limited (`limits` are
 *  shared with the dashboard when the caller passes them). */
export function v1Api(ctx: Ctx, limits: RequestLimits = requestLimits(ctx.config)): Hono<ApiEnv> {
  const maxBytes = ctx.config.server.max_body_bytes;
  const api = new Hono<ApiEnv>();
  // Built on first request and kept by this app: generating it takes tens of milliseconds, and it is public.
  let document: ReturnType<typeof openapiDocument> | undefined;
  api.get('/openapi.json', (c) => c.json((document ??= openapiDocument())));
  api.use('*', limitFailedKeys(ctx, limits));
  api.use('*', requireKey(ctx));
  api.use(
    '*',
    limitApplicationRate<ApiEnv>(ctx, limits, (c) => c.get('applicationId')),
  );
  api.use(
    '*',
    bodyLimit({
      maxSize: maxBytes,
      onError: () => {
        throw new ApiError(413, 'Payload too large', `The request body exceeds ${maxBytes} bytes.`);
      },
    }),
  );
  api.use('*', idempotency(ctx));
  api.route('/endpoints', endpointsApi(ctx));
  api.route('/subscriptions', subscriptionsApi(ctx));
  api.route('/feeds', feedsApi(ctx));
  api.route('/events', eventsApi(ctx));
  api.route('/storage', storageApi(ctx));
  return api;
}

// The /dashboard sub-app: assets, security headers, sessions, sign-in (failures limited per address), the application's
// request rate, and one sub-app per page.
import { Hono, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Ctx } from '../../context.ts';
import { ApiError } from '../../errors.ts';
import type { Logger } from '../../log.ts';
import { assetsApp } from './assets.ts';
import { endpointPage } from './endpoint.ts';
import { endpointsPage } from './endpoints.tsx';
import { dashboardErrorHandler, notFoundPage } from './errors.tsx';
import { eventsPage } from './events.tsx';
import { feedsPage } from './feeds.tsx';
import { showOverview } from './overview.tsx';
import { limitApplicationRate, requestLimits, type RequestLimits } from '../ratelimit.ts';
import { loadSession, loginTokens, requireSession, type DashEnv } from './session.ts';
import { postHome, showSignIn, type SignInDeps } from './signin.tsx';
import { subscriptionPage } from './subscription.ts';
import { subscriptionsPage } from './subscriptions.tsx';

/** No inline scripts or styles, no framing, no referrer leaks, nothing cached (pages show secrets). */
const securityHeaders: MiddlewareHandler = async (c, next) => {
  await next();
  c.header(
    'content-security-policy',
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  );
  c.header('x-content-type-options', 'nosniff');
  c.header('referrer-policy', 'same-origin');
  c.header('cache-control', 'no-store');
};

/** Builds the dashboard over the same actions as the API. The request limits are the HTTP app's (shared with /v1) or
 *  this instance's own; the sign-in tokens are signed with `loginKey` (serve: the database's, shared by every node) or
 *  a key of this instance's own (no module state), so each app built, and each test, starts fresh. */
export function dashboardApp(
  ctx: Ctx,
  logger: Logger,
  limits: RequestLimits = requestLimits(ctx.config),
  loginKey?: Buffer,
): Hono<DashEnv> {
  const deps: SignInDeps = { limits, login: loginTokens(loginKey) };
  const maxBytes = ctx.config.server.max_body_bytes;
  const app = new Hono<DashEnv>();
  app.onError(dashboardErrorHandler(logger));
  app.route('/assets', assetsApp());
  app.use('*', securityHeaders);
  app.use('*', async (c, next) =>
    c.req.path.endsWith('/') && c.req.method === 'GET'
      ? c.redirect(c.req.path.replace(/\/+$/, ''), 301)
      : next(),
  );
  app.use(
    '*',
    bodyLimit({
      maxSize: maxBytes,
      onError: () => {
        throw new ApiError(413, 'Form too large', `The form exceeds ${maxBytes} bytes.`);
      },
    }),
  );
  app.use('*', loadSession(ctx));
  app.use(
    '*',
    limitApplicationRate<DashEnv>(ctx, limits, (c) => c.get('session')?.applicationId),
  );
  app.get('/', async (c) =>
    c.get('session') ? await showOverview(ctx, c) : showSignIn(ctx, deps, c),
  );
  app.post('/', (c) => postHome(ctx, deps, c));
  app.use('*', requireSession());
  for (const page of [
    endpointsPage,
    endpointPage,
    subscriptionsPage,
    subscriptionPage,
    eventsPage,
    feedsPage,
  ])
    app.route('/', page(ctx));
  app.all('*', (c) => notFoundPage(c));
  return app;
}

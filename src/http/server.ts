// The HTTP application: /healthz, /v1 (API), and the error funnel; app.ts serves it with @hono/node-server.
import { Hono } from 'hono';
import type { Ctx } from '../actions/context.ts';
import type { Logger } from '../log.ts';
import { v1Api } from './api/index.ts';
import { errorHandler, notFoundHandler, problem } from './errors.ts';

/** Builds the Hono app over a context; no network listening here, so tests call app.request(). */
export function createHttpApp(ctx: Ctx, logger: Logger): Hono {
  const app = new Hono();
  app.onError(errorHandler(logger));
  app.notFound(notFoundHandler);
  app.get('/healthz', (c) => {
    try {
      ctx.db.prepare('SELECT 1').get();
      return c.json({ status: 'ok' });
    } catch (err) {
      logger.error('http: health check failed', { error: err as Error });
      return problem(c, 503, 'The database does not answer.', {}, 'Unavailable');
    }
  });
  app.route('/v1', v1Api(ctx));
  return app;
}

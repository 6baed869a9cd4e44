// The dashboard's error pages (404, 403 CSRF, 429 and other client errors, 503 while PostgreSQL is away, 500) and its
// error funnel; another application's ids answer 404.
import type { Context } from 'hono';
import { html } from 'hono/html';
import type { Child } from 'hono/jsx';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { fromPostgres, unavailableDatabase } from '../../db/unavailable.ts';
import { ApiError } from '../../errors.ts';
import type { Logger } from '../../log.ts';
import { Layout } from './layout.tsx';
import { CsrfError, type DashEnv } from './session.ts';

/** Writes a full HTML page with a doctype. */
export function render(
  c: Context,
  node: Child,
  status: ContentfulStatusCode = 200,
): Response | Promise<Response> {
  return c.html(html`<!doctype html>${node}`, status);
}

/** A page explaining what went wrong and where to go next. */
export function ErrorPage(p: { c: Context<DashEnv>; title: string; children: Child }) {
  return (
    <Layout title={p.title} section="none" session={p.c.get('session')}>
      <h1>{p.title}</h1>
      <section class="card">{p.children}</section>
    </Layout>
  );
}

/** The 404 page: unknown ids and other applications' ids look the same. */
export function notFoundPage(c: Context<DashEnv>): Response | Promise<Response> {
  return render(
    c,
    <ErrorPage c={c} title="Not found">
      <p>
        There is nothing here for your application. It may have been deleted, or it belongs to
        another application.
      </p>
      <p>
        <a href="/dashboard">Back to the overview</a>
      </p>
    </ErrorPage>,
    404,
  );
}

/** How long a browser is asked to wait after a 503 (seconds), as the API asks. */
const RETRY_AFTER_SECONDS = 5;

/** Dashboard onError: 404 and CSRF failures get their pages; other client errors a short page; anything else is logged. */
export function dashboardErrorHandler(logger: Logger) {
  return (err: Error, c: Context<DashEnv>): Response | Promise<Response> => {
    if (err instanceof ApiError && err.status === 404) return notFoundPage(c);
    if (err instanceof CsrfError) {
      return render(
        c,
        <ErrorPage c={c} title="This form has expired">
          <p>
            The form was missing its security token or came from another page. Go back, reload the
            page and submit it again.
          </p>
          <p>
            <a href="/dashboard">Back to the overview</a>
          </p>
        </ErrorPage>,
        403,
      );
    }
    if (err instanceof ApiError) {
      for (const [k, v] of Object.entries(err.headers ?? {})) c.header(k, v);
      return render(
        c,
        <ErrorPage c={c} title={err.title}>
          <p>{err.message}</p>
          <p>
            <a href="/dashboard">Back to the overview</a>
          </p>
        </ErrorPage>,
        err.status as ContentfulStatusCode,
      );
    }
    const away = fromPostgres(err) ? unavailableDatabase(err) : undefined;
    if (away) {
      // The PostgreSQL server is down, restarting or out of reach: it passes, so the page says to try again.
      logger.warn('dashboard: database unavailable', {
        method: c.req.method,
        path: c.req.path,
        code: away,
      });
      c.header('retry-after', String(RETRY_AFTER_SECONDS));
      return render(
        c,
        <ErrorPage c={c} title="The database is unavailable">
          <p>The database cannot be reached right now. Please try again in a few seconds.</p>
        </ErrorPage>,
        503,
      );
    }
    logger.error('dashboard: unhandled error', {
      method: c.req.method,
      path: c.req.path,
      error: err.stack ?? err.message,
    });
    return render(
      c,
      <ErrorPage c={c} title="Something went wrong">
        <p>An internal error occurred; it has been logged. Please try again.</p>
      </ErrorPage>,
      500,
    );
  };
}

// The one error funnel: typed errors become RFC 9457 problem+json; anything else is logged and answered with a bare 500.
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { fromPostgres, unavailableDatabase } from '../db/unavailable.ts';
import { ApiError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { IncomingMessage } from 'node:http';

const TITLES: Record<number, string> = {
  400: 'Invalid request',
  404: 'Not found',
  405: 'Method not allowed',
  409: 'Conflict',
  413: 'Payload too large',
  415: 'Unsupported media type',
  429: 'Too many requests',
  503: 'Service unavailable',
};

/** Writes a problem+json response. */
export function problem(
  c: Context,
  status: number,
  detail: string,
  extra: Record<string, unknown> = {},
  title = TITLES[status] ?? 'Error',
): Response {
  const body = { type: 'about:blank', title, status, detail, ...extra };
  return c.body(JSON.stringify(body), status as ContentfulStatusCode, {
    'content-type': 'application/problem+json',
  });
}

/** Hono onError handler: ApiError → its problem; a database that cannot serve for now (full, locked, read-only; on
 *  PostgreSQL also down, restarting, unreachable or past the statement timeout: db/unavailable.ts) → 503 with
 *  Retry-After; any other error → one error log line (method, path, request id, cause) and a generic 500 that says
 *  nothing of the cause. */
export function errorHandler(logger: Logger) {
  return (err: Error, c: Context): Response => {
    // The client hung up while its request was being read: nobody reads this answer, and anyone can cause it, so the
    // access log notes it at debug (server.ts) and nothing else is logged. What the handler made of the part it read (a
    // body cut short is bad JSON, say) is of no interest.
    if (isClientAbort(err) || leftMidRequest(c))
      return problem(c, 400, 'The client closed the connection before its request was read.');
    if (err instanceof ApiError) {
      for (const [k, v] of Object.entries(err.headers ?? {})) c.header(k, v);
      if (err.status === 401)
        c.header('www-authenticate', challenge(c.req.header('authorization')));
      return problem(
        c,
        err.status,
        err.message,
        { ...(err.errors ? { errors: err.errors } : {}), ...err.extra },
        err.title,
      );
    }
    const status = (err as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500)
      return problem(c, status, err.message || 'Bad request.');
    const requestId = String((c.var as Record<string, unknown>).requestId ?? '');
    const storage = unavailableDatabase(err);
    if (storage) {
      // A full disk, a locked or read-only database or a PostgreSQL server away is the operator's to fix and passes;
      // clients should retry.
      logger.warn('http: database unavailable', {
        method: c.req.method,
        path: c.req.path,
        request_id: requestId,
        code: storage,
      });
      c.header('retry-after', String(STORAGE_RETRY_AFTER_SECONDS));
      const detail = 'The database cannot take this request right now; try again shortly.';
      return problem(c, 503, detail, {}, 'Service unavailable');
    }
    // The cause goes to the operator's log only; the client gets the request id to quote, nothing of the cause.
    logger.error('http: unhandled error', {
      method: c.req.method,
      path: c.req.path,
      request_id: requestId,
      error: err.stack ?? err.message,
    });
    const detail = `An internal error occurred; it has been logged with request id ${requestId}.`;
    return problem(c, 500, detail, {}, 'Internal server error');
  };
}

/** The challenge of a 401 (RFC 9110 §11.6.1 requires one): the key is a bearer token (RFC 6750 §2.1; the bare key is
 *  accepted too), and a key that was sent and refused is an invalid_token (RFC 6750 §3.1). */
export function challenge(authorization: string | undefined): string {
  const realm = 'Bearer realm="feedsub"';
  return authorization ? `${realm}, error="invalid_token"` : realm;
}

/** Whether an error is node:http's for a request whose client closed the connection mid-body ("aborted",
 *  ECONNRESET), as reading the body rethrows it; not a connection to PostgreSQL that was reset. */
export function isClientAbort(err: unknown): boolean {
  return (
    err instanceof Error && (err as { code?: unknown }).code === 'ECONNRESET' && !fromPostgres(err)
  );
}

/** Whether the client hung up before its request's body arrived whole: reading a body whose stream is already
 *  destroyed fails with whatever the reader throws (undici's Request: "body … disturbed or locked"), not ECONNRESET,
 *  when the handler starts reading only after the hang-up (a slow authentication, say). */
export function leftMidRequest(c: Context): boolean {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  return incoming !== undefined && incoming.destroyed && !incoming.complete;
}

/** How long a client is asked to wait after a 503 caused by the database (seconds). */
const STORAGE_RETRY_AFTER_SECONDS = 5;

/** Hono notFound handler. */
export function notFoundHandler(c: Context): Response {
  return problem(c, 404, `No route for ${c.req.method} ${c.req.path}.`);
}

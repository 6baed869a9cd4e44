// The HTTP application: /healthz, /v1 (API), and the error funnel; app.ts serves it with @hono/node-server.
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { requestId } from 'hono/request-id';
import type { Registry } from 'prom-client';
import type { Ctx } from '../context.ts';
import type { Logger } from '../log.ts';
import { v1Api } from './api/index.ts';
import { dashboardApp } from './dashboard/index.tsx';
import { errorHandler, isClientAbort, leftMidRequest, notFoundHandler, problem } from './errors.ts';
import { closeOnUnreadBody } from './listen.ts';
import { metricsHandler } from './metrics.ts';
import { requestLimits } from './ratelimit.ts';
import { webSubApp } from './websub.ts';
import type { PushDeps } from '../actions/ingest/push.ts';
import {
  readDocument,
  type DocumentReply,
  type DocumentRequest,
} from '../feed/parse/read-document.ts';
import { answerWithin, cachedFreeBytes, probeWrite, type WriteHealth } from '../db/health.ts';
import { fromPostgres, unavailableDatabase } from '../db/unavailable.ts';
import { pingDatabase } from '../store/maintenance.ts';
import { sqliteConnection } from '../db/sqlite-engine.ts';
import type { NodeRow } from '../store/nodes.ts';

/** What the app is built with beside the context: the metrics registry (/metrics only with one), what reads a pushed
 *  WebSub body (the parse pool's threads; absent: readDocument inline, on the main thread), and the live nodes as the
 *  node heartbeat last read them (/healthz shows them; worker/nodes.ts). */
export type HttpOptions = {
  /** The key the dashboard signs its sign-in tokens with (every node's, from the database); absent: its own. */
  loginKey?: Buffer;
  nodes?: () => readonly NodeRow[];
  registry?: Registry;
  read?: (doc: DocumentRequest, deadline: number) => Promise<DocumentReply>;
};

/** Builds the Hono app over a context; no network listening here, so tests call app.request(). */
export function createHttpApp(ctx: Ctx, logger: Logger, opts: HttpOptions = {}): Hono {
  const { registry } = opts;
  const app = new Hono();
  app.onError(errorHandler(logger));
  app.notFound(notFoundHandler);
  // First, so every response (errors included) carries X-Request-Id and every log line of the request can name it.
  app.use('*', requestId({ limitLength: REQUEST_ID_MAX }));
  app.use('*', closeOnUnreadBody());
  app.use('*', accessLog(logger, ctx.clock));
  if (registry) app.get('/metrics', metricsHandler(registry, ctx.config.metrics.token));
  app.get('/healthz', healthz(ctx, logger, opts.nodes));
  const limits = requestLimits(ctx.config); // one set of buckets: the API and the dashboard count together
  app.route('/v1', v1Api(ctx, limits));
  app.route('/dashboard', dashboardApp(ctx, logger, limits, opts.loginKey));
  const push: PushDeps = {
    read: opts.read ?? (async (doc) => readDocument(doc)),
    timeoutMs: ctx.config.poll.timeout_seconds * 1000,
    logger: logger.child({ loop: 'websub' }),
  };
  app.route('/websub', webSubApp(ctx, logger, push)); // WebSub callbacks: hubs have no API key
  return app;
}

/** GET /healthz: 200 {"status": "ok"} while the database answers (within PING_DEADLINE_MS) and, on SQLite, can take a
 *  write, with this node's id and the live nodes as its last heartbeat read them (no query of its own); else 503
 *  problem+json whose detail names the reason ("database is full", "database is locked", "disk is
 *  full", "database is unavailable (57P03)", …). On PostgreSQL the probe is the ping alone: the server's own disk and
 *  locks are its operator's to watch, and a write probe would cost a round trip per probe and node. A load balancer
 *  probes it every few seconds, so a reason is logged when it changes, and the return to health once. */
function healthz(
  ctx: Ctx,
  logger: Logger,
  nodes?: () => readonly NodeRow[],
): (c: Context) => Promise<Response> {
  let failing: string | undefined;
  const freeBytes = cachedFreeBytes(); // the disk's free space as read within the last second
  return async (c) => {
    let health: WriteHealth;
    try {
      await answerWithin(pingDatabase(ctx.db));
      const sqlite = sqliteConnection(ctx.store);
      health = sqlite ? await probeWrite(sqlite, { freeBytes }) : { ok: true };
    } catch (err) {
      health = { ok: false, reason: unhealthy(err) };
    }
    if (health.ok) {
      if (failing !== undefined) logger.info('http: healthy again', { was: failing });
      failing = undefined;
      return c.json(nodes ? { status: 'ok', node: ctx.node.id, nodes: nodes() } : { status: 'ok' });
    }
    if (health.reason !== failing) logger.warn('http: unhealthy', { reason: health.reason });
    failing = health.reason;
    return problem(c, 503, health.reason, {}, 'Unavailable');
  };
}

/** Why the ping failed, as /healthz says it: SQLite's message; on PostgreSQL the fault's code alone, as a message of
 *  the connection would show anyone who can reach /healthz where the server is. */
function unhealthy(err: unknown): string {
  if (!fromPostgres(err)) return err instanceof Error ? err.message : String(err);
  const code = unavailableDatabase(err) ?? (err as { code?: unknown }).code;
  return `database is unavailable${typeof code === 'string' ? ` (${code})` : ''}`;
}

/** A client's X-Request-Id is kept when it is at most this long and made of letters, digits, '_', '-' and '='. */
const REQUEST_ID_MAX = 128;

/** The path as the access log shows it: a WebSub callback's token is a capability (whoever has it can push), so it is
 *  left out: `/websub/<feed id>/…`. */
export function loggedPath(path: string): string {
  return path.startsWith('/websub/') ? path.replace(/^(\/websub\/[^/]*\/).+$/, '$1…') : path;
}

/** One line per request after it is answered. Probes (/healthz, /metrics) log at debug: a load balancer or Prometheus
 *  calls them every few seconds and would drown the outcome lines; so do requests whose client hung up before they
 *  were read (anyone can send those); everything else at info, but 429s at most once a second per application (see
 *  refusalLog). */
function accessLog(logger: Logger, clock: Ctx['clock']): MiddlewareHandler {
  const refusals = refusalLog();
  return async (c, next) => {
    const started = performance.now();
    await next();
    const quiet =
      c.req.path === '/healthz' ||
      c.req.path === '/metrics' ||
      isClientAbort(c.error) ||
      leftMidRequest(c);
    const vars = c.var as Record<string, unknown>;
    const applicationId = typeof vars.applicationId === 'string' ? vars.applicationId : undefined;
    const status = c.res.status;
    const suppressed = status === 429 ? refusals(applicationId ?? '', clock.now().getTime()) : 0;
    if (suppressed === undefined) return;
    logger[quiet ? 'debug' : 'info']('http: request', {
      method: c.req.method,
      path: loggedPath(c.req.path),
      request_id: vars.requestId,
      status,
      duration_ms: Math.round(performance.now() - started),
      ...(applicationId !== undefined ? { application_id: applicationId } : {}),
      ...(suppressed > 0 ? { suppressed } : {}),
    });
  };
}

/** A client that keeps going past its rate limit gets a 429 in a fraction of a millisecond and asks again: a line per
 *  refusal would let it write thousands of log lines a second. Of one application's 429s (or of all clients without a
 *  key, under ''), the first in each second is logged with `suppressed`, the number left out since the line before;
 *  the rest are counted here and not logged. Returns undefined for a refusal to leave out. The map holds an entry per
 *  application ever refused (and one for clients without a key), and is emptied past 10,000. */
function refusalLog(): (key: string, now: number) => number | undefined {
  const last = new Map<string, { at: number; suppressed: number }>();
  return (key, now) => {
    const seen = last.get(key);
    if (seen && now - seen.at < 1000) {
      seen.suppressed++;
      return undefined;
    }
    if (last.size >= 10_000) last.clear();
    last.set(key, { at: now, suppressed: 0 });
    return seen?.suppressed ?? 0;
  };
}

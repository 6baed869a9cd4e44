// API authentication (key → application) and Idempotency-Key replay for POSTs.
import { createHash } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Ctx } from '../context.ts';
import { authenticate } from '../actions/keys.ts';
import { ApiError, unauthorized } from '../errors.ts';
import { findIdempotency, saveIdempotency } from '../store/idempotency.ts';

export type ApiEnv = { Variables: { applicationId: string; keyId: string } };

const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

/** Requires a live API key in Authorization (bare or "Bearer "); 401 otherwise. */
export function requireKey(ctx: Ctx): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const who = await authenticate(ctx, c.req.header('authorization'));
    if (!who) throw unauthorized();
    c.set('applicationId', who.applicationId);
    c.set('keyId', who.keyId);
    await next();
  };
}

/** For POSTs with Idempotency-Key: same key and body within 24 h → the first response again; other body → 409. */
export function idempotency(ctx: Ctx): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const key = c.req.header('idempotency-key');
    if (c.req.method !== 'POST' || key === undefined) return next();
    if (key.length === 0 || key.length > 255)
      throw new ApiError(400, 'Invalid request', 'Idempotency-Key must be 1 to 255 characters.', {
        errors: [{ path: 'Idempotency-Key', message: 'must be 1 to 255 characters' }],
      });
    const applicationId = c.get('applicationId');
    const hash = createHash('sha256')
      .update(`${c.req.method} ${c.req.path}\n`)
      .update(await c.req.text())
      .digest('hex');
    const now = ctx.clock.now();
    const found = await findIdempotency(
      ctx.db,
      applicationId,
      key,
      new Date(now.getTime() - IDEMPOTENCY_TTL_MS).toISOString(),
    );
    if (found) {
      if (found.request_hash !== hash)
        throw new ApiError(
          409,
          'Conflict',
          'This Idempotency-Key was used with a different request.',
        );
      return c.body(found.response, found.status as ContentfulStatusCode, {
        'content-type': 'application/json',
        'idempotent-replayed': 'true',
      });
    }
    await next();
    if (c.res.status >= 300) return; // only successes are replayed; a failed request may be retried with the same key
    const response = await c.res.clone().text();
    await saveIdempotency(ctx.db, {
      application_id: applicationId,
      key,
      method: c.req.method,
      path: c.req.path,
      request_hash: hash,
      status: c.res.status,
      response,
      created_at: now.toISOString(),
    });
  };
}

// The API's limit on failed keys per client address, in front of the key check: 429 problem+json with Retry-After in
// place of a 401, and never a refusal of a valid key. (The per-application rate behind the key check is ../ratelimit.ts.)
import type { Context, MiddlewareHandler } from 'hono';
import { authenticate } from '../../actions/keys.ts';
import type { Ctx } from '../../context.ts';
import type { ApiEnv } from '../auth.ts';
import { addressKey, clientAddress } from '../client-address.ts';
import { failedKeysError, type RequestLimits } from '../ratelimit.ts';

/** In front of the key check. A request answered 401 (missing, unknown or revoked key) takes a token of its client
 *  address; once the address has none left, its requests with a key that fails are answered 429 with Retry-After
 *  instead, until one refills. A valid key is never refused here — behind a proxy that is not in
 *  server.trusted_proxies every client shares one address, and one client looping on a revoked key must not lock out
 *  the others — so a limited address's key is still checked (one SHA-256 and one indexed read, a tenth of what the
 *  request costs anyway), and only a failing one is refused, before anything else runs. */
export function limitFailedKeys(ctx: Ctx, limits: RequestLimits): MiddlewareHandler<ApiEnv> {
  const buckets = limits.failedAuth;
  if (!buckets) return (_c, next) => next();
  const addressOf = (c: Context) => addressKey(clientAddress(c, limits.trustedProxies));
  return async (c, next) => {
    // No address has failed a key lately (the usual case): nothing to look up before the request runs.
    if (buckets.size > 0) {
      const wait = buckets.retryAfterSeconds(addressOf(c), ctx.clock.now());
      if (wait > 0 && !(await authenticate(ctx, c.req.header('authorization'))))
        throw failedKeysError(limits, wait);
    }
    await next();
    if (c.res.status === 401) buckets.take(addressOf(c), ctx.clock.now());
  };
}

// GET /metrics: the Prometheus text exposition of a registry, behind an optional bearer token (metrics.token).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context } from 'hono';
import type { Registry } from 'prom-client';
import { problem } from './errors.ts';

/** A handler serving `registry`; when `token` is non-empty a scrape needs `Authorization: Bearer <token>`, else 401. */
export function metricsHandler(registry: Registry, token: string) {
  return async (c: Context): Promise<Response> => {
    if (token !== '' && !bearerMatches(c.req.header('authorization'), token)) {
      c.header('www-authenticate', 'Bearer realm="feedsub metrics"');
      return problem(
        c,
        401,
        'Scraping /metrics needs Authorization: Bearer <metrics.token>.',
        {},
        'Unauthorized',
      );
    }
    const text = await registry.metrics();
    return c.body(text, 200, { 'content-type': registry.contentType, 'cache-control': 'no-store' });
  };
}

/** True when `header` is "Bearer <expected>" (scheme case-insensitive, RFC 6750 §2.1); compares in constant time. */
export function bearerMatches(header: string | undefined, expected: string): boolean {
  const match = /^bearer[ \t]+(.+)$/i.exec(header?.trim() ?? '');
  if (!match) return false;
  // Hashing first gives equal-length inputs, so neither the length nor the content of the token leaks through timing.
  const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
  return timingSafeEqual(digest(match[1]!.trim()), digest(expected));
}

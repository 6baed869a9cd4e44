// Writing JSON responses, with clients' metadata written back exactly as they sent it.
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { toJson } from '../rawjson.ts';

/** A JSON response whose RawJson values are written verbatim. */
export function sendJson(c: Context, status: ContentfulStatusCode, value: unknown): Response {
  return c.body(toJson(value), status, { 'content-type': 'application/json' });
}

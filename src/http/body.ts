// Reading request bodies and query strings: JSON only (415 otherwise), bad JSON → 400, the raw text kept for exact metadata.
import type { Context } from 'hono';
import * as v from 'valibot';
import { toFieldIssues } from '../actions/validate.ts';
import { ApiError, invalid } from '../errors.ts';
import { extractMember } from '../rawjson.ts';
import type { PageQuery } from '../store/page.ts';

export type JsonBody = { value: unknown; text: string };

/** Reads a JSON body: 415 unless content-type is application/json (or +json), 400 for malformed JSON. */
export async function readJson(c: Context): Promise<JsonBody> {
  const type = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json' && !type.endsWith('+json')) {
    throw new ApiError(
      415,
      'Unsupported media type',
      'The request body must be JSON with Content-Type: application/json.',
    );
  }
  const text = await c.req.text();
  try {
    return { value: JSON.parse(text) as unknown, text };
  } catch (err) {
    throw new ApiError(
      400,
      'Invalid request',
      `The request body is not valid JSON: ${(err as Error).message}.`,
    );
  }
}

/** The raw JSON text of the body's top-level `name` member, when the body is an object that has one. */
export function rawMember(body: JsonBody, name: string): string | undefined {
  return body.value !== null && typeof body.value === 'object' && !Array.isArray(body.value)
    ? extractMember(body.text, name)
    : undefined;
}

const pageQuerySchema = (cursor: RegExp) =>
  v.object({
    limit: v.optional(
      v.pipe(
        v.string(),
        v.regex(/^\d+$/, 'must be an integer from 1 to 200'),
        v.transform(Number),
        v.minValue(1, 'must be an integer from 1 to 200'),
        v.maxValue(200, 'must be an integer from 1 to 200'),
      ),
      '50',
    ),
    after: v.optional(v.pipe(v.string(), v.regex(cursor, 'must be an id from a previous page'))),
  });
const PageQuerySchema = pageQuerySchema(/^[0-9a-f]{24}$/);
/** Lists of entries page by entry id (32 hex). */
const EntryPageQuerySchema = pageQuerySchema(/^[0-9a-f]{32}$/);

/** `?limit=` (default 50, 1–200) and `?after=<id>` (`entries`: an entry id); 400 naming the bad parameter. */
export function pageQuery(c: Context, ids: 'records' | 'entries' = 'records'): PageQuery {
  const result = v.safeParse(
    ids === 'entries' ? EntryPageQuerySchema : PageQuerySchema,
    { limit: c.req.query('limit'), after: c.req.query('after') },
    { abortEarly: false },
  );
  if (!result.success)
    throw invalid(toFieldIssues(result.issues), 'The query string has invalid parameters.');
  return { limit: Number(result.output.limit), after: result.output.after };
}

/** An optional id filter from the query string; 400 when malformed. */
export function idFilter(c: Context, name: string): string | undefined {
  const value = c.req.query(name);
  if (value === undefined || value === '') return undefined;
  if (!/^[0-9a-f]{24}$/.test(value))
    throw invalid(
      [{ path: name, message: 'must be an id of 24 hex characters' }],
      'The query string has invalid parameters.',
    );
  return value;
}

// Reading request bodies and query strings: JSON only (415 otherwise), bad JSON → 400, the raw text kept for exact metadata.
import type { Context } from 'hono';
import * as v from 'valibot';
import { IdString, toFieldIssues } from '../actions/validate.ts';
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

const LIMIT = 'must be an integer from 1 to 200';
const pageQuerySchema = (cursor: RegExp, after: string) =>
  v.object({
    limit: v.optional(
      v.pipe(
        v.string(),
        v.regex(/^\d+$/, LIMIT),
        v.transform(Number),
        // The number the digits read as: the OpenAPI document describes the parameter from here on.
        v.number(),
        v.integer(LIMIT),
        v.minValue(1, LIMIT),
        v.maxValue(200, LIMIT),
      ),
      '50',
    ),
    after: v.optional(
      v.pipe(
        v.string(),
        v.regex(cursor, 'must be an id from a previous page'),
        v.description(after),
      ),
    ),
  });
/** `?limit=` and `?after=` of the lists of records, paged by record id. */
export const PageQuerySchema = pageQuerySchema(
  /^[0-9a-f]{24}$/,
  'The `next` cursor of the previous page.',
);
/** Lists of entries page by entry id (32 hex). */
export const EntryPageQuerySchema = pageQuerySchema(
  /^[0-9a-f]{32}$/,
  'The `next` cursor of the previous page: an entry id (an entry pruned meanwhile ends the list).',
);

/** `?limit=` (default 50, 1–200) and `?after=<id>` (`entries`: an entry id); 400 naming the bad parameter. */
export function pageQuery(c: Context, ids: 'records' | 'entries' = 'records'): PageQuery {
  const result = v.safeParse(
    ids === 'entries' ? EntryPageQuerySchema : PageQuerySchema,
    { limit: c.req.query('limit'), after: c.req.query('after') },
    { abortEarly: false },
  );
  if (!result.success)
    throw invalid(toFieldIssues(result.issues), 'The query string has invalid parameters.');
  return { limit: result.output.limit, after: result.output.after };
}

/** An id filter of a query string: none, or an id. */
export const IdFilter = v.optional(IdString);

/** An optional id filter from the query string (IdFilter; an empty parameter is none); 400 when malformed. */
export function idFilter(c: Context, name: string): string | undefined {
  const value = c.req.query(name);
  const result = v.safeParse(IdFilter, value === '' ? undefined : value);
  if (!result.success)
    throw invalid(
      [{ path: name, message: result.issues[0].message }],
      'The query string has invalid parameters.',
    );
  return result.output;
}

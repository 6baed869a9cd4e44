// Shared input rules and the one function that turns valibot issues into a 400 listing every bad field.
import * as v from 'valibot';
import { invalid, type FieldIssue } from '../errors.ts';

/** Parses `input` with `schema`; throws a 400 ApiError naming every invalid field. */
export function validate<S extends v.GenericSchema>(schema: S, input: unknown): v.InferOutput<S> {
  const wantsObject = schema.type === 'strict_object' || schema.type === 'object';
  if (wantsObject && (input === null || typeof input !== 'object' || Array.isArray(input))) {
    throw invalid([{ path: '(body)', message: 'must be a JSON object' }]);
  }
  const result = v.safeParse(schema, input, { abortEarly: false });
  if (result.success) return result.output;
  throw invalid(toFieldIssues(result.issues));
}

/** valibot issues → [{path, message}], one per field (the first message of each). */
export function toFieldIssues(issues: readonly v.BaseIssue<unknown>[]): FieldIssue[] {
  const seen = new Map<string, string>();
  for (const issue of issues) {
    const path = issuePath(issue);
    if (!seen.has(path)) seen.set(path, describe(issue, path));
  }
  return [...seen].map(([path, message]) => ({ path, message }));
}

/** The issue's field as a path: members joined by dots, array items in brackets (`filter.keep[1].matches`). */
function issuePath(issue: v.BaseIssue<unknown>): string {
  let path = '';
  for (const p of issue.path ?? [])
    path += p.type === 'array' ? `[${String(p.key)}]` : `${path === '' ? '' : '.'}${String(p.key)}`;
  return path || '(body)';
}

/** valibot's wording for the structural issues, in ours: unknown fields, missing fields, a body that is not an object. */
function describe(issue: v.BaseIssue<unknown>, path: string): string {
  const structural = issue.type === 'strict_object' || issue.type === 'object';
  if (!structural) return issue.message;
  if (path === '(body)') return 'must be a JSON object';
  if (issue.expected === 'never') return 'is not a known field';
  if (issue.received === 'undefined') return 'is required';
  return 'must be a JSON object';
}

/** The check of HttpUrl that JSON Schema cannot say exactly: an absolute URL whose scheme is http or https (the OpenAPI
 *  document says `format: uri`). */
export const IsHttpUrl = v.check(isHttpUrl, 'must be an absolute http or https URL');

/** An absolute http(s) URL of at most 2048 characters. */
export const HttpUrl = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.nonEmpty('is required'),
  v.maxLength(2048, 'must be at most 2048 characters'),
  IsHttpUrl,
);

/** A title of 1–200 characters. */
export const Title = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.nonEmpty('is required'),
  v.maxLength(200, 'must be at most 200 characters'),
);

/** An id as feedsub makes them. */
export const IdString = v.pipe(
  v.string('must be a string'),
  v.regex(/^[0-9a-f]{24}$/, 'must be an id of 24 hex characters'),
);

function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

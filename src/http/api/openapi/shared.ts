// The building blocks every resource's part of the OpenAPI document shares: the schemas of ids, times, pages and
// problems, parameters and responses. Schemas are valibot schemas, turned into JSON Schema when the document is
// assembled (convert.ts): those of requests are the very schemas that validate them, those of answers describe the
// views the actions return (a type-level test holds each to its TypeScript type).
import * as v from 'valibot';
import { JsonObject } from '../../../actions/subscriptions.ts';
import { IdString } from '../../../actions/validate.ts';
import { PageQuerySchema } from '../../body.ts';
import { queryParameters, type Schema } from './convert.ts';

export type { Schema };
/** A schema as the parts give it: a valibot schema, or an OpenAPI object that holds them. */
export type SchemaLike = Schema | v.GenericSchema;
/** Path → method → operation. */
export type Paths = Record<string, Record<string, Schema>>;

/** Every resource's id, and the paging cursor. */
export const Id = IdString;
/** An ISO 8601 time, as every time in the API is written. */
export const Time = v.pipe(v.string(), v.isoTimestamp());
/** An absolute URL. */
export const Uri = v.pipe(v.string(), v.url());
/** A whole number. */
export const Int = v.pipe(v.number(), v.integer());

/** The schema with a description. */
export function described<S extends v.GenericSchema>(
  schema: S,
  description: string,
): v.SchemaWithPipe<readonly [S, v.DescriptionAction<v.InferOutput<S>, string>]> {
  return v.pipe(schema, v.description<v.InferOutput<S>, string>(description));
}

/** A JSON object whose members are the client's own (metadata) or described elsewhere: any members. */
export const openObject = (description: string) => described(JsonObject, description);

/** The body of every error response (RFC 9457). */
export const Problem = v.object({
  type: v.string(),
  title: v.string(),
  status: Int,
  detail: v.string(),
  errors: v.optional(v.array(v.object({ path: v.string(), message: v.string() }))),
  existing_id: v.optional(Id),
  quota: v.optional(described(v.string(), 'On 429: the [quotas] key of the limit met.')),
  limit: v.optional(described(Int, 'On 429: that limit.')),
  retry_after_seconds: v.optional(described(Int, 'On 429: the same wait as Retry-After.')),
});

/** The `{id}` of a path. */
export const idParam = { name: 'id', in: 'path', required: true, schema: Id };
/** The Idempotency-Key header (http/auth.ts reads it: 1 to 255 characters). */
export const idempotencyHeader = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: 'Same key and body within 24 h returns the first response.',
  schema: v.pipe(v.string(), v.maxLength(255)),
};
/** A response header of whole seconds (Retry-After). */
export const Seconds = v.pipe(v.number(), v.integer(), v.minValue(1));

/** An application/problem+json response with this description. */
export const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: Problem } },
});
/** A 429 problem (its `quota`, `limit` and `retry_after_seconds` name the limit met) with its Retry-After header. */
export const tooMany = (description: string) => ({
  ...problemResponse(description),
  headers: {
    'Retry-After': {
      description: 'Whole seconds to wait before trying again (also `retry_after_seconds`).',
      required: true,
      schema: Seconds,
    },
  },
});
/** Why any keyed operation may answer 429: the request rates, before any quota of the operation's own. */
export const RATE_LIMITED =
  'Too many requests: the application is over `quotas.api_requests_per_second`, or (in place of 401) too many requests with a missing, unknown or revoked key came from the client address (`quotas.failed_auth_per_address`).';
/** The 429 of an operation that may also meet a quota of its own, described after the request rates. */
export const tooManyOr = (quota: string) => tooMany(`${RATE_LIMITED} Or: ${quota}`);
/** An application/json response of this schema. */
export const json = (schema: SchemaLike, description = 'OK') => ({
  description,
  content: { 'application/json': { schema } },
});
/** A required application/json request body of this schema (the one the action validates it with). */
export const body = (schema: v.GenericSchema) => ({
  required: true,
  content: { 'application/json': { schema } },
});
/** The responses of an operation that answers 200 with this schema (the problems are added by operations.ts). */
export const ok = (schema: SchemaLike) => ({ 200: json(schema) });
/** The operation with its operationId (the name a generated client gives its method), first. */
export const withId = (operationId: string, op: Schema): Schema => ({ operationId, ...op });

/** A page of items of this schema, with the cursor of the next page (a record id unless told). */
export const page = <S extends v.GenericSchema>(
  item: S,
  cursor: v.GenericSchema<string, string> = Id,
) => v.object({ data: v.array(item), next: v.nullable(cursor) });
/** The paging parameters (http/body.ts reads them), then the resource's filters. */
export const pageQuery = (...filters: Schema[]) => [
  ...queryParameters(PageQuerySchema),
  ...filters,
];
/** GET of a collection: one page of this schema, newest first. */
export const list = (summary: string, item: v.GenericSchema, ...filters: Schema[]): Schema => ({
  summary,
  parameters: pageQuery(...filters),
  responses: { 200: json(page(item)) },
});
/** POST of a collection: the input schema, an Idempotency-Key, these responses (a 429 of its own replaces the
 *  shared one). */
export const create = (summary: string, input: v.GenericSchema, responses: object): Schema => ({
  summary,
  parameters: [idempotencyHeader],
  requestBody: body(input),
  responses,
});
/** GET of one resource by id, answered with this schema. */
export const read = (summary: string, schema: SchemaLike): Schema => ({
  summary,
  parameters: [idParam],
  responses: ok(schema),
});

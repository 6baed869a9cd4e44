// The building blocks every resource's part of the OpenAPI document shares: schema helpers, parameters, responses.

/** A JSON Schema or OpenAPI object, as plain data. */
export type Schema = Record<string, unknown>;
/** Path → method → operation. */
export type Paths = Record<string, Record<string, Schema>>;

/** A reference to a named schema of components.schemas. */
export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
/** A string schema with the given keywords. */
export const str = (extra: Schema = {}): Schema => ({ type: 'string', ...extra });
/** An integer schema with the given keywords. */
export const int = (extra: Schema = {}): Schema => ({ type: 'integer', ...extra });
/** The schema, or null. */
export const nullable = (s: Schema): Schema => ({ oneOf: [s, { type: 'null' }] });
/** Every resource's id, and the paging cursor. */
export const id = str({ pattern: '^[0-9a-f]{24}$' });
export const time = str({ format: 'date-time' });
export const uri = str({ format: 'uri', maxLength: 2048 });

/** The `{id}` of a path. */
export const idParam = { name: 'id', in: 'path', required: true, schema: id };
export const idempotencyHeader = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: 'Same key and body within 24 h returns the first response.',
  schema: str({ maxLength: 255 }),
};
const pageParams = [
  { name: 'limit', in: 'query', schema: int({ minimum: 1, maximum: 200, default: 50 }) },
  {
    name: 'after',
    in: 'query',
    description: 'The `next` cursor of the previous page.',
    schema: id,
  },
];

/** An application/problem+json response with this description. */
export const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: ref('Problem') } },
});
/** A 429 problem (its `quota`, `limit` and `retry_after_seconds` name the limit met) with its Retry-After header. */
export const tooMany = (description: string) => ({
  ...problemResponse(description),
  headers: {
    'Retry-After': {
      description: 'Whole seconds to wait before trying again (also `retry_after_seconds`).',
      required: true,
      schema: int({ minimum: 1 }),
    },
  },
});
/** Why any keyed operation may answer 429: the request rates, before any quota of the operation's own. */
export const RATE_LIMITED =
  'Too many requests: the application is over `quotas.api_requests_per_second`, or (in place of 401) too many requests with a missing, unknown or revoked key came from the client address (`quotas.failed_auth_per_address`).';
/** The 429 of an operation that may also meet a quota of its own, described after the request rates. */
export const tooManyOr = (quota: string) => tooMany(`${RATE_LIMITED} Or: ${quota}`);
/** An application/json response of this schema. */
export const json = (schema: Schema, description = 'OK') => ({
  description,
  content: { 'application/json': { schema } },
});
/** A required application/json request body of this schema. */
export const body = (schema: Schema) => ({
  required: true,
  content: { 'application/json': { schema } },
});
/** The responses of an operation that answers 200 with the named schema (the problems are added by operations.ts). */
export const ok = (name: string) => ({ 200: json(ref(name)) });
/** The operation with its operationId (the name a generated client gives its method), first. */
export const withId = (operationId: string, op: Schema): Schema => ({ operationId, ...op });
/** A JSON object whose members are the client's own (metadata) or described elsewhere: any members. */
export const openObject = (description?: string): Schema => ({
  type: 'object',
  additionalProperties: true,
  ...(description ? { description } : {}),
});

/** A page of items of the named schema, with the cursor of the next page. */
export const page = (item: string): Schema => ({
  type: 'object',
  required: ['data', 'next'],
  properties: { data: { type: 'array', items: ref(item) }, next: nullable(id) },
});
/** The paging parameters, then the resource's filters. */
export const pageQuery = (...filters: Schema[]) => [...pageParams, ...filters];
/** GET of a collection: one page of the named schema, newest first. */
export const list = (summary: string, item: string, ...filters: Schema[]): Schema => ({
  summary,
  parameters: pageQuery(...filters),
  responses: { 200: json(page(item)) },
});
/** POST of a collection: the named input schema, an Idempotency-Key, these responses (a 429 of its own replaces the
 *  shared one). */
export const create = (summary: string, input: string, responses: object): Schema => ({
  summary,
  parameters: [idempotencyHeader],
  requestBody: body(ref(input)),
  responses,
});
/** GET of one resource by id, answered with the named schema. */
export const read = (summary: string, name: string): Schema => ({
  summary,
  parameters: [idParam],
  responses: ok(name),
});

/** The body of every error response (RFC 9457). */
export const PROBLEM: Schema = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail'],
  properties: {
    type: str(),
    title: str(),
    status: int(),
    detail: str(),
    errors: {
      type: 'array',
      items: { type: 'object', properties: { path: str(), message: str() } },
    },
    existing_id: id,
    quota: str({ description: 'On 429: the [quotas] key of the limit met.' }),
    limit: int({ description: 'On 429: that limit.' }),
    retry_after_seconds: int({ description: 'On 429: the same wait as Retry-After.' }),
  },
};

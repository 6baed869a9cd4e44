// What every operation may answer besides its own responses, added when the document is assembled: each resource's
// part lists only what is particular to it, and a route added later gets the shared statuses without anyone recalling.
import * as v from 'valibot';
import { idempotencyHeader, problemResponse, RATE_LIMITED, Seconds, tooMany } from './shared.ts';
import type { Paths, Schema } from './shared.ts';

type Response = ReturnType<typeof problemResponse> & { headers?: Record<string, unknown> };

const IDEMPOTENCY_CONFLICT =
  'This Idempotency-Key was used within 24 h with another request (method, path or body).';

// The problems any request may meet, before or beside what its route does (docs/api.md › Errors).
const ANY = {
  400: problemResponse(
    'Invalid request: malformed JSON, invalid fields or query parameters, an Idempotency-Key over 255 characters, or a request HTTP cannot parse; `errors` lists every invalid field.',
  ),
  408: problemResponse(
    'The request was not received within the server’s time limit; the connection is closed.',
  ),
  431: problemResponse(
    'Request headers too large (over 16 KiB in all, the HTTP server’s limit); the connection is closed.',
  ),
  500: problemResponse(
    'A fault of the server, never of the request: logged under the request id the detail names.',
  ),
};
// With a key (every operation but the public ones).
const KEYED = {
  401: {
    ...problemResponse('Missing, unknown or revoked API key.'),
    headers: {
      'WWW-Authenticate': {
        description:
          'The challenge (RFC 9110 §11.6.1): `Bearer realm="feedsub"`, with `error="invalid_token"` when a key was sent and refused (RFC 6750 §3.1).',
        required: true,
        schema: v.string(),
      },
    },
  },
  503: {
    ...problemResponse(
      'The database cannot take the request for now (disk full, locked, read-only); retry after Retry-After.',
    ),
    headers: {
      'Retry-After': {
        description: 'Whole seconds to wait before trying again.',
        required: true,
        schema: Seconds,
      },
    },
  },
};
const NOT_FOUND = problemResponse("Unknown, or another application's.");
const TOO_LARGE = problemResponse('Body over `server.max_body_bytes` (1 MiB by default).');
const NOT_JSON = problemResponse('Body is not JSON (Content-Type must be application/json).');

/** The document's paths with every operation completed: the Idempotency-Key header on POSTs, and the problem
 *  responses the shared middleware and the HTTP server may answer, merged with the operation's own. */
export function completePaths(paths: Paths): Paths {
  return Object.fromEntries(
    Object.entries(paths).map(([path, ops]) => [
      path,
      Object.fromEntries(
        Object.entries(ops).map(([method, op]) => [method, completeOperation(path, method, op)]),
      ),
    ]),
  );
}

function completeOperation(path: string, method: string, op: Schema): Schema {
  const own = op.responses as Record<string, Response>;
  const keyed = !(Array.isArray(op.security) && op.security.length === 0);
  const shared: Record<string, Response> = { ...ANY };
  if (keyed) Object.assign(shared, KEYED, { 429: tooMany(RATE_LIMITED) });
  if (path.includes('{')) shared[404] = NOT_FOUND;
  if (method !== 'get') shared[413] = TOO_LARGE; // the body limit reads any body but a GET's
  if (op.requestBody) shared[415] = NOT_JSON;
  let parameters = (op.parameters ?? []) as Schema[];
  if (method === 'post') {
    shared[409] = problemResponse(IDEMPOTENCY_CONFLICT);
    if (!parameters.some((p) => p.name === idempotencyHeader.name))
      parameters = [...parameters, idempotencyHeader];
  }
  const responses: Record<string, Response> = { ...shared, ...own };
  // An operation's own 409 names its own cause; the idempotency conflict still applies, so both are told. (An own 429
  // comes from tooManyOr, which tells the request rates already.)
  const conflict = own[409];
  if (conflict && shared[409])
    responses[409] = {
      ...conflict,
      description: `${conflict.description}. Or: ${IDEMPOTENCY_CONFLICT}`,
    };
  return { ...op, ...(parameters.length > 0 ? { parameters } : {}), responses };
}

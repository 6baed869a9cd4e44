// The OpenAPI paths and schemas of webhook endpoints: CRUD, the signing secret, test sends and recovery.
import * as v from 'valibot';
import { Headers, RateLimit } from '../../../actions/endpoint-options.ts';
import {
  CreateEndpointInput,
  EndpointStatus,
  FilterTypes,
  RecoverInput,
  UpdateEndpointInput,
} from '../../../actions/endpoints.ts';
import { Attempt } from './events.ts';
import {
  body,
  create,
  Id,
  idempotencyHeader,
  idParam,
  Int,
  json,
  list,
  ok,
  problemResponse,
  read,
  Time,
  tooManyOr,
  withId,
} from './shared.ts';
import type { Paths } from './shared.ts';

/** An endpoint as the API shows it (actions' EndpointView): never its secret. */
export const Endpoint = v.object({
  id: Id,
  title: v.string(),
  url: v.string(),
  status: EndpointStatus,
  disabled_reason: v.nullable(v.string()),
  filter_types: FilterTypes,
  headers: Headers,
  rate_limit: RateLimit,
  created_at: Time,
  updated_at: Time,
});
/** The endpoint with its signing secret: the answer to its creation. */
export const EndpointWithSecret = v.intersect([
  Endpoint,
  v.object({ secret: v.pipe(v.string(), v.startsWith('whsec_')) }),
]);
/** The signing secret, and the previous one while a rotation's grace period lasts. */
export const EndpointSecret = v.object({
  secret: v.string(),
  previous_secret: v.nullable(v.string()),
  previous_secret_expires_at: v.nullable(Time),
});
/** What a test send did: its event, whether it was delivered, and its one attempt. */
export const TestEventResult = v.object({ event: Id, delivered: v.boolean(), attempt: Attempt });
/** How many events a recovery queued again. */
export const RecoverResult = v.object({ count: Int });

export const ENDPOINT_PATHS: Paths = {
  '/v1/endpoints': {
    post: withId(
      'createEndpoint',
      create('Register a webhook endpoint', CreateEndpointInput, {
        201: json(
          EndpointWithSecret,
          'Created; the only response besides GET …/secret that shows the secret',
        ),
        429: tooManyOr(
          'the application has `quotas.endpoints_per_application` endpoints already (delete some, or have the limit raised).',
        ),
      }),
    ),
    get: withId('listEndpoints', list('List endpoints, newest first', Endpoint)),
  },
  '/v1/endpoints/{id}': {
    get: withId('getEndpoint', read('Read an endpoint', Endpoint)),
    patch: {
      operationId: 'updateEndpoint',
      summary:
        'Change title, url, filter_types, headers or rate_limit, or enable/disable (re-enabling resumes delivery)',
      parameters: [idParam],
      requestBody: body(UpdateEndpointInput),
      responses: ok(Endpoint),
    },
    delete: {
      operationId: 'deleteEndpoint',
      summary: 'Delete an endpoint; 409 while subscriptions use it',
      parameters: [idParam],
      responses: {
        204: { description: 'Deleted' },
        409: problemResponse('Subscriptions use it'),
      },
    },
  },
  '/v1/endpoints/{id}/secret': {
    get: withId(
      'getEndpointSecret',
      read('Reveal the signing secret (and the previous one during a rotation)', EndpointSecret),
    ),
  },
  '/v1/endpoints/{id}/rotate-secret': {
    post: {
      operationId: 'rotateEndpointSecret',
      summary:
        'Replace the signing secret; the previous one also signs deliveries for delivery.secret_rotation_grace_seconds (24 h)',
      parameters: [idParam, idempotencyHeader],
      responses: ok(EndpointSecret),
    },
  },
  '/v1/endpoints/{id}/test': {
    post: {
      operationId: 'testEndpoint',
      summary: 'Send a signed endpoint.test event now (once, never retried) and return the attempt',
      parameters: [idParam, idempotencyHeader],
      responses: {
        ...ok(TestEventResult),
        429: tooManyOr(
          'the application sent `quotas.test_events_per_minute` test events within the last minute; nothing was sent.',
        ),
      },
    },
  },
  '/v1/endpoints/{id}/recover': {
    post: {
      operationId: 'recoverEndpoint',
      summary:
        'Queue again every dead or failed event of the endpoint created since a time; returns how many',
      parameters: [idParam, idempotencyHeader],
      requestBody: body(RecoverInput),
      responses: ok(RecoverResult),
    },
  },
};

/** The endpoint schemas, in the document's order. */
export const ENDPOINT_SCHEMAS = {
  EndpointCreate: CreateEndpointInput,
  EndpointUpdate: UpdateEndpointInput,
  Endpoint,
  EndpointWithSecret,
  EndpointSecret,
};

// The schemas of the test and recover actions. The published document lists them last, after the event schemas,
// and the served JSON keeps its order, so they are spread in apart from ENDPOINT_SCHEMAS.
export const ENDPOINT_ACTION_SCHEMAS = { TestEventResult, RecoverInput, RecoverResult };

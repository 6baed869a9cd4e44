// The OpenAPI 3.1 document served at /v1/openapi.json, assembled from each resource's part under openapi/, its valibot
// schemas turned into JSON Schema (openapi/convert.ts); a test checks it lists exactly the routes the app serves.
import { FEEDSUB_VERSION } from '../../version.ts';
import { ENDPOINT_ACTION_SCHEMAS, ENDPOINT_PATHS, ENDPOINT_SCHEMAS } from './openapi/endpoints.ts';
import { EVENT_PATHS, EVENT_SCHEMAS, WEBHOOKS } from './openapi/events.ts';
import { FEED_PATHS, FEED_SCHEMAS } from './openapi/feeds.ts';
import { convertSchemas, type Components } from './openapi/convert.ts';
import { completePaths } from './openapi/operations.ts';
import { json, openObject, Problem } from './openapi/shared.ts';
import type { Paths, Schema } from './openapi/shared.ts';
import { SUBSCRIPTION_PATHS, SUBSCRIPTION_SCHEMAS } from './openapi/subscriptions.ts';

/** Path → method → operation, in the order the published document lists them (the served JSON keeps it from version
 *  to version), each with its own responses only (the document completes them: openapi/operations.ts). */
export const PATHS: Paths = {
  ...ENDPOINT_PATHS,
  ...SUBSCRIPTION_PATHS,
  ...FEED_PATHS,
  ...EVENT_PATHS,
  '/v1/openapi.json': {
    get: {
      operationId: 'getOpenApiDocument',
      summary: 'This document',
      security: [],
      responses: { 200: json(openObject('An OpenAPI 3.1 document.')) },
    },
  },
};

/** Named schemas, in the order the published document lists them: each is a component, and every other use of it in
 *  the document a reference to it. */
export const SCHEMAS: Components = {
  Problem,
  ...ENDPOINT_SCHEMAS,
  ...SUBSCRIPTION_SCHEMAS,
  ...FEED_SCHEMAS,
  ...EVENT_SCHEMAS,
  ...ENDPOINT_ACTION_SCHEMAS,
};

/** The whole document. */
export function openapiDocument(): Schema {
  const converted = convertSchemas({ paths: completePaths(PATHS), webhooks: WEBHOOKS }, SCHEMAS);
  return {
    openapi: '3.1.0',
    info: {
      title: 'feedsub',
      version: FEEDSUB_VERSION,
      description:
        'Feed-to-webhook service. Authenticate with `Authorization: <API_KEY>` (or `Bearer <API_KEY>`). Every error is RFC 9457 `application/problem+json`.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/' }],
    security: [{ apiKey: [] }],
    paths: converted.tree.paths,
    webhooks: converted.tree.webhooks,
    components: {
      schemas: converted.components,
      securitySchemes: {
        apiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description:
            'The API key (`fsk_…`) as the whole header, or after `Bearer `. A 401 carries `WWW-Authenticate: Bearer realm="feedsub"`.',
        },
      },
    },
  };
}

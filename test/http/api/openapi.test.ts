import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PATHS, SCHEMAS } from '../../../src/http/api/openapi.ts';
import {
  ENDPOINT_ACTION_SCHEMAS,
  ENDPOINT_PATHS,
  ENDPOINT_SCHEMAS,
} from '../../../src/http/api/openapi/endpoints.ts';
import { EVENT_PATHS, EVENT_SCHEMAS } from '../../../src/http/api/openapi/events.ts';
import { FEED_PATHS, FEED_SCHEMAS } from '../../../src/http/api/openapi/feeds.ts';
import {
  SUBSCRIPTION_PATHS,
  SUBSCRIPTION_SCHEMAS,
} from '../../../src/http/api/openapi/subscriptions.ts';
import { makeWorld, type World } from '../../support/world.ts';

describe('/v1/openapi.json', () => {
  let w: World;
  before(() => {
    w = makeWorld();
  });
  after(() => w.close());

  it('is served without a key as an OpenAPI 3.1 document', async () => {
    const res = await w.call('GET', '/v1/openapi.json');
    assert.equal(res.status, 200);
    assert.equal(res.body.openapi, '3.1.0');
    assert.ok(res.body.components.schemas.Subscription);
  });

  it('documents exactly the /v1 routes the app serves', async () => {
    const doc = (await w.call('GET', '/v1/openapi.json')).body as {
      paths: Record<string, Record<string, unknown>>;
    };
    const served = new Set(
      w.app.routes
        .filter((r) => r.path.startsWith('/v1/') && r.method !== 'ALL' && !r.path.includes('*'))
        .map(
          (r) =>
            `${r.method.toLowerCase()} ${r.path.replace(/\/$/, '').replace(/:([A-Za-z_]+)/g, '{$1}')}`,
        ),
    );
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.keys(ops).map((m) => `${m} ${path}`),
      ),
    );
    assert.deepEqual([...served].sort(), [...documented].sort());
  });

  it('gives every operation a summary and responses, and resolves every $ref', async () => {
    const doc = (await w.call('GET', '/v1/openapi.json')).body;
    for (const [path, ops] of Object.entries(
      doc.paths as Record<string, Record<string, { summary?: string; responses?: object }>>,
    )) {
      for (const [method, op] of Object.entries(ops)) {
        assert.ok(op.summary, `${method} ${path} summary`);
        assert.ok(
          op.responses && Object.keys(op.responses).length > 0,
          `${method} ${path} responses`,
        );
      }
    }
    for (const m of JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) {
      assert.ok(doc.components.schemas[m[1]!], `schema ${m[1]}`);
    }
  });

  it('lists 429 with its Retry-After header on every operation that needs a key, naming the quotas it can meet', async () => {
    type Op = {
      security?: unknown[];
      responses: Record<string, { headers?: Record<string, { required?: boolean }> }>;
    };
    const doc = (await w.call('GET', '/v1/openapi.json')).body as {
      paths: Record<string, Record<string, Op>>;
    };
    const tooMany = (path: string, method: string) => doc.paths[path]![method]!.responses['429'];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (op.security?.length === 0) {
          assert.equal(tooMany(path, method), undefined, `${method} ${path} is not limited`);
          continue;
        }
        assert.equal(
          tooMany(path, method)?.headers?.['Retry-After']?.required,
          true,
          `${method} ${path}`,
        );
      }
    }
    const described = (path: string, method: string) => JSON.stringify(tooMany(path, method));
    assert.match(described('/v1/endpoints', 'post'), /quotas\.endpoints_per_application/);
    assert.match(described('/v1/subscriptions', 'post'), /quotas\.subscriptions_per_application/);
    assert.match(described('/v1/subscriptions', 'post'), /quotas\.new_feed_urls_per_hour/);
    assert.match(described('/v1/endpoints/{id}/test', 'post'), /quotas\.test_events_per_minute/);
    assert.match(described('/v1/endpoints', 'get'), /quotas\.api_requests_per_second/);
    assert.match(described('/v1/endpoints', 'get'), /quotas\.failed_auth_per_address/);
  });

  it('assembles parts that never name the same path or schema twice', () => {
    // The document spreads each resource's part into one object, where a repeated key would silently replace the first.
    const names = (...parts: object[]) => parts.flatMap((p) => Object.keys(p));
    const paths = names(ENDPOINT_PATHS, SUBSCRIPTION_PATHS, FEED_PATHS, EVENT_PATHS);
    assert.deepEqual(Object.keys(PATHS), [...paths, '/v1/openapi.json']);
    const schemas = names(
      ENDPOINT_SCHEMAS,
      SUBSCRIPTION_SCHEMAS,
      FEED_SCHEMAS,
      EVENT_SCHEMAS,
      ENDPOINT_ACTION_SCHEMAS,
    );
    assert.deepEqual(Object.keys(SCHEMAS), ['Problem', ...schemas]);
  });
});

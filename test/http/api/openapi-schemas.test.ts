// The OpenAPI document's schemas are the ones the API validates with and answers by: every request body is the
// conversion of the schema its action validates, the routes refuse exactly what the document refuses on values at the
// edges of every documented constraint, the converter's overrides are exactly the custom schemas and checks it cannot
// read, and (at the type level, checked by tsc in the lint step) each answer's schema is the type of the view sent.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as v from 'valibot';
import {
  CreateEndpointInput,
  RecoverInput,
  UpdateEndpointInput,
  type EndpointView,
  type endpointSecret,
  type recoverEndpoint,
} from '../../../src/actions/endpoints.ts';
import type {
  AttemptView,
  EventDetailView,
  EventView,
  TestEventResult,
} from '../../../src/actions/events.ts';
import {
  IdentityChangeInput,
  type FeedView,
  type resolveIdentityChange,
} from '../../../src/actions/feeds.ts';
import {
  CreateSubscriptionInput,
  UpdateSubscriptionInput,
  type SubscriptionApiView,
} from '../../../src/actions/subscriptions.ts';
import {
  ImportSubscriptionsInput,
  type ImportReport,
  type ImportResult,
} from '../../../src/actions/subscriptions-import.ts';
import type { TraceView } from '../../../src/actions/trace.ts';
import type { PushView } from '../../../src/actions/websub.ts';
import type { Enclosure as EnclosureType } from '../../../src/feed/types.ts';
import { openapiDocument, PATHS, SCHEMAS } from '../../../src/http/api/openapi.ts';
import { isValibotSchema, OVERRIDDEN, toSchema } from '../../../src/http/api/openapi/convert.ts';
import {
  Endpoint,
  EndpointSecret,
  EndpointWithSecret,
  RecoverResult,
  TestEventResult as TestEventResultSchema,
} from '../../../src/http/api/openapi/endpoints.ts';
import {
  Attempt,
  Enclosure,
  Entry,
  Event,
  EventDetail,
  HEALTH_FIELDS,
  HealthFeed,
  WEBHOOKS,
} from '../../../src/http/api/openapi/events.ts';
import {
  Feed,
  FeedListItem,
  FeedPush,
  ResolvedFeed,
  Storage,
} from '../../../src/http/api/openapi/feeds.ts';
import type { StorageView } from '../../../src/actions/budget.ts';
import { page } from '../../../src/http/api/openapi/shared.ts';
import {
  EntryTrace,
  Subscription,
  SubscriptionImportReport,
  SubscriptionImportResult,
} from '../../../src/http/api/openapi/subscriptions.ts';
import type { Page } from '../../../src/store/page.ts';
import type {
  EventEntry,
  FeedHealthEvent,
  HealthFeed as HealthFeedType,
} from '../../../src/webhook/event.ts';
import { OpenApiChecker, type SchemaIssue } from '../../support/openapi-check.ts';
import { makeWorld, type World } from '../../support/world.ts';

type Operation = {
  operationId: string;
  parameters?: { name: string; in: string }[];
  requestBody?: { content: { 'application/json': { schema: { $ref?: string } } } };
};
type Doc = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
};

// The schema each operation's action validates its body with.
const BODIES: Record<string, v.GenericSchema> = {
  createEndpoint: CreateEndpointInput,
  updateEndpoint: UpdateEndpointInput,
  recoverEndpoint: RecoverInput,
  createSubscription: CreateSubscriptionInput,
  updateSubscription: UpdateSubscriptionInput,
  importSubscriptions: ImportSubscriptionsInput,
  resolveFeedIdentityHold: IdentityChangeInput,
};

// Members a route reads further than JSON Schema can say: the route may refuse a value the document allows.
const STRICTER: Record<string, string> = {
  'importSubscriptions opml': 'read as an OPML document',
};
// Members a route reads more leniently than the document says: the document names the form to send.
const LENIENT: Record<string, string> = {
  'recoverEndpoint since':
    'Date.parse reads more forms than RFC 3339 date-times (24 zeros are a year)',
};

const OPML =
  '<opml version="2.0"><body><outline text="A" xmlUrl="https://example.com/a.xml"/></body></opml>';
const url = (length: number) => 'https://example.com/' + 'a'.repeat(length - 20);
const headers = (n: number) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-Header-${i}`, 'v']));
// Values on the edges of the documented constraints (types, lengths, bounds, patterns, formats, enums, item and member
// rules), sent as every member of every body. Values only a check beyond JSON Schema refuses (a private address, a
// reserved header name, an over-long header block, metadata over 16 KiB) are left to the resources' own tests.
const BODY_VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  1,
  -1,
  1.5,
  100,
  101,
  1000,
  1001,
  '',
  'x',
  'a'.repeat(200),
  'a'.repeat(201),
  '0'.repeat(24),
  'g'.repeat(24),
  '0'.repeat(32),
  'https://example.com/feed.xml',
  url(2048),
  url(2049),
  'not a url',
  '2026-01-01T00:00:00Z',
  'active',
  'paused',
  'disabled',
  'deliver',
  'discard',
  'subscription.entries',
  OPML,
  [],
  ['subscription.entries'],
  ['subscription.entries', 'subscription.entries'],
  ['endpoint.test'],
  ['nope'],
  {},
  { 'X-Team': 'a' },
  { 'bad name': 'a' },
  { 'X-A': 'a\nb' },
  { 'X-A': 1 },
  headers(20),
  headers(21),
  { team: 'a', n: [1, 2] },
];
// The same for query parameters, as they read in a query string (an empty one is no parameter).
const QUERY_VALUES = [
  'x',
  '0',
  '1',
  '01',
  '200',
  '201',
  '-1',
  '1.5',
  '0'.repeat(24),
  'g'.repeat(24),
  '0'.repeat(32),
  'pending',
  'failing',
  'active',
  'identity_changed',
  'nope',
  'a'.repeat(2048),
  'a'.repeat(2049),
];

/** Whether the issues name `member` of a body (an issue inside it, or the member itself being unknown). */
const names = (issues: SchemaIssue[], member: string) =>
  issues.some(
    (i) =>
      i.instancePath === `/${member}` ||
      i.instancePath.startsWith(`/${member}/`) ||
      (i.keyword === 'additionalProperties' && i.params.additionalProperty === member),
  );

describe('the OpenAPI document and the schemas the API validates with', () => {
  let w: World;
  let key: string;
  let doc: Doc;
  let checker: OpenApiChecker;
  const ids: Record<string, string> = {};
  before(async () => {
    w = makeWorld({ quotas: { api_requests_per_second: 0 } });
    key = (await w.key()).key;
    doc = openapiDocument() as Doc;
    checker = new OpenApiChecker(doc);
    const endpoint = await w.call('POST', '/v1/endpoints', {
      key,
      body: { title: 'Hook', url: 'https://hooks.example.com/in' },
    });
    const subscription = await w.call('POST', '/v1/subscriptions', {
      key,
      body: { endpoint: endpoint.body.id, url: 'https://example.com/feed.xml' },
    });
    ids.endpoints = endpoint.body.id;
    ids.subscriptions = subscription.body.id;
    ids.feeds = subscription.body.feed;
  });
  after(() => w.close());

  /** The operations of the document, with a path that names the resources made above. */
  const operations = () =>
    Object.entries(doc.paths).flatMap(([template, methods]) =>
      Object.entries(methods).map(([method, op]) => ({
        template,
        method,
        op,
        path: template.replace('{id}', ids[template.split('/')[2]!] ?? '0'.repeat(24)),
      })),
    );

  it('documents each request body as the conversion of the schema its action validates with', () => {
    const documented = operations().filter(({ op }) => op.requestBody);
    assert.deepEqual(documented.map(({ op }) => op.operationId).sort(), Object.keys(BODIES).sort());
    for (const { op } of documented) {
      const schema = op.requestBody!.content['application/json'].schema;
      const named = schema.$ref?.replace('#/components/schemas/', '');
      const resolved = named === undefined ? schema : doc.components.schemas[named];
      assert.deepEqual(resolved, toSchema(BODIES[op.operationId]!), op.operationId);
    }
  });

  it('refuses exactly the body members the document refuses, at the edges of every documented constraint', async () => {
    const disagreements: string[] = [];
    for (const { template, method, path, op } of operations()) {
      if (!op.requestBody) continue;
      const schema = op.requestBody.content['application/json'].schema;
      const named = schema.$ref?.replace('#/components/schemas/', '');
      const resolved = (named === undefined ? schema : doc.components.schemas[named]) as {
        properties: Record<string, unknown>;
      };
      for (const member of [...Object.keys(resolved.properties), 'unknown_member']) {
        for (const value of BODY_VALUES) {
          const body = { [member]: value };
          const documentRefuses = names(checker.requestIssues(method, template, body), member);
          const res = await w.call(method.toUpperCase(), path, { key, body });
          const errors = (res.status === 400 ? (res.body.errors ?? []) : []) as { path: string }[];
          const routeRefuses = errors.some(
            (e) =>
              e.path === member ||
              e.path.startsWith(`${member}.`) ||
              e.path.startsWith(`${member}[`),
          );
          const at = `${op.operationId} ${member}`;
          const excused = routeRefuses ? STRICTER[at] : LENIENT[at];
          if (documentRefuses !== routeRefuses && excused === undefined)
            disagreements.push(
              `${op.operationId} ${member}=${JSON.stringify(value).slice(0, 40)}: the document ${documentRefuses ? 'refuses' : 'allows'} it, the route ${routeRefuses ? 'refuses' : 'allows'} it`,
            );
        }
      }
    }
    assert.deepEqual(disagreements, []);
  });

  it('refuses exactly the query parameters the document refuses', async () => {
    const disagreements: string[] = [];
    for (const { template, method, path, op } of operations()) {
      for (const { name } of (op.parameters ?? []).filter((p) => p.in === 'query')) {
        for (const value of QUERY_VALUES) {
          const documentRefuses = checker.queryIssues(method, template, name, value).length > 0;
          const res = await w.call(method.toUpperCase(), `${path}?${name}=${value}`, { key });
          const errors = (res.status === 400 ? (res.body.errors ?? []) : []) as { path: string }[];
          const routeRefuses = errors.some((e) => e.path === name);
          if (documentRefuses !== routeRefuses)
            disagreements.push(
              `${op.operationId} ?${name}=${value.slice(0, 30)}: the document ${documentRefuses ? 'refuses' : 'allows'} it, the route ${routeRefuses ? 'refuses' : 'allows'} it`,
            );
        }
      }
    }
    assert.deepEqual(disagreements, []);
  });

  it('overrides exactly the custom schemas and checks of its schemas, and cannot convert one it does not know', () => {
    const unreadable = new Set<unknown>();
    const seen = new Set<unknown>();
    const walk = (node: unknown): void => {
      if (node === null || typeof node !== 'object' || seen.has(node)) return;
      seen.add(node);
      const { kind, type } = node as { kind?: unknown; type?: unknown };
      // A pipe copies its first schema's kind and type: the schema itself is the first of its pipe.
      if (kind === 'schema' && type === 'custom' && !('pipe' in node)) unreadable.add(node);
      if (kind === 'validation' && (type === 'check' || type === 'raw_check')) unreadable.add(node);
      for (const value of Object.values(node)) walk(value);
    };
    const schemas: unknown[] = [];
    const gather = (node: unknown): void => {
      if (isValibotSchema(node)) schemas.push(node);
      else if (node !== null && typeof node === 'object') Object.values(node).forEach(gather);
    };
    gather([SCHEMAS, PATHS, WEBHOOKS, BODIES]);
    schemas.forEach(walk);
    assert.deepEqual(
      [...OVERRIDDEN].filter((o) => !unreadable.has(o)),
      [],
      'an override no schema uses',
    );
    assert.equal(unreadable.size, OVERRIDDEN.length, 'a custom schema or check with no override');
    assert.throws(
      () =>
        toSchema(
          v.pipe(
            v.string(),
            v.check((s) => s.length % 2 === 0),
          ),
        ),
      /"check" action cannot be converted/,
    );
    assert.throws(() => toSchema(v.custom((x) => x === 1)), /"custom" schema cannot be converted/);
  });
});

// Type-level: each answer's schema has the type of the view the API sends, up to literal types (a union of literals
// reads as its base type: the values of enums are held by the checks of every API test's answers). A view member
// carrying raw JSON text (RawJson) is compared as the JSON it is. tsc fails the lint step on a `false` below.
type Widen<T> = T extends string
  ? string
  : T extends number
    ? number
    : T extends boolean
      ? boolean
      : T extends null | undefined
        ? T
        : T extends readonly (infer I)[]
          ? Widen<I>[]
          : T extends object
            ? { [K in keyof T]: Widen<T[K]> }
            : T;
type Same<A, B> = [Widen<A>] extends [Widen<B>]
  ? [Widen<B>] extends [Widen<A>]
    ? true
    : false
  : false;
type Out<S extends v.GenericSchema> = v.InferOutput<S>;
type Json = Record<string, unknown>;
type Holds<T extends true> = T;

export type ViewsMatchTheirSchemas = [
  Holds<Same<Out<typeof Endpoint>, EndpointView>>,
  Holds<Same<Out<typeof EndpointWithSecret>, EndpointView & { secret: string }>>,
  Holds<Same<Out<typeof EndpointSecret>, Awaited<ReturnType<typeof endpointSecret>>>>,
  Holds<Same<Out<typeof RecoverResult>, Awaited<ReturnType<typeof recoverEndpoint>>>>,
  Holds<Same<Out<typeof TestEventResultSchema>, TestEventResult>>,
  Holds<
    Same<
      Out<typeof Subscription>,
      Omit<SubscriptionApiView, 'metadata'> & { metadata: Json | null }
    >
  >,
  Holds<Same<Out<ReturnType<typeof page<typeof Endpoint>>>, Page<EndpointView>>>,
  // An import result's `error` is the API's problem body, built by the same ApiError fields.
  Holds<Same<Omit<Out<typeof SubscriptionImportResult>, 'error'>, Omit<ImportResult, 'error'>>>,
  Holds<Same<Out<typeof SubscriptionImportReport>['counts'], ImportReport['counts']>>,
  Holds<
    Same<Out<typeof EntryTrace>, Omit<TraceView, 'entry'> & { entry: Out<typeof Entry> | null }>
  >,
  Holds<Same<Out<typeof Feed>, FeedView>>,
  Holds<Same<Out<typeof FeedPush>, PushView>>,
  Holds<Same<Out<typeof FeedListItem>, FeedView & { subscription_count: number }>>,
  Holds<Same<Out<typeof ResolvedFeed>, Awaited<ReturnType<typeof resolveIdentityChange>>>>,
  Holds<Same<Out<typeof Event>, EventView>>,
  Holds<Same<Out<typeof Attempt>, AttemptView>>,
  Holds<Same<Out<typeof EventDetail>, Omit<EventDetailView, 'payload'> & { payload: Json }>>,
  Holds<Same<Out<typeof Enclosure>, EnclosureType>>,
  // toEventEntry gives every entry a date (when feedsub first saw it), and the key's source text is never sent.
  Holds<
    Same<
      Out<typeof Entry>,
      Omit<EventEntry, 'key_source' | 'published_at'> & { published_at: string }
    >
  >,
  Holds<Same<Out<typeof HealthFeed>, HealthFeedType>>,
  Holds<Same<Out<typeof Storage>, StorageView>>,
  Holds<Same<Out<(typeof HEALTH_FIELDS)['feed.failing']>, Fields<'feed.failing'>>>,
  Holds<Same<Out<(typeof HEALTH_FIELDS)['feed.recovered']>, Fields<'feed.recovered'>>>,
  Holds<Same<Out<(typeof HEALTH_FIELDS)['feed.gone']>, Fields<'feed.gone'>>>,
  Holds<Same<Out<(typeof HEALTH_FIELDS)['feed.moved']>, Fields<'feed.moved'>>>,
  Holds<Same<Out<(typeof HEALTH_FIELDS)['feed.identity_hold']>, Fields<'feed.identity_hold'>>>,
];
/** A feed-health event's own fields, as webhook/event.ts builds them. */
type Fields<T extends FeedHealthEvent['type']> = Omit<
  Extract<FeedHealthEvent, { type: T }>,
  'type'
>;

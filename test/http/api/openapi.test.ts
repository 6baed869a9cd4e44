import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { toEventEntry } from '../../../src/actions/entry-events.ts';
import { parseFeed } from '../../../src/feed/parse/parse.ts';
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
import {
  buildEntryEvents,
  buildHealthEvent,
  buildTestEvent,
  SUBSCRIPTION_EVENT_TYPES,
  type FeedHealthEvent,
} from '../../../src/webhook/event.ts';
import { OpenApiChecker } from '../../support/openapi-check.ts';
import { makeWorld, type World } from '../../support/world.ts';

type Operation = { operationId?: string; requestBody?: unknown };
type Doc = {
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, Record<string, Operation>>;
};
const ROOT = new URL('../../../', import.meta.url).pathname;

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

  it('names every operation and webhook with an operationId of its own', async () => {
    const doc = (await w.call('GET', '/v1/openapi.json')).body as Doc;
    const ops = [doc.paths, doc.webhooks].flatMap((part) =>
      Object.entries(part).flatMap(([path, methods]) =>
        Object.entries(methods).map(([method, op]) => ({ at: `${method} ${path}`, op })),
      ),
    );
    const missing = ops.filter(({ op }) => !op.operationId).map(({ at }) => at);
    assert.deepEqual(missing, []);
    const ids = ops.map(({ op }) => op.operationId);
    assert.equal(new Set(ids).size, ids.length, `repeated: ${ids.join(' ')}`);
  });

  it("passes Redocly's recommended lint without a warning", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'feedsub-openapi-'));
    try {
      const file = join(dir, 'openapi.json');
      writeFileSync(file, (await w.call('GET', '/v1/openapi.json')).text);
      const run = spawnSync(
        join(ROOT, 'node_modules/.bin/redocly'),
        ['lint', '--extends=recommended', '--format=json', file],
        {
          cwd: dir, // no redocly.yaml of anyone's applies
          encoding: 'utf8',
          timeout: 60_000,
          // No telemetry and no update check: the machine has no internet, and a test sends nothing out anyway.
          env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
        },
      );
      assert.equal(run.status, 0, run.stderr);
      const report = JSON.parse(run.stdout) as {
        totals: { errors: number; warnings: number };
        problems: { ruleId: string; message: string; location: { pointer: string }[] }[];
      };
      const problems = report.problems.map(
        (p) => `${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`,
      );
      assert.deepEqual(problems, []);
      assert.deepEqual(report.totals, { ...report.totals, errors: 0, warnings: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('documents a webhook for every event type, each with a payload of that type and the signature headers', async () => {
    const doc = (await w.call('GET', '/v1/openapi.json')).body as {
      webhooks: Record<string, { post: { parameters: { name: string; required: boolean }[] } }>;
    };
    assert.deepEqual(Object.keys(doc.webhooks).sort(), [
      ...[...SUBSCRIPTION_EVENT_TYPES, 'endpoint.test'].sort(),
    ]);
    const checker = new OpenApiChecker(doc);
    for (const [type, { post }] of Object.entries(doc.webhooks)) {
      const required = post.parameters.filter((p) => p.required).map((p) => p.name);
      assert.deepEqual(required, ['webhook-id', 'webhook-timestamp', 'webhook-signature'], type);
      const wrongType = JSON.stringify({
        type: type === 'endpoint.test' ? 'feed.gone' : 'endpoint.test',
        schema_version: 2,
        timestamp: '2026-01-01T00:00:00.000Z',
        data: {},
      });
      assert.throws(() => checker.checkWebhook(type, wrongType), /OpenAPI: webhook/, type);
    }
  });

  it('describes every payload the event builders make, as the webhook schema of its type', async () => {
    const checker = new OpenApiChecker((await w.call('GET', '/v1/openapi.json')).body as object);
    const now = new Date('2026-01-01T00:00:00.000Z');
    const feed = {
      id: 'f'.repeat(24),
      url: 'https://example.com/feed.xml',
      title: null,
      site_url: null,
    };
    const rss = `<?xml version="1.0"?><rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/"><channel>
      <title>Example</title><link>https://example.com/</link>
      <item><title>One &amp; <b>two</b></title><link>/1</link><guid>g1</guid><pubDate>Thu, 01 Jan 2026 00:00:00 GMT</pubDate>
        <description>&lt;p&gt;Hello &lt;a href="/x"&gt;x&lt;/a&gt;&lt;/p&gt;</description><author>a@example.com (A)</author>
        <category>news</category><enclosure url="/a.mp3" type="audio/mpeg" length="12"/>
        <media:thumbnail url="/t.png"/></item>
      <item><title>No date, no link</title></item>
    </channel></rss>`;
    const parsed = parseFeed(rss, { baseUrl: feed.url });
    const entries = parsed.entries.map((e, i) => toEventEntry(String(i).padStart(32, '0'), e, now));
    const big = { ...entries[0]!, id: 'b'.repeat(32), content_html: 'x'.repeat(300_000) }; // sent truncated
    for (const metadata of ['{"team":"a","n":[1.50,2e3]}', null]) {
      const subscription = { id: 'c'.repeat(24), url: feed.url, metadata };
      let n = 0;
      const built = buildEntryEvents({
        subscription,
        feed: { ...feed, title: parsed.title, site_url: parsed.site_url },
        entries: [...entries, big],
        now,
        firstSequence: 1,
        newId: () => String(++n).padStart(24, '0'),
      });
      for (const event of built) checker.checkWebhook('subscription.entries', event.body);
      for (const event of Object.values(HEALTH_EVENTS)) {
        const healthFeed = { ...feed, feed_url: 'https://example.com/x.xml', status: 'error' };
        const body = buildHealthEvent({ event, subscription, feed: healthFeed, now, sequence: 3 });
        checker.checkWebhook(event.type, body);
      }
    }
    checker.checkWebhook('endpoint.test', buildTestEvent('e'.repeat(24), now));
  });
});

// One event of each feed-health type, as the poller makes them (a type added to FeedHealthEvent must be added here).
const HEALTH_EVENTS: { [T in FeedHealthEvent['type']]: Extract<FeedHealthEvent, { type: T }> } = {
  'feed.failing': {
    type: 'feed.failing',
    consecutive_failures: 3,
    last_error: 'fetch: the server answered 500',
    last_http_status: 500,
    last_error_at: '2026-01-01T00:00:00.000Z',
    last_success_at: null,
    next_poll_at: '2026-01-01T00:10:00.000Z',
  },
  'feed.recovered': {
    type: 'feed.recovered',
    recovered_from: 'feed.gone',
    alerted_at: null,
    consecutive_failures: 4,
    last_error: null,
    last_http_status: 304,
  },
  'feed.gone': { type: 'feed.gone', last_http_status: 410, last_error: 'gone' },
  'feed.moved': { type: 'feed.moved', from: 'https://example.com/a', to: 'https://example.com/b' },
  'feed.identity_hold': {
    type: 'feed.identity_hold',
    held_entries: 12,
    identity_key: 'guid',
    release: {
      method: 'POST',
      path: '/v1/feeds/x/accept-identity-change',
      actions: ['deliver', 'discard'],
    },
  },
  'feed.over_budget': {
    type: 'feed.over_budget',
    held_at: '2026-01-01T00:00:00.000Z',
    used_bytes: 1_073_800_000,
    budget_bytes: 1_073_741_824,
    feed_bytes: 2_400_000,
  },
  'feed.within_budget': {
    type: 'feed.within_budget',
    held_at: '2026-01-01T00:00:00.000Z',
    used_bytes: 900_000_000,
    budget_bytes: 1_073_741_824,
  },
};

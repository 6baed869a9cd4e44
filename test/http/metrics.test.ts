import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import {
  createEndpoint,
  removeEndpoint,
  updateEndpointFromInput,
} from '../../src/actions/endpoints.ts';
import {
  removeSubscription,
  updateSubscriptionFromInput,
} from '../../src/actions/subscriptions.ts';
import { insertEvent } from '../../src/store/events.ts';
import { recordPollFailure } from '../../src/store/feeds-record.ts';
import { allocateSequences } from '../../src/store/subscriptions.ts';
import { newId } from '../../src/ids.ts';
import { createHttpApp } from '../../src/http/server.ts';
import { bearerMatches } from '../../src/http/metrics.ts';
import { silentLogger } from '../../src/log.ts';
import { holdEntries, recordKeys } from '../../src/store/entries.ts';
import { deliverTick } from '../../src/worker/deliver/deliverer.ts';
import { maintenanceTick } from '../../src/worker/maintenance/maintenance.ts';
import { createWorkers } from '../../src/worker/index.ts';
import { createMetrics } from '../../src/worker/metrics.ts';
import { pollTick } from '../../src/worker/poll/round.ts';
import { rss, startOrigin, startReceiver, type Origin, type Receiver } from '../support/servers.ts';
import { subscriber } from '../support/subscriber.ts';
import { makeWorld, type World } from '../support/world.ts';

type Sample = { name: string; labels: Record<string, string>; value: number };
type Exposition = { types: Map<string, string>; samples: Sample[] };

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?[ \t]+(\S+)(?:[ \t]+-?\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)/y;

/** Parses the Prometheus text format 0.0.4 strictly enough to reject what a scraper would reject. */
function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const [i, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const type =
        /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
      if (type) {
        assert.ok(!types.has(type[1]!), `line ${i + 1}: second TYPE for ${type[1]}`);
        types.set(type[1]!, type[2]!);
      } else
        assert.match(
          line,
          /^# (HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*|(?!HELP |TYPE ).*)$/,
          `line ${i + 1}: bad comment`,
        );
      continue;
    }
    const m = SAMPLE.exec(line);
    assert.ok(m, `line ${i + 1}: not a sample: ${line}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? '';
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < body.length) {
      const l = LABEL.exec(body);
      assert.ok(l, `line ${i + 1}: bad labels: ${body}`);
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    const value = parseValue(m[3]!);
    assert.ok(value !== undefined, `line ${i + 1}: bad value ${m[3]}`);
    const family = types.has(m[1]!) ? m[1]! : m[1]!.replace(/_(bucket|sum|count)$/, '');
    assert.ok(types.has(family), `line ${i + 1}: sample ${m[1]} before its TYPE`);
    samples.push({ name: m[1]!, labels, value });
  }
  return { types, samples };
}

/** A sample value as Prometheus reads it (Go's ParseFloat): a decimal number, or Inf/NaN in any case. prom-client
 *  writes "Nan" for the event-loop gauges before their first measurement, which Prometheus accepts. */
function parseValue(raw: string): number | undefined {
  if (/^nan$/i.test(raw)) return NaN;
  if (/^[+-]?inf(inity)?$/i.test(raw)) return raw.startsWith('-') ? -Infinity : Infinity;
  return /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(raw) ? Number(raw) : undefined;
}

/** The value of one sample; fails when it is missing. */
function value(exp: Exposition, name: string, labels: Record<string, string> = {}): number {
  const found = exp.samples.find(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  assert.ok(found, `no sample ${name} ${JSON.stringify(labels)}`);
  return found.value;
}

async function scrape(
  app: { request(path: string, init?: RequestInit): Response | Promise<Response> },
  headers: Record<string, string> = {},
): Promise<Exposition> {
  const res = await app.request('/metrics', { headers });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

describe('GET /metrics', () => {
  let world: World;
  afterEach(() => world?.close());

  it('serves Prometheus text with every feedsub metric and the process metrics', async () => {
    world = makeWorld();
    const metrics = createMetrics(world.ctx);
    const exp = await scrape(
      createHttpApp(world.ctx, silentLogger, { registry: metrics.registry }),
    );
    const expected: [string, string][] = [
      ['feedsub_feeds', 'gauge'],
      ['feedsub_polls_total', 'counter'],
      ['feedsub_fetch_duration_seconds', 'histogram'],
      ['feedsub_events', 'gauge'],
      ['feedsub_delivery_attempts_total', 'counter'],
      ['feedsub_delivery_attempt_duration_seconds', 'histogram'],
      ['feedsub_delivery_latency_seconds', 'histogram'],
      ['feedsub_queue_depth', 'gauge'],
      ['feedsub_oldest_pending_event_age_seconds', 'gauge'],
      ['feedsub_build_info', 'gauge'],
      ['feedsub_entries_filtered_total', 'counter'],
      ['process_cpu_seconds_total', 'counter'],
      ['nodejs_heap_size_used_bytes', 'gauge'],
    ];
    for (const [name, type] of expected) assert.equal(exp.types.get(name), type, name);
    for (const status of ['pending', 'active', 'error', 'gone', 'identity_changed', 'over_budget'])
      assert.equal(value(exp, 'feedsub_feeds', { status }), 0);
    for (const outcome of ['parsed', 'unchanged', 'gone', 'throttled', 'error'])
      assert.equal(value(exp, 'feedsub_polls_total', { outcome }), 0);
    for (const outcome of ['delivered', 'retry', 'dead'])
      assert.equal(value(exp, 'feedsub_delivery_attempts_total', { outcome }), 0);
    assert.equal(value(exp, 'feedsub_queue_depth'), 0);
    assert.equal(value(exp, 'feedsub_oldest_pending_event_age_seconds'), 0);
    for (const reason of ['blocked', 'not_kept'])
      assert.equal(value(exp, 'feedsub_entries_filtered_total', { reason }), 0);
  });

  it('is not served when the app was built without a registry', async () => {
    world = makeWorld();
    assert.equal((await world.app.request('/metrics')).status, 404);
  });

  it('asks for the bearer token when metrics.token is set', async () => {
    world = makeWorld({ metrics: { token: 's3cret-token' } });
    const app = createHttpApp(world.ctx, silentLogger, {
      registry: createMetrics(world.ctx).registry,
    });
    const cases: [string | undefined, number][] = [
      [undefined, 401],
      ['s3cret-token', 401],
      ['Bearer wrong', 401],
      ['Bearer s3cret-toke', 401],
      ['Basic s3cret-token', 401],
      ['Bearer s3cret-token', 200],
      ['bearer s3cret-token', 200],
    ];
    for (const [authorization, status] of cases) {
      const res = await app.request('/metrics', {
        headers: authorization === undefined ? {} : { authorization },
      });
      assert.equal(res.status, status, String(authorization));
      if (status === 401) {
        assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="feedsub metrics"');
        assert.doesNotMatch(await res.text(), /s3cret/);
      }
    }
  });

  it("keeps each app's registry separate", async () => {
    world = makeWorld();
    const one = createMetrics(world.ctx);
    const two = createMetrics(world.ctx);
    one.telemetry.polled('error', 120);
    const exp1 = await scrape(createHttpApp(world.ctx, silentLogger, { registry: one.registry }));
    const exp2 = await scrape(createHttpApp(world.ctx, silentLogger, { registry: two.registry }));
    assert.equal(value(exp1, 'feedsub_polls_total', { outcome: 'error' }), 1);
    assert.equal(value(exp2, 'feedsub_polls_total', { outcome: 'error' }), 0);
  });

  it("reads queue depth and the oldest waiting event's age from the database at scrape time", async () => {
    world = makeWorld();
    const app = createHttpApp(world.ctx, silentLogger, {
      registry: createMetrics(world.ctx).registry,
    });
    const { key, applicationId } = await world.key();
    const endpoint = await world.call('POST', '/v1/endpoints', {
      key,
      body: { title: 'hook', url: 'http://127.0.0.1:9/hook' },
    });
    assert.equal(endpoint.status, 201);
    for (const minutes of [0, 1]) {
      world.clock.advance(minutes * 60_000);
      const now = world.clock.now();
      await insertEvent(
        world.ctx.db,
        {
          id: newId(now),
          application_id: applicationId,
          endpoint_id: endpoint.body.id,
          subscription_id: null,
          type: 'endpoint.test',
          sequence: null,
          body: '{}',
        },
        now,
      );
    }
    world.clock.advance(30_000);
    const exp = await scrape(app);
    assert.equal(value(exp, 'feedsub_queue_depth'), 2);
    assert.equal(value(exp, 'feedsub_events', { status: 'pending' }), 2);
    assert.equal(value(exp, 'feedsub_oldest_pending_event_age_seconds'), 90);
  });
});

/** Queues one event of `subscription` (to `endpoint`), created `at`, with the subscription's next sequence. */
async function queueEvent(
  world: World,
  ids: { applicationId: string; endpoint: string; subscription: string },
  at: Date,
): Promise<void> {
  await world.ctx.store.write(async (sql) =>
    insertEvent(
      sql,
      {
        id: newId(at),
        application_id: ids.applicationId,
        endpoint_id: ids.endpoint,
        subscription_id: ids.subscription,
        type: 'subscription.entries',
        sequence: await allocateSequences(sql, ids.subscription, 1),
        body: '{}',
      },
      at,
    ),
  );
}

describe('GET /metrics, alerts that do not cry wolf', () => {
  let world: World;
  afterEach(() => world?.close());

  it("leaves events held by a paused subscription or a disabled endpoint out of the oldest waiting event's age", async () => {
    world = makeWorld();
    const app = createHttpApp(world.ctx, silentLogger, {
      registry: createMetrics(world.ctx).registry,
    });
    const one = await subscriber(world);
    const paused = await one.subscribe('http://127.0.0.1:9/paused.xml');
    const live = await one.subscribe('http://127.0.0.1:9/live.xml');
    const other = await subscriber(world);
    const held = await other.subscribe('http://127.0.0.1:9/held.xml');
    const t0 = world.clock.now().getTime();
    const at = (minutes: number) => new Date(t0 + minutes * 60_000);
    const app1 = { applicationId: one.applicationId, endpoint: one.endpoint };
    await queueEvent(world, { ...app1, subscription: paused.id }, at(0));
    await queueEvent(
      world,
      { applicationId: other.applicationId, endpoint: other.endpoint, subscription: held.id },
      at(1),
    );
    await queueEvent(world, { ...app1, subscription: live.id }, at(2));
    await queueEvent(world, { ...app1, subscription: live.id }, at(3));
    world.clock.advance(10 * 60_000);
    assert.equal(value(await scrape(app), 'feedsub_oldest_pending_event_age_seconds'), 600);
    await updateSubscriptionFromInput(world.ctx, one.applicationId, paused.id, {
      status: 'paused',
    });
    await updateEndpointFromInput(world.ctx, other.applicationId, other.endpoint, {
      status: 'disabled',
    });
    const exp = await scrape(app);
    assert.equal(
      value(exp, 'feedsub_oldest_pending_event_age_seconds'),
      480,
      'the live subscription, whose oldest event is 8 minutes old',
    );
    assert.equal(value(exp, 'feedsub_queue_depth'), 4, 'the queue depth still counts every one');
    await updateSubscriptionFromInput(world.ctx, one.applicationId, live.id, { status: 'paused' });
    assert.equal(value(await scrape(app), 'feedsub_oldest_pending_event_age_seconds'), 0);
  });

  it('counts feeds that no active subscription polls as idle, whatever their last status', async () => {
    world = makeWorld();
    const app = createHttpApp(world.ctx, silentLogger, {
      registry: createMetrics(world.ctx).registry,
    });
    const s = await subscriber(world);
    const failing = await s.subscribe('http://127.0.0.1:9/failing.xml');
    const pausedFailing = await s.subscribe('http://127.0.0.1:9/paused.xml');
    const deletedFailing = await s.subscribe('http://127.0.0.1:9/deleted.xml');
    await s.subscribe('http://127.0.0.1:9/new.xml');
    for (const sub of [failing, pausedFailing, deletedFailing])
      await recordPollFailure(
        world.ctx.db,
        sub.feed,
        { errorClass: 'network', message: 'refused', httpStatus: null, nextPollAt: '2026-01-02' },
        world.clock.now(),
      );
    await updateSubscriptionFromInput(world.ctx, s.applicationId, pausedFailing.id, {
      status: 'paused',
    });
    await removeSubscription(world.ctx, s.applicationId, deletedFailing.id);
    const exp = await scrape(app);
    assert.equal(value(exp, 'feedsub_feeds', { status: 'error' }), 1);
    assert.equal(value(exp, 'feedsub_feeds', { status: 'pending' }), 1);
    assert.equal(value(exp, 'feedsub_feeds', { status: 'idle' }), 2);
  });
});

describe('GET /metrics, per endpoint', () => {
  it("labels attempts with the endpoint's id, and drops a deleted endpoint's series", async () => {
    const world = makeWorld();
    try {
      const metrics = createMetrics(world.ctx);
      const app = createHttpApp(world.ctx, silentLogger, { registry: metrics.registry });
      const { applicationId } = await world.key();
      const make = async (title: string) =>
        (
          await createEndpoint(world.ctx, applicationId, {
            title,
            url: 'https://hooks.example.com/',
          })
        ).id;
      const [kept, deleted] = [await make('kept'), await make('deleted')];
      metrics.telemetry.attempted('delivered', 120, 1000, kept);
      metrics.telemetry.attempted('retry', 15_000, null, kept);
      metrics.telemetry.attempted('retry', 3000, null, deleted);
      let exp = await scrape(app);
      assert.equal(exp.types.get('feedsub_endpoint_attempts_total'), 'counter');
      assert.equal(exp.types.get('feedsub_endpoint_attempt_duration_seconds'), 'histogram');
      const of = (endpoint: string, outcome: string) =>
        value(exp, 'feedsub_endpoint_attempts_total', { endpoint, outcome });
      assert.deepEqual(
        [of(kept, 'delivered'), of(kept, 'retry'), of(kept, 'dead'), of(deleted, 'retry')],
        [1, 1, 0, 1],
      );
      assert.equal(
        value(exp, 'feedsub_endpoint_attempt_duration_seconds_bucket', { endpoint: kept, le: '1' }),
        1,
        'the 120 ms attempt; the 15 s one is above',
      );
      await removeEndpoint(world.ctx, applicationId, deleted);
      exp = await scrape(app);
      assert.ok(
        !exp.samples.some((x) => x.labels.endpoint === deleted),
        'no series of the deleted',
      );
      assert.equal(of(kept, 'retry'), 1);
      assert.equal(
        value(exp, 'feedsub_endpoint_attempt_duration_seconds_count', { endpoint: kept }),
        2,
      );
    } finally {
      await world.close();
    }
  });
});

describe('GET /metrics, the bounded tables', () => {
  it('shows entry keys, held entries and orphaned feeds as the last maintenance pass counted them', async () => {
    const world = makeWorld();
    try {
      const metrics = createMetrics(world.ctx);
      const app = createHttpApp(world.ctx, silentLogger, { registry: metrics.registry });
      const { key, subscribe } = await subscriber(world);
      const kept = await subscribe('http://127.0.0.1:9/a.xml');
      const left = await subscribe('http://127.0.0.1:9/b.xml');
      const now = world.clock.now();
      await world.ctx.store.write(async (sql) => {
        for (const [feed, n] of [
          [kept.feed, 3],
          [left.feed, 2],
        ] as const)
          await recordKeys(
            sql,
            feed,
            Array.from({ length: n }, (_, i) => ({ key: `k${i}`, fingerprint: null })),
            now,
          );
        await holdEntries(sql, kept.feed, [{ key: 'h', entry: '{}', position: 0 }], now, {
          entries: 10,
          bytes: 1000,
        });
      });
      await world.call('DELETE', `/v1/subscriptions/${left.id}`, { key });
      const before = await scrape(app);
      assert.equal(before.types.get('feedsub_entry_keys'), 'gauge');
      assert.equal(value(before, 'feedsub_entry_keys'), 0, 'nothing counted yet');
      await maintenanceTick(world.ctx, { logger: silentLogger, telemetry: metrics.telemetry });
      const after = await scrape(app);
      assert.equal(value(after, 'feedsub_entry_keys'), 5);
      assert.equal(value(after, 'feedsub_held_entries'), 1);
      assert.equal(value(after, 'feedsub_orphaned_feeds'), 1);
    } finally {
      await world.close();
    }
  });
});

describe('GET /metrics after a real poll and delivery', () => {
  let world: World;
  let origin: Origin;
  let receiver: Receiver;
  before(async () => {
    origin = await startOrigin();
    receiver = await startReceiver();
  });
  after(async () => {
    await world?.close();
    await origin.close();
    await receiver.close();
  });

  it('moves the poll and delivery counters and histograms', async () => {
    world = makeWorld();
    const metrics = createMetrics(world.ctx);
    const app = createHttpApp(world.ctx, silentLogger, { registry: metrics.registry });
    const workers = createWorkers(world.ctx, silentLogger, metrics.telemetry);
    try {
      const { key } = await world.key();
      origin.set('/feed.xml', { body: rss([{ guid: 'a' }]) });
      const endpoint = await world.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'receiver', url: `${receiver.url}/hook` },
      });
      const sub = await world.call('POST', '/v1/subscriptions', {
        key,
        body: { endpoint: endpoint.body.id, url: `${origin.url}/feed.xml` },
      });
      assert.equal(sub.status, 201, sub.text);
      await pollTick(world.ctx, workers.pollerDeps, { all: true }); // the baseline: nothing is sent
      origin.set('/feed.xml', { body: rss([{ guid: 'b' }, { guid: 'a' }]) });
      world.clock.advance(60_000);
      const polled = await pollTick(world.ctx, workers.pollerDeps, { all: true });
      assert.equal(polled.summary.events, 1);
      let exp = await scrape(app);
      assert.equal(value(exp, 'feedsub_queue_depth'), 1);
      world.clock.advance(2_000);
      const delivered = await deliverTick(world.ctx, workers.delivererDeps);
      assert.equal(delivered.summary.delivered, 1);
      assert.equal(receiver.deliveries.length, 1);
      exp = await scrape(app);
      assert.equal(value(exp, 'feedsub_polls_total', { outcome: 'parsed' }), 2);
      assert.equal(value(exp, 'feedsub_fetch_duration_seconds_count'), 2);
      assert.equal(value(exp, 'feedsub_fetch_duration_seconds_bucket', { le: '+Inf' }), 2);
      assert.equal(value(exp, 'feedsub_delivery_attempts_total', { outcome: 'delivered' }), 1);
      assert.equal(value(exp, 'feedsub_delivery_attempt_duration_seconds_count'), 1);
      assert.equal(value(exp, 'feedsub_delivery_latency_seconds_count'), 1);
      const mine = { endpoint: endpoint.body.id as string };
      assert.equal(
        value(exp, 'feedsub_endpoint_attempts_total', { ...mine, outcome: 'delivered' }),
        1,
      );
      assert.equal(value(exp, 'feedsub_endpoint_attempts_total', { ...mine, outcome: 'dead' }), 0);
      assert.equal(value(exp, 'feedsub_endpoint_attempt_duration_seconds_count', mine), 1);
      assert.ok(
        value(exp, 'feedsub_delivery_latency_seconds_sum') >= 2,
        "latency counts from the event's creation",
      );
      assert.equal(value(exp, 'feedsub_feeds', { status: 'active' }), 1);
      assert.equal(value(exp, 'feedsub_events', { status: 'delivered' }), 1);
      assert.equal(value(exp, 'feedsub_queue_depth'), 0);
      assert.equal(value(exp, 'feedsub_oldest_pending_event_age_seconds'), 0);
    } finally {
      await workers.close();
    }
  });
});

describe('bearerMatches', () => {
  const cases: [string | undefined, boolean][] = [
    [undefined, false],
    ['', false],
    ['Bearer', false],
    ['Bearer ', false],
    ['tok', false],
    ['Bearer tok2', false],
    ['Bearer tok', true],
    ['BEARER tok', true],
    ['Bearer   tok  ', true],
    ['Basic tok', false],
  ];
  for (const [header, expected] of cases) {
    it(`${expected ? 'accepts' : 'refuses'} ${JSON.stringify(header)} for the token "tok"`, () => {
      assert.equal(bearerMatches(header, 'tok'), expected);
    });
  }
});

describe('the exposition check used above', () => {
  const bad: [string, string][] = [
    ['a sample before its TYPE', 'x_total 1\n'],
    ['a value that is not a number', '# TYPE x gauge\nx one\n'],
    ['an unquoted label value', '# TYPE x gauge\nx{a=b} 1\n'],
    ['a second TYPE line', '# TYPE x gauge\n# TYPE x gauge\nx 1\n'],
  ];
  for (const [what, text] of bad)
    it(`rejects ${what}`, () => assert.throws(() => parseExposition(text)));
  it("accepts labels with escapes and Prometheus' spellings of NaN and infinity", () => {
    const exp = parseExposition(
      '# HELP x A help text.\n# TYPE x gauge\nx{a="q\\"uote",b="line\\nbreak"} Nan\nx{a="2"} +Inf 1700000000000\n',
    );
    assert.deepEqual(exp.samples[0]!.labels, { a: 'q"uote', b: 'line\nbreak' });
    assert.ok(Number.isNaN(exp.samples[0]!.value));
    assert.equal(exp.samples[1]!.value, Infinity);
  });
});

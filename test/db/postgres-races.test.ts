// The guarantees hold on PostgreSQL with two writers at once. Each test runs two nodes: two engines (two pools) on one
// database, each with its own context and HTTP app, as two `feedsub serve` processes sharing a server would. They race
// the same work with Promise.all, round after round, and every write transaction of both pauses a little before it
// commits (slowCommits), so that the other node's transaction reads and writes while this one's work is not yet
// visible: the interleavings a missing lock would let through happen in every round, not once in a thousand. This file
// starts PostgreSQL itself (sharedPostgres) whatever FEEDSUB_TEST_ENGINE says: the races exist only there.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Hono } from 'hono';
import type { Agent } from 'undici';
import { createKey } from '../../src/actions/keys.ts';
import { queueBackfillChunk } from '../../src/actions/backfills.ts';
import { receivePush } from '../../src/actions/ingest/push.ts';
import { readPostgresSchemaSql } from '../../src/assets.ts';
import { manualClock } from '../../src/clock.ts';
import { defaultConfig, withConfig, type Config } from '../../src/config.ts';
import { quietCtx, transaction, type Ctx } from '../../src/context.ts';
import type { Engine, Sql } from '../../src/db/engine.ts';
import type { PostgresEngine } from '../../src/db/postgres-engine.ts';
import { preparePostgresSchema } from '../../src/db/postgres-schema.ts';
import { refreshFeed, refreshTarget } from '../../src/feed/fetch/refresh.ts';
import { readDocument, type DocumentRequest } from '../../src/feed/parse/read-document.ts';
import { createHttpApp } from '../../src/http/server.ts';
import { newId } from '../../src/ids.ts';
import { silentLogger } from '../../src/log.ts';
import { createGuardedAgent } from '../../src/net/guard.ts';
import { insertEvent } from '../../src/store/events.ts';
import { endLease } from '../../src/store/feed-leases.ts';
import { dueFeedWindow, leaseDueFeeds, leaseFeeds } from '../../src/store/feeds-poll.ts';
import { allocateSequences } from '../../src/store/subscriptions.ts';
import { noTelemetry } from '../../src/telemetry.ts';
import {
  createDelivererDeps,
  deliverTick,
  type DelivererDeps,
} from '../../src/worker/deliver/deliverer.ts';
import { applyOutcome } from '../../src/worker/poll/outcome.ts';
import { sharedPostgres, testEngine } from '../support/postgres.ts';
import { rss, startOrigin, startReceiver, type Origin, type Receiver } from '../support/servers.ts';

/** How long each write transaction of a node waits before it commits. */
const COMMIT_PAUSE_SECONDS = 0.02;

/** `engine` with a pause at the end of each write transaction, before its commit: what it wrote stays invisible to the
 *  other node (and its locks held) for that long, which is when a transaction that should wait for it, and does not,
 *  reads the state from before it. Reads and statements outside a transaction run as they are. */
function slowCommits(engine: PostgresEngine): Engine {
  const pause = async (sql: Sql) => {
    await sql.get('SELECT pg_sleep(@s)::text AS slept', { s: COMMIT_PAUSE_SECONDS });
  };
  const write = <T>(fn: (sql: Sql) => Promise<T>): Promise<T> =>
    engine.write(async (sql) => {
      const value = await fn(sql);
      await pause(sql);
      return value;
    });
  return {
    dialect: 'postgres',
    all: (text, params) => engine.all(text, params),
    get: (text, params) => engine.get(text, params),
    column: (text, params) => engine.column(text, params),
    value: (text, params) => engine.value(text, params),
    run: (text, params) => engine.run(text, params),
    exec: (script) => engine.exec(script),
    savepoint: write,
    write,
    read: (fn) => engine.read(fn),
    close: () => engine.close(),
  };
}

type Answer = { status: number; body: any; text: string };

/** One node: its engine (slowed), its context and HTTP app, and the API called with a key. */
type Node = {
  name: string;
  ctx: Ctx;
  app: Hono;
  call(method: string, path: string, key: string, body?: unknown): Promise<Answer>;
};

/** Two nodes on one new database, sharing a clock (each process reads the same wall time) and a config. */
type Pair = {
  a: Node;
  b: Node;
  nodes: [Node, Node];
  clock: ReturnType<typeof manualClock>;
  /** A new application with a key, made through node a. */
  key(): Promise<{ key: string; applicationId: string }>;
  close(): Promise<void>;
};

async function twoNodes(patch: Parameters<typeof withConfig>[1] = {}): Promise<Pair> {
  const url = await (await sharedPostgres()).newDatabase();
  const engines = [testEngine(url), testEngine(url)];
  await preparePostgresSchema(engines[0]!, readPostgresSchemaSql());
  const config: Config = withConfig(
    withConfig(defaultConfig(), { network: { allow_private: true } }),
    patch,
  );
  const clock = manualClock('2026-01-01T00:00:00.000Z');
  const node = (name: string, engine: PostgresEngine): Node => {
    const ctx = quietCtx(slowCommits(engine), clock, config);
    const app = createHttpApp(ctx, silentLogger);
    return {
      name,
      ctx,
      app,
      async call(method, path, key, body) {
        const res = await app.request(path, {
          method,
          headers: { authorization: key, 'content-type': 'application/json' },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        });
        const text = await res.text();
        return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
      },
    };
  };
  const a = node('a', engines[0]!);
  const b = node('b', engines[1]!);
  let apps = 0;
  return {
    a,
    b,
    nodes: [a, b],
    clock,
    async key() {
      const made = await createKey(a.ctx, `app-${++apps}`, null);
      return { key: made.key, applicationId: made.application.id };
    },
    async close() {
      await Promise.all(engines.map((e) => e.close()));
    },
  };
}

/** Node `node` polls the feed `feedId` once as its poller does (lease, fetch, then the record in a transaction of its
 *  own) and expects it parsed; returns what the record stored. */
async function pollOn(
  node: Node,
  clock: ReturnType<typeof manualClock>,
  agent: Agent,
  feedId: string,
) {
  const now = clock.now();
  const [target] = await node.ctx.store.write((db) => leaseFeeds(db, [feedId], now, 60_000));
  assert.ok(target, 'the feed is leased');
  const outcome = await refreshFeed(refreshTarget(target), {
    agent,
    read: async (doc) => readDocument(doc),
    userAgent: 'feedsub-test',
    maxBodyBytes: 1 << 20,
    connectTimeoutMs: 2000,
    totalTimeoutMs: 10_000,
    now: () => clock.now(),
  });
  assert.equal(outcome.kind, 'parsed');
  return transaction(node.ctx, (tx) => applyOutcome(tx, target, outcome, now, now));
}

/** How many of `answers` have each status, e.g. { 201: 3, 429: 3 }. */
function statusCounts(answers: Answer[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
  return counts;
}

/** The unexpected answers, for an assertion's message. */
function unexpected(answers: Answer[], expected: number[]): string {
  return answers
    .filter((a) => !expected.includes(a.status))
    .map((a) => `${a.status} ${a.text}`)
    .join('\n');
}

describe('the guarantees hold on PostgreSQL with two writers at once', () => {
  let receiver: Receiver;
  let origin: Origin;
  before(async () => {
    await sharedPostgres();
    receiver = await startReceiver();
    origin = await startOrigin();
  });
  after(async () => {
    await receiver?.close();
    await origin?.close();
  });

  it('counts subscriptions_per_application exactly: of 2×N creates split across both nodes, N get 201 and the rest 429', async () => {
    const N = 3;
    const ROUNDS = 20;
    const pair = await twoNodes({ quotas: { subscriptions_per_application: N } });
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const { key, applicationId } = await pair.key();
        const endpoint = (
          await pair.a.call('POST', '/v1/endpoints', key, {
            title: 'E',
            url: 'https://hooks.example.com/',
          })
        ).body.id as string;
        const answers = await Promise.all(
          Array.from({ length: 2 * N }, (_, i) =>
            pair.nodes[i % 2]!.call('POST', '/v1/subscriptions', key, {
              endpoint,
              url: `https://feeds.example.com/${round}/${i}.xml`,
            }),
          ),
        );
        assert.deepEqual(
          statusCounts(answers),
          { 201: N, 429: N },
          `round ${round}: ${unexpected(answers, [201, 429])}`,
        );
        const held = await pair.a.ctx.db.value<number>(
          'SELECT count(*) FROM subscriptions WHERE application_id = ?',
          [applicationId],
        );
        assert.equal(held, N, `round ${round}: subscriptions held`);
      }
    } finally {
      await pair.close();
    }
  });

  it('counts new_feed_urls_per_hour and test_events_per_minute exactly across both nodes', async () => {
    const N = 3;
    const ROUNDS = 20;
    const pair = await twoNodes({
      quotas: {
        subscriptions_per_application: 0,
        new_feed_urls_per_hour: N,
        test_events_per_minute: N,
      },
    });
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const { key, applicationId } = await pair.key();
        const endpoint = (
          await pair.a.call('POST', '/v1/endpoints', key, {
            title: 'E',
            url: `${receiver.url}/test`,
          })
        ).body.id as string;
        const creates = await Promise.all(
          Array.from({ length: 2 * N }, (_, i) =>
            pair.nodes[i % 2]!.call('POST', '/v1/subscriptions', key, {
              endpoint,
              url: `https://feeds.example.com/new/${round}/${i}.xml`,
            }),
          ),
        );
        assert.deepEqual(
          statusCounts(creates),
          { 201: N, 429: N },
          `round ${round}, new feed URLs: ${unexpected(creates, [201, 429])}`,
        );
        const tests = await Promise.all(
          Array.from({ length: 2 * N }, (_, i) =>
            pair.nodes[i % 2]!.call('POST', `/v1/endpoints/${endpoint}/test`, key),
          ),
        );
        assert.deepEqual(
          statusCounts(tests),
          { 200: N, 429: N },
          `round ${round}, test events: ${unexpected(tests, [200, 429])}`,
        );
        const used = await pair.a.ctx.db.all<{ quota: string; n: number }>(
          'SELECT quota, count(*) AS n FROM quota_usage WHERE application_id = ? GROUP BY quota ORDER BY quota',
          [applicationId],
        );
        assert.deepEqual(
          used.map((u) => ({ ...u })),
          [
            { quota: 'new_feed_urls_per_hour', n: N },
            { quota: 'test_events_per_minute', n: N },
          ],
          `round ${round}: uses recorded`,
        );
      }
    } finally {
      await pair.close();
    }
  });

  it('has an event attempted by one worker at a time: both deliverers claim the same due events, none is leased by both', async () => {
    const ROUNDS = 20;
    const SUBSCRIPTIONS = 6;
    const pair = await twoNodes({ delivery: { concurrency: 8 } });
    const agents: Agent[] = [];
    try {
      const deliverers = pair.nodes.map((node) => {
        const agent = createGuardedAgent({ allowPrivate: true });
        agents.push(agent);
        return createDelivererDeps(node.ctx, {
          agent,
          logger: silentLogger,
          telemetry: noTelemetry,
          userAgent: 'feedsub-test',
          random: () => 0.5,
        });
      }) as [DelivererDeps, DelivererDeps];
      // Two applications, each with three endpoints of one subscription: a claim walks both applications, and every
      // subscription has one event due per round (its FIFO lets it go).
      const subs: { id: string; applicationId: string; endpointId: string }[] = [];
      for (let app = 0; app < 2; app++) {
        const { key, applicationId } = await pair.key();
        for (let i = 0; i < SUBSCRIPTIONS / 2; i++) {
          const endpointId = (
            await pair.a.call('POST', '/v1/endpoints', key, {
              title: `E${i}`,
              url: `${receiver.url}/claim/${app}/${i}`,
            })
          ).body.id as string;
          const created = await pair.a.call('POST', '/v1/subscriptions', key, {
            endpoint: endpointId,
            url: `https://feeds.example.com/claim/${app}/${i}.xml`,
          });
          assert.equal(created.status, 201, created.text);
          subs.push({ id: created.body.id, applicationId, endpointId });
        }
      }
      const seen = new Map<string, number>();
      for (let round = 0; round < ROUNDS; round++) {
        const now = pair.clock.now();
        const ids = await pair.a.ctx.store.write(async (db) => {
          const made: string[] = [];
          for (const s of subs) {
            const sequence = await allocateSequences(db, s.id, 1);
            const id = newId(now);
            await insertEvent(
              db,
              {
                id,
                application_id: s.applicationId,
                endpoint_id: s.endpointId,
                subscription_id: s.id,
                type: 'subscription.entries',
                sequence,
                body: JSON.stringify({ type: 'subscription.entries', round, sequence }),
              },
              now,
            );
            made.push(id);
          }
          return made;
        });
        const before = receiver.deliveries.length;
        // Both nodes tick at once until neither starts an attempt: every event is claimed by one or the other.
        for (let ticks = 0; ticks < 20; ticks++) {
          const started = await Promise.all(
            pair.nodes.map((node, i) => deliverTick(node.ctx, deliverers[i]!)),
          );
          if (started.every((t) => t.started === 0)) break;
        }
        const sent = receiver.deliveries.slice(before).map((d) => d.id);
        for (const id of sent) seen.set(id, (seen.get(id) ?? 0) + 1);
        const twice = [...seen].filter(([, n]) => n > 1).map(([id]) => id);
        assert.deepEqual(twice, [], `round ${round}: events attempted by both nodes`);
        assert.deepEqual([...sent].sort(), [...ids].sort(), `round ${round}: each event sent once`);
        const attempts = await pair.a.ctx.db.all<{ event_id: string; n: number }>(
          `SELECT event_id, count(*) AS n FROM attempts WHERE event_id IN (${ids.map(() => '?').join(', ')})
            GROUP BY event_id HAVING count(*) <> 1`,
          ids,
        );
        assert.deepEqual(attempts, [], `round ${round}: one attempt per event`);
        pair.clock.advance(1000);
      }
    } finally {
      await Promise.all(agents.map((agent) => agent.close()));
      await pair.close();
    }
  });

  it('gives each subscription each entry at most once, numbered without gaps, when a poll on one node and a push on the other store the same document at once', async () => {
    const ROUNDS = 20;
    const pair = await twoNodes({
      poll: { interval_seconds: 60, min_interval_seconds: 60, max_interval_seconds: 3600 },
    });
    const agent = createGuardedAgent({ allowPrivate: true });
    const read = async (doc: DocumentRequest) => readDocument(doc);
    try {
      const path = '/race.xml';
      const feedUrl = origin.url + path;
      const items = (last: number) =>
        Array.from({ length: last }, (_, i) => ({
          guid: `g${last - i}`,
          title: `Item ${last - i}`,
        }));
      origin.set(path, { body: rss(items(1)) });
      // Three subscriptions of two applications to the one feed.
      const subs: string[] = [];
      let feedId = '';
      for (const endpoints of [2, 1]) {
        const { key } = await pair.key();
        for (let i = 0; i < endpoints; i++) {
          const endpoint = (
            await pair.a.call('POST', '/v1/endpoints', key, {
              title: `E${i}`,
              url: 'https://hooks.example.com/',
            })
          ).body.id as string;
          const created = await pair.b.call('POST', '/v1/subscriptions', key, {
            endpoint,
            url: feedUrl,
          });
          assert.equal(created.status, 201, created.text);
          subs.push(created.body.id);
          feedId = created.body.feed;
        }
      }
      /** Node `node` polls the feed as its poller does (claim, fetch, then the record in a transaction of its own),
       *  its record made to start together with `alongside`; returns both. */
      const poll = async <T>(node: Node, alongside: () => Promise<T>) => {
        const now = pair.clock.now();
        const [target] = await node.ctx.store.write((db) => leaseFeeds(db, [feedId], now, 60_000));
        assert.ok(target, 'the feed is leased');
        const seenAt = pair.clock.now();
        const outcome = await refreshFeed(refreshTarget(target), {
          agent,
          read,
          userAgent: 'feedsub-test',
          maxBodyBytes: 1 << 20,
          connectTimeoutMs: 2000,
          totalTimeoutMs: 10_000,
          now: () => pair.clock.now(),
        });
        assert.equal(outcome.kind, 'parsed');
        return Promise.all([
          transaction(node.ctx, (tx) =>
            applyOutcome(tx, target, outcome, pair.clock.now(), seenAt),
          ),
          alongside(),
        ]);
      };
      /** Node `node` takes the document the origin serves as a hub's push. */
      const push = (node: Node, body: string) =>
        receivePush(
          node.ctx,
          { read, timeoutMs: 10_000, logger: silentLogger },
          { feedId, body: new Uint8Array(Buffer.from(body)), contentType: 'application/rss+xml' },
        );
      await poll(pair.a, async () => undefined); // the baseline
      for (let round = 2; round <= ROUNDS + 1; round++) {
        pair.clock.advance(3600_000);
        const doc = rss(items(round));
        origin.set(path, { body: doc });
        // The nodes swap roles each round.
        const [poller, pusher] = round % 2 === 0 ? [pair.a, pair.b] : [pair.b, pair.a];
        const [polled, pushed] = await poll(poller, () => push(pusher, doc));
        assert.equal(
          polled.newEntries + (pushed.kind === 'stored' ? pushed.newEntries : 0),
          1,
          `round ${round}: the new entry is new to one of the two`,
        );
      }
      const events = await pair.a.ctx.db.all<{
        subscription_id: string;
        sequence: number;
        body: string;
      }>(
        `SELECT e.subscription_id, e.sequence, b.body FROM events e JOIN event_bodies b ON b.event_id = e.id
          WHERE e.subscription_id IN (?, ?, ?) ORDER BY e.subscription_id, e.sequence`,
        subs,
      );
      for (const sub of subs) {
        const mine = events.filter((e) => e.subscription_id === sub);
        const guids = mine.flatMap((e) =>
          (JSON.parse(e.body) as { data: { entries: { guid: string }[] } }).data.entries.map(
            (x) => x.guid,
          ),
        );
        assert.deepEqual(
          guids.sort(),
          Array.from({ length: ROUNDS }, (_, i) => `g${i + 2}`).sort(),
          `subscription ${sub}: each new entry once`,
        );
        assert.deepEqual(
          mine.map((e) => e.sequence),
          Array.from({ length: mine.length }, (_, i) => i + 1),
          `subscription ${sub}: sequences 1..k`,
        );
      }
      const feed = await pair.a.ctx.db.get<{ entry_count: number; keys: number }>(
        'SELECT entry_count, (SELECT count(*) FROM entries WHERE feed_id = @id) AS keys FROM feeds WHERE id = @id',
        { id: feedId },
      );
      assert.deepEqual(
        { ...feed },
        { entry_count: ROUNDS + 1, keys: ROUNDS + 1 },
        'the feed counts each entry once',
      );
    } finally {
      await agent.close();
      await pair.close();
    }
  });

  it('lets two applications subscribe to the same new feed URL at once, one through each node: both 201, one feed row', async () => {
    const ROUNDS = 20;
    const pair = await twoNodes();
    try {
      const callers: { node: Node; key: string; endpoint: string }[] = [];
      for (const node of pair.nodes) {
        const { key } = await pair.key();
        const endpoint = (
          await node.call('POST', '/v1/endpoints', key, {
            title: 'E',
            url: 'https://hooks.example.com/',
          })
        ).body.id as string;
        callers.push({ node, key, endpoint });
      }
      for (let round = 0; round < ROUNDS; round++) {
        const url = `https://feeds.example.com/shared/${round}.xml`;
        const answers = await Promise.all(
          callers.map((c) =>
            c.node.call('POST', '/v1/subscriptions', c.key, { endpoint: c.endpoint, url }),
          ),
        );
        assert.deepEqual(
          answers.map((a) => a.status),
          [201, 201],
          `round ${round}: ${unexpected(answers, [201])}`,
        );
        assert.equal(answers[0]!.body.feed, answers[1]!.body.feed, `round ${round}: one feed`);
        const rows = await pair.a.ctx.db.value<number>('SELECT count(*) FROM feeds WHERE url = ?', [
          url,
        ]);
        assert.equal(rows, 1, `round ${round}: feed rows`);
      }
    } finally {
      await pair.close();
    }
  });

  it('queues each backfilled entry once when both nodes take the backfill steps at once', async () => {
    const ENTRIES = 30;
    const SUBSCRIPTIONS = 4;
    const pair = await twoNodes();
    const agent = createGuardedAgent({ allowPrivate: true });
    try {
      const path = '/backfill-race.xml';
      origin.set(path, {
        body: rss(Array.from({ length: ENTRIES }, (_, i) => ({ guid: `b${ENTRIES - i}` }))),
      });
      const { key } = await pair.key();
      const subscribe = async (backfill: number) => {
        const endpoint = (
          await pair.a.call('POST', '/v1/endpoints', key, {
            title: 'E',
            url: 'https://hooks.example.com/',
          })
        ).body.id as string;
        const made = await pair.a.call('POST', '/v1/subscriptions', key, {
          endpoint,
          url: origin.url + path,
          ...(backfill > 0 ? { backfill } : {}),
        });
        assert.equal(made.status, 201, made.text);
        return made.body as { id: string; feed: string };
      };
      // The baseline puts the feed's entries in its history, which the backfills then take from.
      const first = await subscribe(0);
      await pollOn(pair.a, pair.clock, agent, first.feed);
      const subs: string[] = [];
      for (let i = 0; i < SUBSCRIPTIONS; i++) subs.push((await subscribe(ENTRIES)).id);
      let rounds = 0;
      for (; rounds < 20; rounds++) {
        const steps = await Promise.all(pair.nodes.map((n) => queueBackfillChunk(n.ctx, '')));
        if (steps.every((s) => s === undefined)) break;
      }
      assert.ok(rounds < 20, 'the backfills end');
      for (const sub of subs) {
        const bodies = await pair.a.ctx.db.column<string>(
          `SELECT b.body FROM events e JOIN event_bodies b ON b.event_id = e.id
            WHERE e.subscription_id = ? ORDER BY e.sequence`,
          [sub],
        );
        const guids = bodies.flatMap((body) =>
          (JSON.parse(body) as { data: { entries: { guid: string }[] } }).data.entries.map(
            (x) => x.guid,
          ),
        );
        assert.deepEqual(
          [...guids].sort(),
          Array.from({ length: ENTRIES }, (_, i) => `b${i + 1}`).sort(),
          `subscription ${sub}: each entry once`,
        );
      }
    } finally {
      await agent.close();
      await pair.close();
    }
  });

  it('fetches a feed once per due time: a claim that read its window before another node recorded the feed leases nothing', async () => {
    const pair = await twoNodes();
    try {
      const { key } = await pair.key();
      const endpoint = (
        await pair.a.call('POST', '/v1/endpoints', key, {
          title: 'E',
          url: 'https://hooks.example.com/',
        })
      ).body.id as string;
      const made = await pair.a.call('POST', '/v1/subscriptions', key, {
        endpoint,
        url: `${origin.url}/window.xml`,
      });
      const feedId = made.body.feed as string;
      const now = pair.clock.now();
      let recorded: () => void = () => {};
      const recordedByB = new Promise<void>((resolve) => (recorded = resolve));
      const claimA = pair.a.ctx.store.write(async (db) => {
        const window = await dueFeedWindow(db, now, 10);
        assert.deepEqual(
          window.map((f) => f.id),
          [feedId],
        );
        await recordedByB; // node b claims, polls and records the feed meanwhile
        return leaseDueFeeds(db, [feedId], now, 60_000);
      });
      const [claimedByB] = await pair.b.ctx.store.write((db) =>
        leaseDueFeeds(db, [feedId], now, 60_000),
      );
      assert.equal(claimedByB?.id, feedId);
      await pair.b.ctx.store.write(async (db) => {
        await db.run('UPDATE feeds SET next_poll_at = ? WHERE id = ?', [
          new Date(now.getTime() + 900_000).toISOString(),
          feedId,
        ]);
        await endLease(db, feedId);
      });
      recorded();
      assert.deepEqual(await claimA, [], 'polled already: not due any more');
    } finally {
      await pair.close();
    }
  });

  it('allocates sequences from both nodes at once on one subscription as disjoint ranges without gaps', async () => {
    const ROUNDS = 20;
    const PER_NODE = 4;
    const pair = await twoNodes();
    try {
      const { key } = await pair.key();
      const endpoint = (
        await pair.a.call('POST', '/v1/endpoints', key, {
          title: 'E',
          url: 'https://hooks.example.com/',
        })
      ).body.id as string;
      const sub = (
        await pair.a.call('POST', '/v1/subscriptions', key, {
          endpoint,
          url: 'https://feeds.example.com/sequences.xml',
        })
      ).body.id as string;
      const ranges: [number, number][] = [];
      let total = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const asked = Array.from({ length: 2 * PER_NODE }, (_, i) => 1 + ((round + i) % 3));
        const firsts = await Promise.all(
          asked.map((count, i) =>
            pair.nodes[i % 2]!.ctx.store.write((db) => allocateSequences(db, sub, count)),
          ),
        );
        firsts.forEach((first, i) => ranges.push([first, first + asked[i]! - 1]));
        total += asked.reduce((s, n) => s + n, 0);
      }
      const numbers = ranges.flatMap(([first, last]) =>
        Array.from({ length: last - first + 1 }, (_, i) => first + i),
      );
      assert.deepEqual(
        numbers.sort((x, y) => x - y),
        Array.from({ length: total }, (_, i) => i + 1),
        'every number from 1 to the total, each once',
      );
    } finally {
      await pair.close();
    }
  });

  it('stores a NUL character in a receiver’s reply or a feed’s title as U+FFFD instead of failing the transaction', async () => {
    const pair = await twoNodes();
    const replying = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\0done'));
    });
    await new Promise<void>((resolve) => replying.listen(0, '127.0.0.1', resolve));
    const agent = createGuardedAgent({ allowPrivate: true });
    try {
      const { key } = await pair.key();
      const hook = `http://127.0.0.1:${(replying.address() as AddressInfo).port}/hook`;
      const endpoint = (await pair.a.call('POST', '/v1/endpoints', key, { title: 'E', url: hook }))
        .body.id as string;
      // The receiver's reply, through a test event and through the deliverer.
      const tested = await pair.b.call('POST', `/v1/endpoints/${endpoint}/test`, key);
      assert.equal(tested.status, 200, tested.text);
      assert.equal(tested.body.delivered, true);
      const json = (items: string[]) =>
        JSON.stringify({
          version: 'https://jsonfeed.org/version/1.1',
          title: 'Zero\u0000Title',
          items: items.map((id) => ({ id, title: `Item\u0000${id}`, content_text: 'text' })),
        });
      const path = '/nul.json';
      origin.set(path, { body: json(['1']), contentType: 'application/feed+json' });
      const created = await pair.a.call('POST', '/v1/subscriptions', key, {
        endpoint,
        url: origin.url + path,
      });
      assert.equal(created.status, 201, created.text);
      const feedId = created.body.feed as string;
      const poll = () => pollOn(pair.a, pair.clock, agent, feedId);
      await poll();
      pair.clock.advance(3600_000);
      origin.set(path, { body: json(['2', '1']), contentType: 'application/feed+json' });
      assert.equal((await poll()).events, 1);
      const deliverer = createDelivererDeps(pair.b.ctx, {
        agent,
        logger: silentLogger,
        telemetry: noTelemetry,
        userAgent: 'feedsub-test',
      });
      assert.equal((await deliverTick(pair.b.ctx, deliverer)).summary.delivered, 1);
      const replies = await pair.a.ctx.db.column<string>(
        'SELECT response_body FROM attempts ORDER BY id',
      );
      assert.deepEqual(replies, ['ok\uFFFDdone', 'ok\uFFFDdone']);
      const title = await pair.a.ctx.db.value<string>('SELECT title FROM feeds WHERE id = ?', [
        feedId,
      ]);
      assert.equal(title, 'Zero\uFFFDTitle');
      // An entry's text, stored as JSON (the history, the event's body), never escapes a NUL: PostgreSQL's json
      // operators refuse \u0000, so the parse reads it as U+FFFD.
      const body = await pair.a.ctx.db.value<string>(
        'SELECT b.body FROM events e JOIN event_bodies b ON b.event_id = e.id WHERE e.subscription_id = ?',
        [created.body.id],
      );
      const payload = JSON.parse(body!) as {
        data: { feed: { title: string }; entries: { title: string }[] };
      };
      assert.deepEqual(
        [payload.data.feed.title, payload.data.entries.map((e) => e.title)],
        ['Zero\uFFFDTitle', ['Item\uFFFD2']],
      );
    } finally {
      await agent.close();
      await new Promise<void>((resolve) => {
        replying.closeAllConnections();
        replying.close(() => resolve());
      });
      await pair.close();
    }
  });
});

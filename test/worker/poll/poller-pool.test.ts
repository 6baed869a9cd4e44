// The poller on the work pool: per-host caps counted by address as well as by name, so several names of one server
// share one cap; every feed is polled once its turn comes.
import assert from 'node:assert/strict';
import { lookup } from 'node:dns/promises';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import type { Dispatcher } from 'undici';
import { manualClock } from '../../../src/clock.ts';
import { readDocument, type DocumentRequest } from '../../../src/feed/parse/read-document.ts';
import { silentLogger } from '../../../src/log.ts';
import { createGuardedAgent } from '../../../src/net/guard.ts';
import { createResolver, type Resolver } from '../../../src/net/resolver.ts';
import { noTelemetry } from '../../../src/telemetry.ts';
import {
  createPollerDeps,
  IDLE_MS,
  MIN_WAKE_MS,
  pollFill,
  type PollerDeps,
} from '../../../src/worker/poll/poller.ts';
import { until } from '../../support/deadline.ts';
import { rss } from '../../support/servers.ts';
import { makeWorld, type World } from '../../support/world.ts';

/** A feed origin on 127.0.0.1 that holds every request until released, counting how many it holds at once. */
async function holdingOrigin() {
  const held: ServerResponse[] = [];
  const state = { served: 0, max: 0 };
  const server = createServer((req, res) => {
    held.push(res);
    state.max = Math.max(state.max, held.length);
    req.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    state,
    held: () => held.length,
    release() {
      for (const res of held.splice(0)) {
        state.served += 1;
        res.writeHead(200, { 'content-type': 'application/rss+xml' }).end(rss([{ guid: 'g1' }]));
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The daemon's poller over `w`, fetching through `agent` (reads inline). */
function pollerDeps(
  w: World,
  resolver: Resolver,
  agent: Dispatcher,
  idle?: () => void,
): PollerDeps {
  const deps = {
    refresh: {
      agent,
      read: async (doc: DocumentRequest) => readDocument(doc),
      userAgent: 'feedsub-test',
      maxBodyBytes: 1 << 20,
      connectTimeoutMs: 2000,
      totalTimeoutMs: 10_000,
    },
    resolver,
    logger: silentLogger,
    telemetry: noTelemetry,
  };
  return createPollerDeps(w.ctx, deps, idle);
}

describe('poller on the work pool', () => {
  it('counts several names of one server against one per-host cap', async () => {
    const w = makeWorld({ poll: { concurrency: 8, per_host_concurrency: 2 } });
    const origin = await holdingOrigin();
    // Seven made-up names of 127.0.0.1, plus its own spellings: the address is what they share.
    const resolver = createResolver({
      timeoutMs: 2000,
      lookup: async (host) =>
        host.endsWith('.feeds.test')
          ? ['127.0.0.1']
          : (await lookup(host, { all: true })).map((a) => a.address),
    });
    const agent = createGuardedAgent({ allowPrivate: true, resolver });
    // The pool's nudges fill it again, until the test stops it; the last fill ends before the world closes.
    let stopped = false;
    let filling: Promise<unknown> = Promise.resolve();
    const deps: PollerDeps = pollerDeps(w, resolver, agent, () =>
      setImmediate(() => {
        if (!stopped) filling = Promise.all([filling, pollFill(w.ctx, deps)]);
      }),
    );
    try {
      const { key } = await w.key();
      const ep = await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'E', url: 'https://hooks.example/' },
      });
      const hosts = [
        ...['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((n) => `${n}.feeds.test`),
        '127.0.0.1',
        'localhost',
      ];
      for (const host of hosts) {
        const res = await w.call('POST', '/v1/subscriptions', {
          key,
          body: { endpoint: ep.body.id, url: `http://${host}:${origin.port}/feed.xml` },
        });
        assert.equal(res.status, 201, res.text);
      }
      deps.pool.start();
      await pollFill(w.ctx, deps);
      await until(() => origin.held() === 2, 3000, 'two fetches held');
      await new Promise((r) => setTimeout(r, 300)); // a third would have arrived by now
      assert.equal(origin.held(), 2, 'nine names of one address, two fetches at a time');
      await until(
        () => {
          origin.release();
          return origin.state.served === hosts.length;
        },
        10_000,
        'every feed polled in turn',
        50,
      );
      assert.equal(origin.state.max, 2);
    } finally {
      stopped = true;
      deps.pool.stop();
      origin.release();
      await deps.pool.drain(5000);
      await filling;
      await agent.close();
      await origin.close();
      await w.close();
    }
  });

  /** Runs `check` on the daemon's poller over a new world, its pool started, and stops it all after. */
  async function withPoller(check: (w: World, deps: PollerDeps) => Promise<void>): Promise<void> {
    const w = makeWorld();
    const resolver = createResolver({ timeoutMs: 2000 });
    const agent = createGuardedAgent({ allowPrivate: true, resolver });
    const deps = pollerDeps(w, resolver, agent);
    try {
      deps.pool.start();
      await check(w, deps);
    } finally {
      deps.pool.stop();
      await deps.pool.drain(5000);
      await agent.close();
      await w.close();
    }
  }

  /** Subscribes to a feed (on a port nothing listens on) and sets it due at `dueMs`. */
  async function feedDueAt(w: World, dueMs: number): Promise<void> {
    const { key } = await w.key();
    const ep = await w.call('POST', '/v1/endpoints', {
      key,
      body: { title: 'E', url: 'https://hooks.example/' },
    });
    const sub = await w.call('POST', '/v1/subscriptions', {
      key,
      body: { endpoint: ep.body.id, url: 'http://127.0.0.1:9/feed.xml' },
    });
    await w.ctx.db.run('UPDATE feeds SET next_poll_at = ? WHERE id = ?', [
      new Date(dueMs).toISOString(),
      sub.body.feed,
    ]);
  }

  it('wakes at once for a feed that falls due between its claim and the look at when to wake', () =>
    withPoller(async (w, deps) => {
      const claimAt = w.clock.now().getTime();
      await feedDueAt(w, claimAt + 1);
      // The claim (on the world's clock) sees the feed a millisecond away; the look at when to wake comes a millisecond
      // later, as when the loop's timer fires a millisecond before the clock reaches the time it was set for.
      const later = { ...w.ctx, clock: manualClock(new Date(claimAt + 1)) };
      const delay = await pollFill(later, deps);
      assert.ok(delay <= MIN_WAKE_MS, `wakes in ${delay} ms, not after an idle minute`);
    }));

  it('sleeps an idle minute when no feed is due later, not a few milliseconds', () =>
    withPoller(async (w, deps) => {
      assert.equal(await pollFill(w.ctx, deps), IDLE_MS);
    }));

  it('sleeps until the next feed falls due, however soon, not a whole second', () =>
    withPoller(async (w, deps) => {
      await feedDueAt(w, w.clock.now().getTime() + 300);
      // It slept at least a second (polls up to a second late: p50 5.7 s for a 5 s interval in make bench).
      assert.equal(await pollFill(w.ctx, deps), 300);
    }));
});

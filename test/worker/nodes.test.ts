// The node heartbeat (src/worker/nodes.ts) and the roles one node at a time holds (src/store/nodes.ts): nodes on one
// database see each other, a node that stops beating drops out, caps split among the live ones add up exactly, and the
// maintenance role is held by one node until it lapses or its holder leaves.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { manualClock } from '../../src/clock.ts';
import { soloNode, type Ctx } from '../../src/context.ts';
import { silentLogger } from '../../src/log.ts';
import { leaseFeeds } from '../../src/store/feeds-poll.ts';
import { holdRole } from '../../src/store/nodes.ts';
import type { NodeRow } from '../../src/store/nodes.ts';
import { createHeartbeat, shareOf } from '../../src/worker/nodes.ts';
import { makeWorld } from '../support/world.ts';

/** Live nodes with these ids, oldest first. */
const nodes = (...ids: string[]): NodeRow[] =>
  ids.map((id) => ({
    id,
    name: id,
    version: 'test',
    started_at: '',
    seen_at: '',
    polls: 0,
    deliveries: 0,
  }));

describe('nodes', () => {
  it('splits a cap among the live nodes so that the parts add up to it, the older nodes taking the remainder', () => {
    const live = nodes('a', 'b', 'c');
    for (const cap of [0, 1, 2, 3, 4, 7, 100]) {
      const parts = live.map((n) => shareOf(cap, live, n.id));
      assert.equal(
        parts.reduce((a, b) => a + b, 0),
        cap,
        `cap ${cap}: ${parts}`,
      );
      assert.ok(Math.max(...parts) - Math.min(...parts) <= 1, `cap ${cap}: ${parts}`);
      assert.deepEqual(
        [...parts].sort((x, y) => y - x),
        parts,
        'older nodes first',
      );
    }
    assert.equal(shareOf(5, nodes('a'), 'a'), 5, 'alone, the whole cap');
    assert.equal(shareOf(5, live, 'unseen'), 5, 'before its first heartbeat read the others');
    assert.equal(shareOf(Infinity, live, 'b'), Infinity);
  });

  it('registers each node with its heartbeat, lists the live ones oldest first and forgets one that leaves', async () => {
    const w = makeWorld();
    const a: Ctx = { ...w.ctx, node: soloNode() };
    const b: Ctx = { ...w.ctx, node: soloNode() };
    const holds = { polls: 2, deliveries: 3 };
    const beatA = createHeartbeat(a, { name: 'node-a', holds: () => holds, logger: silentLogger });
    w.clock.advance(1000);
    const beatB = createHeartbeat(b, {
      name: 'node-b',
      holds: () => ({ polls: 0, deliveries: 0 }),
      logger: silentLogger,
    });
    try {
      await beatA.beat();
      await beatB.beat();
      await beatA.beat();
      assert.deepEqual(
        beatA.live().map((n) => [n.name, Number(n.polls), Number(n.deliveries)]),
        [
          ['node-a', 2, 3],
          ['node-b', 0, 0],
        ],
      );
      assert.deepEqual([beatA.node.share(3), beatB.node.share(3)], [2, 1]);
      await beatB.leave();
      await beatA.beat();
      assert.deepEqual(
        beatA.live().map((n) => n.name),
        ['node-a'],
      );
      assert.equal(beatA.node.share(3), 3, 'the cap is wholly its own again');
    } finally {
      await w.close();
    }
  });

  it('drops a node unseen for three heartbeats from the live ones', async () => {
    const w = makeWorld();
    const a: Ctx = { ...w.ctx, node: soloNode() };
    const silent: Ctx = { ...w.ctx, node: soloNode(), clock: manualClock(w.clock.now()) };
    const holds = () => ({ polls: 0, deliveries: 0 });
    const beatA = createHeartbeat(a, { name: 'a', holds, logger: silentLogger });
    const beatSilent = createHeartbeat(silent, { name: 'silent', holds, logger: silentLogger });
    try {
      const timeoutMs = w.ctx.config.cluster.node_timeout_seconds * 1000;
      await beatSilent.beat();
      w.clock.advance(timeoutMs - 1);
      await beatA.beat();
      assert.deepEqual(
        beatA
          .live()
          .map((n) => n.name)
          .sort(),
        ['a', 'silent'],
      );
      w.clock.advance(2);
      await beatA.beat();
      assert.deepEqual(
        beatA.live().map((n) => n.name),
        ['a'],
      );
    } finally {
      await w.close();
    }
  });

  it("renews the leases of a node's work at each heartbeat, so that they lapse a node timeout after its last one", async () => {
    const w = makeWorld();
    const a: Ctx = { ...w.ctx, node: soloNode() };
    const beatA = createHeartbeat(a, {
      name: 'a',
      holds: () => ({ polls: 1, deliveries: 0 }),
      logger: silentLogger,
    });
    try {
      const timeoutMs = w.ctx.config.cluster.node_timeout_seconds * 1000;
      assert.equal(beatA.node.leaseMs, timeoutMs);
      const feed = await w.ctx.store.write(async (db) => {
        const id = 'feed-1';
        await db.run(
          `INSERT INTO feeds (id, url, fetch_url, next_poll_at, created_at, updated_at)
           VALUES (@id, @url, @url, @t, @t, @t)`,
          { id, url: 'https://feeds.example.com/a.xml', t: w.clock.now().toISOString() },
        );
        return id;
      });
      const lease = (ctx: Ctx) =>
        ctx.store.write((db) =>
          leaseFeeds(db, [feed], ctx.clock.now(), ctx.node.leaseMs ?? 60_000, ctx.node.id),
        );
      assert.equal((await lease({ ...a, node: beatA.node })).length, 1);
      const other: Ctx = { ...w.ctx, node: soloNode() };
      for (let i = 0; i < 4; i++) {
        w.clock.advance(timeoutMs - 1000);
        await beatA.beat();
        assert.equal((await lease(other)).length, 0, `beat ${i}: still a's`);
      }
      w.clock.advance(timeoutMs + 1);
      await beatA.beat();
      assert.equal(
        (await lease(other)).length,
        1,
        'a lease that lapsed between two beats is not renewed: another node takes it',
      );
    } finally {
      await w.close();
    }
  });

  it('gives a role to one node at a time, handing it over once it lapses', async () => {
    const w = makeWorld();
    try {
      const t = (s: number) => new Date(w.clock.now().getTime() + s * 1000);
      const hold = (node: string, at: number, until: number) =>
        w.ctx.store.write((db) => holdRole(db, 'maintenance', node, t(at), t(until)));
      // Asked at once, one of the two gets it: on PostgreSQL either transaction may reach the row first.
      const got = await Promise.all([hold('a', 0, 60), hold('b', 0, 60)]);
      assert.equal(got.filter(Boolean).length, 1, `exactly one holds it: ${JSON.stringify(got)}`);
      const [holder, other] = got[0] ? ['a', 'b'] : ['b', 'a'];
      assert.equal(await hold(holder, 30, 90), true, 'its holder renews it');
      assert.equal(await hold(other, 89, 150), false, 'not before it lapses');
      assert.equal(await hold(other, 90, 150), true, 'lapsed: the next to ask takes it');
      assert.equal(await hold(holder, 91, 151), false);
    } finally {
      await w.close();
    }
  });
});

// poll --once (runPollOnce): every feed in bounded chunks, deliveries until nothing due is left, and a summary that
// says what is still waiting (a busy database waited out: app-poll-once-busy.test.ts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runPollOnce } from '../src/app.ts';
import { silentLogger } from '../src/log.ts';
import { within } from './support/deadline.ts';
import { setUp } from './support/poll-once.ts';
import { rss, startOrigin, startReceiver, type Origin, type Receiver } from './support/servers.ts';
import { makeWorld } from './support/world.ts';

describe('poll --once', () => {
  let origin: Origin;
  let receiver: Receiver;
  before(async () => {
    origin = await startOrigin();
    receiver = await startReceiver();
  });
  after(async () => {
    await origin.close();
    await receiver.close();
  });

  it('fetches every active feed once, more feeds than one chunk reads', async () => {
    // All 300 feeds are on one host: its cap at the pool's 16 slots runs them 16 at a time instead of 2.
    const w = makeWorld({ poll: { per_host_concurrency: 16 } }, new Date().toISOString());
    try {
      const s = await setUp(w, receiver);
      for (let i = 0; i < 300; i++) {
        origin.set(`/many/${i}.xml`, { body: rss([{ guid: `g${i}` }]) });
        await s.subscribe(`${origin.url}/many/${i}.xml`);
      }
      const seen = origin.requests.length;
      const out = await within(runPollOnce(w.ctx.config, silentLogger), 60_000, 'poll --once');
      assert.match(out, /^feeds fetched 300, not modified 0, failed 0, new entries 0,/);
      const paths = origin.requests.slice(seen).map((r) => r.path);
      assert.equal(paths.length, 300);
      assert.equal(new Set(paths).size, 300, 'each feed fetched once');
    } finally {
      await w.close();
    }
  });

  it("delivers a subscription's 1,001 queued events in order, past what 1,000 rounds sent", async () => {
    const w = makeWorld({}, new Date().toISOString());
    try {
      const s = await setUp(w, receiver);
      origin.set('/one.xml', { body: rss([{ guid: 'a' }]) });
      await s.queue(await s.subscribe(`${origin.url}/one.xml`), 1001);
      const seen = receiver.deliveries.length;
      const out = await within(runPollOnce(w.ctx.config, silentLogger), 120_000, 'poll --once');
      assert.match(out, /events delivered 1001, events failed 0, events waiting 0$/);
      const bodies = receiver.deliveries
        .slice(seen)
        .map((d) => (JSON.parse(d.body) as { n: number }).n);
      assert.deepEqual(
        bodies,
        Array.from({ length: 1001 }, (_, i) => i),
      );
    } finally {
      await w.close();
    }
  });

  it('attempts every due event when the first ones fail, and says how many still wait', async () => {
    const w = makeWorld({ delivery: { concurrency: 1 } }, new Date().toISOString());
    try {
      const s = await setUp(w, receiver);
      origin.set('/two-a.xml', { body: rss([{ guid: 'a' }]) });
      origin.set('/two-b.xml', { body: rss([{ guid: 'b' }]) });
      await s.queue(await s.subscribe(`${origin.url}/two-a.xml`), 1);
      await s.queue(await s.subscribe(`${origin.url}/two-b.xml`), 1);
      receiver.respond([500, 500]);
      const seen = receiver.deliveries.length;
      const out = await within(runPollOnce(w.ctx.config, silentLogger), 30_000, 'poll --once');
      receiver.respond([]);
      assert.equal(receiver.deliveries.length - seen, 2, 'both events tried, one at a time');
      assert.match(out, /events delivered 0, events failed 2, events waiting 2$/);
    } finally {
      await w.close();
    }
  });
});

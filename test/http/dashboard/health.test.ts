// Delivery and poll health on the dashboard through app.request(), fed by real polls of a local origin and real
// attempts at a local receiver: what events are about, test pings kept apart, the 24 h charts, their pruning.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { silentLogger } from '../../../src/log.ts';
import { createWorkers, type Workers } from '../../../src/worker/index.ts';
import { maintenanceTick } from '../../../src/worker/maintenance/maintenance.ts';
import { pollTick } from '../../../src/worker/poll/round.ts';
import {
  rss,
  startOrigin,
  startReceiver,
  type Origin,
  type Receiver,
} from '../../support/servers.ts';
import { makeWorld, type World } from '../../support/world.ts';
import { Client } from './client.ts';

let w: World;
let origin: Origin;
let receiver: Receiver;
let workers: Workers;
before(async () => {
  w = makeWorld({}, '2026-01-01T10:05:00.000Z');
  origin = await startOrigin();
  receiver = await startReceiver();
  workers = createWorkers(w.ctx, silentLogger);
});
after(async () => {
  await workers.close();
  await w.close();
  await origin.close();
  await receiver.close();
});

/** A signed-in application with an endpoint at the receiver, subscribed to the origin's `path`. */
async function subscribed(path: string) {
  const { key } = await w.key();
  const c = await new Client(w).signedIn(key);
  const endpoint = (
    await w.call('POST', '/v1/endpoints', { key, body: { title: 'R', url: `${receiver.url}/h` } })
  ).body.id as string;
  const sub = await w.call('POST', '/v1/subscriptions', {
    key,
    body: { endpoint, url: `${origin.url}${path}` },
  });
  assert.equal(sub.status, 201, sub.text);
  return { c, key, endpoint, subscription: sub.body.id as string };
}

const poll = () => pollTick(w.ctx, workers.pollerDeps, { all: true });
const svgRects = (html: string, chart: string, kind: string) => {
  const svg = new RegExp(`<figure class="chart" id="${chart}">[\\s\\S]*?</figure>`).exec(html);
  assert.ok(svg, `no chart ${chart}`);
  return svg[0].match(new RegExp(`<rect class="${kind}"`, 'g'))?.length ?? 0;
};
const caption = (html: string, chart: string) =>
  new RegExp(`id="${chart}"><figcaption>.*?<span class="muted">(.*?)</span>`).exec(html)?.[1];

describe('dashboard health', () => {
  it('names each event by its feed and entry titles, escaped, and keeps test pings apart', async () => {
    const { c, endpoint } = await subscribed('/about.xml');
    origin.set('/about.xml', { body: rss([{ guid: 'old' }], 'Fish &amp; &lt;Chips&gt;') });
    await poll(); // the baseline
    const items = ['Four', 'Three', 'Two', 'One'].map((t) => ({ guid: t, title: t }));
    origin.set('/about.xml', {
      body: rss([...items, { guid: 'old' }], 'Fish &amp; &lt;Chips&gt;'),
    });
    w.clock.advance(60_000);
    assert.equal((await poll()).summary.events, 1);
    receiver.respond([500]);
    const ping = await c.post(`/dashboard/endpoints/${endpoint}`, { _action: 'test' });
    const pingId = /event=([0-9a-f]{24})/.exec(ping.location ?? '')![1]!;

    const list = await c.get('/dashboard/events');
    assert.match(
      list.text,
      /<span class="about"><strong>Fish &amp; &lt;Chips&gt;<\/strong>: “One”, “Two”, “Three” and 1 more<\/span>/,
    );
    assert.doesNotMatch(list.text, new RegExp(pingId), 'a test ping is not a feed event');
    const tests = await c.get('/dashboard/events?kind=tests');
    assert.match(tests.text, new RegExp(`id="event-${pingId}"`));
    assert.match(tests.text, /<span class="about">Test ping<\/span>/);
    assert.doesNotMatch(tests.text, /Fish/);

    const overview = await c.get('/dashboard');
    assert.match(overview.text, /Nothing needs attention/, 'the dead test ping needs nothing done');
    await w.ctx.db.run("UPDATE events SET status = 'dead' WHERE subscription_id IS NOT NULL");
    const attention = await c.get('/dashboard');
    assert.match(attention.text, /Event <a href="\/dashboard\/events\?event=[0-9a-f]{24}#event-/);
    assert.match(attention.text, /Fish &amp; &lt;Chips&gt;<\/strong>: “One”/);
    assert.doesNotMatch(attention.text, /Test ping/);
  });

  it("charts an endpoint's attempts of the last 24 hours, one bar per hour, failures on top", async () => {
    const { c, key, endpoint } = await subscribed('/unused.xml');
    const here = `/dashboard/endpoints/${endpoint}`;
    receiver.respond([200, 500]);
    await c.post(here, { _action: 'test' });
    await c.post(here, { _action: 'test' });
    w.clock.advance(2 * 3600_000);
    receiver.respond([200]);
    await c.post(here, { _action: 'test' });
    const page = (await c.get(here)).text;
    assert.match(
      caption(page, 'deliveries-chart')!,
      /^3 attempts, 2 delivered \(66 %\), 1 failed;/,
    );
    assert.equal(svgRects(page, 'deliveries-chart', 'good'), 2, 'two hours with deliveries');
    assert.equal(svgRects(page, 'deliveries-chart', 'bad'), 1);
    assert.match(page, /<title>2026-01-0\d 10:00–11:00 UTC: 2 attempts, 1 delivered, 1 failed;/);
    assert.equal(page.match(/<g class="hour">/g)?.length, 24);

    w.clock.advance(23 * 3600_000); // the first hour is now 25 hours ago, the last 23
    const later = (await (await new Client(w).signedIn(key)).get(here)).text; // the session expired
    assert.match(
      caption(later, 'deliveries-chart')!,
      /^1 attempt, 1 delivered \(100 %\), 0 failed/,
    );
    assert.equal(svgRects(later, 'deliveries-chart', 'bad'), 0);
  });

  it("charts a feed's polls by hour, fetched, throttled and failed, and forgets them after a day", async () => {
    const { c, key, subscription } = await subscribed('/polls.xml');
    const here = `/dashboard/subscriptions/${subscription}`;
    origin.set('/polls.xml', { body: rss([{ guid: 'a' }]) });
    await poll();
    origin.set('/polls.xml', { status: 500, body: 'down' });
    w.clock.advance(60_000);
    await poll();
    origin.set('/polls.xml', { status: 429, headers: { 'retry-after': '60' }, body: 'wait' });
    w.clock.advance(60_000);
    await poll();
    origin.set('/polls.xml', { body: rss([{ guid: 'b' }, { guid: 'a' }]) });
    w.clock.advance(60_000);
    await poll();
    const page = (await c.get(here)).text;
    assert.equal(
      caption(page, 'polls-chart'),
      '4 polls, 2 fetched, 1 throttled, 1 failed; 1 new entry.',
    );
    for (const kind of ['good', 'warn', 'bad'])
      assert.equal(svgRects(page, 'polls-chart', kind), 1);
    const feeds = (await c.get('/dashboard/feeds')).text;
    assert.match(
      feeds,
      /<div class="sparkline" title="4 polls, 2 fetched, 1 throttled, 1 failed; 1 new entry\.">/,
      'the feeds page shows each feed the same way, small',
    );

    w.clock.advance(25 * 3600_000);
    const { summary } = await maintenanceTick(w.ctx, { logger: silentLogger });
    assert.ok(summary.pollHours >= 1, 'the hour is deleted');
    const rows = (await w.ctx.db.column('SELECT count(*) FROM feed_poll_hours'))[0];
    assert.equal(rows, 0);
    const again = await new Client(w).signedIn(key); // the session expired
    assert.equal(caption((await again.get(here)).text, 'polls-chart'), 'No polls.');
  });
});

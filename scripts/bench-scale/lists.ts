// make bench-scale, the list routes: the first application is given FILL_EVENTS events through the actions (in this
// process, before serve starts), then every list route is timed with each of its filters and a deep cursor, one
// request at a time; a row per route names its worst filter.
import { performance } from 'node:perf_hooks';
import { Agent } from 'undici';
import { queueSubscriptionEvents } from '../../src/actions/entry-events.ts';
import { systemClock } from '../../src/clock.ts';
import { loadConfig } from '../../src/config.ts';
import { quietCtx, transaction } from '../../src/context.ts';
import { newId } from '../../src/ids.ts';
import { FEED_STATUSES } from '../../src/store/feeds.ts';
import { listSubscriptions } from '../../src/store/subscriptions.ts';
import { quantile, send, type Call } from './api.ts';
import type { Run } from './cycles.ts';
import type { World } from './world.ts';

/** Events the first application holds before the cycles add theirs (the list p99 grew with them past 14,000 per application). */
export const FILL_EVENTS = 14_000;
/** Events queued to each subscription the fill uses. */
const PER_SUBSCRIPTION = 2;
/** Requests per filter: the p99 of 200 is the second slowest. */
const REQUESTS = 200;

/** Queues FILL_EVENTS events of one entry each (~1 KB, like a poll's) to the first application's newest
 *  subscriptions, PER_SUBSCRIPTION each, through the actions as a poll does; serve delivers them once it starts. */
export async function fillEvents(world: World): Promise<{ events: number; ms: number }> {
  const t = performance.now();
  const config = loadConfig({ file: world.configFile, env: {} });
  const ctx = quietCtx(await world.store.open(), systemClock, config);
  let events = 0;
  try {
    let after: string | undefined;
    while (events < FILL_EVENTS) {
      const page = await listSubscriptions(ctx.db, world.application, { limit: 500, after });
      events += await transaction(ctx, async (tx) => {
        let queued = 0;
        for (const sub of page.data) {
          const now = new Date();
          queued += await queueSubscriptionEvents(tx, sub, 'subscription.entries', now, (first) =>
            Array.from({ length: PER_SUBSCRIPTION }, (_, k) => fillEvent(sub.id, first + k, now)),
          );
        }
        return queued;
      });
      if (page.next === null) break;
      after = page.next;
    }
  } finally {
    await ctx.store.close();
  }
  return { events, ms: performance.now() - t };
}

function fillEvent(subscription: string, sequence: number, now: Date) {
  const id = newId(now);
  const entry = {
    id: `urn:fill:${id}`,
    title: `Fill entry ${sequence}`,
    url: `http://example.com/fill/${id}`,
    summary: 'Lorem ipsum dolor sit amet. '.repeat(25),
  };
  const body = JSON.stringify({
    type: 'subscription.entries',
    id,
    sequence,
    subscription: { id: subscription },
    entries: [entry],
  });
  return { id, sequence, body };
}

/** Ids to filter and page by, read from the database beside serve: an event far down the application's list (its
 *  500th oldest), the subscription with the most events, and a deep subscription and feed of the sample. */
function cursors(r: Run): Promise<{
  event: string;
  busy: string;
  sub: string;
  feed: string;
  count: number;
}> {
  const app = [r.world.application];
  return r.world.store.look(async (sql) => {
    const event = (await sql.value<string>(
      'SELECT id FROM events WHERE application_id = ? ORDER BY id LIMIT 1 OFFSET 500',
      app,
    ))!;
    const busy = (await sql.value<string>(
      'SELECT subscription_id FROM events WHERE application_id = ? AND subscription_id IS NOT NULL GROUP BY 1 ORDER BY count(*) DESC LIMIT 1',
      app,
    ))!;
    const count = (await sql.value<number>(
      'SELECT count(*) FROM events WHERE application_id = ?',
      app,
    ))!;
    const deep = r.world.sample[r.world.sample.length - 1]!;
    return { event, busy, sub: deep.id, feed: deep.feed, count };
  });
}

/** Every list route with each of its filters: route → [filter label, path]. */
async function routes(r: Run): Promise<{ routes: Map<string, [string, string][]>; count: number }> {
  const c = await cursors(r);
  const e = r.world.endpoints[0]!;
  const events: [string, string][] = [
    ['no filter', ''],
    ...(['pending', 'delivered', 'failed', 'dead'] as const).map((s): [string, string] => [
      `status=${s}`,
      `status=${s}`,
    ]),
    ['subscription=', `subscription=${c.busy}`],
    ['endpoint=', `endpoint=${e}`],
    ['deep cursor', `after=${c.event}`],
    ['status=delivered + deep cursor', `status=delivered&after=${c.event}`],
    ['status=failed + deep cursor', `status=failed&after=${c.event}`],
    ['endpoint= + status=failed', `endpoint=${e}&status=failed`],
  ];
  const feeds: [string, string][] = [
    ['no filter', ''],
    ...FEED_STATUSES.map((s): [string, string] => [`status=${s}`, `status=${s}`]),
    ['deep cursor', `after=${c.feed}`],
    ['status=active + deep cursor', `status=active&after=${c.feed}`],
  ];
  const path = (base: string, list: [string, string][]) =>
    list.map(([label, q]): [string, string] => [label, `${base}?limit=50${q ? `&${q}` : ''}`]);
  return {
    count: c.count,
    routes: new Map([
      ['/v1/events', path('/v1/events', events)],
      [
        '/v1/subscriptions',
        path('/v1/subscriptions', [
          ['no filter', ''],
          ['endpoint=', `endpoint=${e}`],
          ['deep cursor', `after=${c.sub}`],
          ['endpoint= + deep cursor', `endpoint=${e}&after=${c.sub}`],
        ]),
      ],
      ['/v1/feeds', path('/v1/feeds', feeds)],
      ['/v1/endpoints', path('/v1/endpoints', [['no filter', '']])],
      [
        '/v1/subscriptions/{id}/entries',
        path(`/v1/subscriptions/${c.busy}/entries`, [['no filter', '']]),
      ],
    ]),
  };
}

/** Times every filter of every list route, REQUESTS times each, one at a time; a row per route. */
export async function listRows(r: Run): Promise<void> {
  const { routes: all, count } = await routes(r);
  const agent = new Agent({ connections: 1 });
  try {
    for (const [route, filters] of all) {
      const p99s: [string, number, number][] = [];
      for (const [label, path] of filters) {
        const ms: number[] = [];
        let failed = 0;
        const call: Call = { kind: label, method: 'GET', path };
        for (let i = 0; i < REQUESTS; i++) {
          const t = performance.now();
          if ((await send(r.url, agent, r.world.key, call)) !== 200) failed++;
          ms.push(performance.now() - t);
        }
        p99s.push([label, quantile(ms, 0.99), failed]);
      }
      p99s.sort((a, b) => b[1] - a[1]);
      const [worst, ms] = p99s[0]!;
      const failed = p99s.reduce((n, x) => n + x[2], 0);
      r.row(
        `list p99 ${route}`,
        `${ms.toFixed(1)} ms`,
        `worst filter: ${worst}; ${p99s.map(([f, v]) => `${f} ${v.toFixed(1)}`).join(', ')}; ${REQUESTS} requests each, one at a time, limit 50, ${count.toLocaleString('en')} events in the application${failed ? `; ${failed} FAILED` : ''}; target ≤ 20 ms`,
      );
    }
  } finally {
    await agent.close();
  }
}

// make bench-scale, the API runs: real HTTP against the `serve` child with the first application's key — single gets
// (a subscription, a feed), deep cursor pages (subscriptions and feeds after an id far down the list), the newest
// events, and creates (a subscription of an existing feed to another endpoint) — timed one by one.
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import type { World } from './world.ts';

/** Requests in flight at once during a run. */
const CONCURRENCY = 4;

/** Latencies of one run, in ms, by kind of request. */
export type Latencies = {
  all: number[];
  byKind: Map<string, number[]>;
  failed: number;
  /** The kinds and statuses of the failed requests (`create 503`), with their counts. */
  statuses: Map<string, number>;
};

type Call = { kind: string; method: 'GET' | 'POST'; path: string; body?: string };

/** The requests of a run, in turn: `i` picks the sample entry, so a long run spreads over the sample. */
function callFor(world: World, i: number, created: Set<string>): Call {
  const s = world.sample[i % world.sample.length]!;
  const deep = world.sample[world.sample.length - 1 - (i % 50)]!; // among the oldest sampled: a deep cursor
  switch (i % 6) {
    case 0:
      return { kind: 'get subscription', method: 'GET', path: `/v1/subscriptions/${s.id}` };
    case 1:
      return { kind: 'get feed', method: 'GET', path: `/v1/feeds/${s.feed}` };
    case 2:
      return {
        kind: 'deep page',
        method: 'GET',
        path: `/v1/subscriptions?limit=50&after=${deep.id}`,
      };
    case 3:
      return { kind: 'deep page', method: 'GET', path: `/v1/feeds?limit=50&after=${deep.feed}` };
    case 4:
      return { kind: 'events page', method: 'GET', path: '/v1/events?limit=50' };
    default:
      return createCall(world, i, created);
  }
}

/** A subscription of a sampled feed to one of the application's endpoints that does not receive it yet. */
function createCall(world: World, i: number, created: Set<string>): Call {
  for (let tries = 0; tries < world.sample.length; tries++) {
    const s = world.sample[(i + tries * 13) % world.sample.length]!;
    for (const endpoint of world.endpoints) {
      const pair = `${endpoint} ${s.n}`;
      if (created.has(pair)) continue;
      created.add(pair); // the world's own subscriptions answer 409, which is timed as well
      return {
        kind: 'create',
        method: 'POST',
        path: '/v1/subscriptions',
        body: JSON.stringify({ endpoint, url: `${world.origin}/feeds/${s.n}.xml` }),
      };
    }
  }
  return {
    kind: 'get subscription',
    method: 'GET',
    path: `/v1/subscriptions/${world.sample[0]!.id}`,
  };
}

/** Runs requests, CONCURRENCY at a time, until `until` settles, `max` were made or `maxMs` passed (whichever first);
 *  `min` requests are made even when `until` settles earlier. */
export async function apiRun(
  url: string,
  world: World,
  opts: { until?: Promise<unknown>; min?: number; max: number; maxMs: number },
  created: Set<string>,
): Promise<Latencies> {
  const agent = new Agent({ connections: CONCURRENCY });
  const out: Latencies = { all: [], byKind: new Map(), failed: 0, statuses: new Map() };
  let done = false;
  void opts.until?.finally(() => (done = true));
  const deadline = performance.now() + opts.maxMs;
  let next = 0;
  const more = () =>
    next < opts.max && performance.now() < deadline && (!done || next < (opts.min ?? 0));
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (more()) {
        const call = callFor(world, next++, created);
        const t = performance.now();
        const status = await send(url, agent, world.key, call);
        const ms = performance.now() - t;
        if (typeof status === 'string' || status >= 500 || status === 429 || status === 401) {
          out.failed++;
          const what = `${call.kind} ${status}`;
          out.statuses.set(what, (out.statuses.get(what) ?? 0) + 1);
        }
        out.all.push(ms);
        const list = out.byKind.get(call.kind) ?? [];
        list.push(ms);
        out.byKind.set(call.kind, list);
      }
    }),
  );
  await agent.close();
  return out;
}

/** Sends one call; its status, or the network error's code (a reset connection is counted, not fatal). */
async function send(url: string, agent: Agent, key: string, call: Call): Promise<number | string> {
  try {
    const r = await request(`${url}${call.path}`, {
      method: call.method,
      dispatcher: agent,
      headers: { authorization: key, 'content-type': 'application/json' },
      ...(call.body ? { body: call.body } : {}),
    });
    await r.body.dump();
    return r.statusCode;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? 'error';
  }
}

/** The `q` quantile (0…1) of `values`. */
export function quantile(values: number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;
}

/** `p50 / p99 / max` of a run, and a note naming its count, failures and the slowest kind at p99. */
export function describe(l: Latencies): { value: string; note: string } {
  const f = (ms: number) => ms.toFixed(1);
  const kinds = [...l.byKind].map(([k, v]) => `${k} ${f(quantile(v, 0.99))}`).join(', ');
  return {
    value: `${f(quantile(l.all, 0.5))} / ${f(quantile(l.all, 0.99))} / ${f(Math.max(...l.all))} ms`,
    note: `p50 / p99 / max of ${l.all.length} requests${l.failed ? ` (${l.failed} failed: ${[...l.statuses].map(([s, n]) => `${n} × ${s}`).join(', ')})` : ''}, ${CONCURRENCY} at a time; p99 by kind: ${kinds}`,
  };
}

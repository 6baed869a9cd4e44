// make bench-scale, the API runs: real HTTP against the `serve` child with the first application's key, timed one by
// one. Reads: single gets (a subscription, a feed), deep cursor pages (subscriptions and feeds after an id far down the
// list), the newest events. Writes: creates (a subscription of an existing feed to another endpoint) and deletes (of a
// subscription a create made). A run is read-only, mixed (a quarter writes, like a client managing subscriptions), or
// creates only.
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import type { World } from './world.ts';

/** Requests in flight at once during a run. */
export const CONCURRENCY = 4;

/** Latencies of one run, in ms, by kind of request. */
export type Latencies = {
  all: number[];
  byKind: Map<string, number[]>;
  failed: number;
  /** The kinds and statuses of the failed requests (`create 503`), with their counts. */
  statuses: Map<string, number>;
  /** Wall time of the run. */
  ms: number;
};

/** What the runs of one bench created: the (endpoint, feed) pairs tried, and the ids of the subscriptions a delete may
 *  remove. */
export type Creations = { pairs: Set<string>; ids: { id: string; pair: string }[] };

export type Mix = 'read' | 'mixed' | 'create';

export type Call = {
  kind: string;
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  body?: string;
  /** A create's (endpoint, feed) pair, or a delete's: a deleted pair may be created again. */
  pair?: string;
};

/** The read requests, in turn: `i` picks the sample entry, so a long run spreads over the sample. */
function readCall(world: World, i: number): Call {
  const s = world.sample[i % world.sample.length]!;
  const deep = world.sample[world.sample.length - 1 - (i % 50)]!; // among the oldest sampled: a deep cursor
  switch (i % 5) {
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
    default:
      return { kind: 'events page', method: 'GET', path: '/v1/events?limit=50' };
  }
}

/** The `i`th request of a run of `mix`: mixed runs make one create and one delete in every eight requests. */
function callFor(world: World, i: number, mix: Mix, made: Creations): Call {
  if (mix === 'create') return createCall(world, i, made) ?? readCall(world, i);
  if (mix === 'read' || i % 8 < 6) return readCall(world, i);
  if (i % 8 === 6) return createCall(world, i, made) ?? readCall(world, i);
  const gone = made.ids.shift();
  if (gone === undefined) return readCall(world, i);
  return {
    kind: 'delete',
    method: 'DELETE',
    path: `/v1/subscriptions/${gone.id}`,
    pair: gone.pair,
  };
}

/** A subscription of a sampled feed to one of the application's endpoints that does not receive it yet; undefined once
 *  every pair of the sample was tried. */
function createCall(world: World, i: number, made: Creations): Call | undefined {
  for (let tries = 0; tries < world.sample.length; tries++) {
    const s = world.sample[(i + tries * 13) % world.sample.length]!;
    for (const endpoint of world.endpoints) {
      const pair = `${endpoint} ${s.n}`;
      if (made.pairs.has(pair)) continue;
      made.pairs.add(pair); // the world's own subscriptions answer 409, which is timed as well
      return {
        kind: 'create',
        method: 'POST',
        path: '/v1/subscriptions',
        body: JSON.stringify({ endpoint, url: `${world.origin}/feeds/${s.n}.xml` }),
        pair,
      };
    }
  }
  return undefined;
}

/** Runs requests of `mix`, CONCURRENCY at a time, until `until` settles, `max` were made or `maxMs` passed (whichever
 *  first); `min` requests are made even when `until` settles earlier. */
export async function apiRun(
  url: string,
  world: World,
  opts: { until?: Promise<unknown>; min?: number; max: number; maxMs: number; mix?: Mix },
  made: Creations,
): Promise<Latencies> {
  const agent = new Agent({ connections: CONCURRENCY });
  const out: Latencies = { all: [], byKind: new Map(), failed: 0, statuses: new Map(), ms: 0 };
  let done = false;
  void opts.until?.finally(() => (done = true));
  const started = performance.now();
  const deadline = started + opts.maxMs;
  let next = 0;
  const more = () =>
    next < opts.max && performance.now() < deadline && (!done || next < (opts.min ?? 0));
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (more()) {
        const call = callFor(world, next++, opts.mix ?? 'mixed', made);
        const t = performance.now();
        const status = await send(url, agent, world.key, call, made);
        note(out, call.kind, status, performance.now() - t);
      }
    }),
  );
  out.ms = performance.now() - started;
  await agent.close();
  return out;
}

/** Records one request's latency, and its status when it failed (a 5xx, 429 or 401, or a network error). */
export function note(out: Latencies, kind: string, status: number | string, ms: number): void {
  if (typeof status === 'string' || status >= 500 || status === 429 || status === 401) {
    out.failed++;
    const what = `${kind} ${status}`;
    out.statuses.set(what, (out.statuses.get(what) ?? 0) + 1);
  }
  out.all.push(ms);
  const list = out.byKind.get(kind) ?? [];
  list.push(ms);
  out.byKind.set(kind, list);
}

/** Sends one call; its status, or the network error's code (a reset connection is counted, not fatal). */
export async function send(
  url: string,
  agent: Agent,
  key: string,
  call: Call,
  made?: Creations,
): Promise<number | string> {
  let status: number | string;
  try {
    const r = await request(`${url}${call.path}`, {
      method: call.method,
      dispatcher: agent,
      headers: { authorization: key, 'content-type': 'application/json' },
      ...(call.body ? { body: call.body } : {}),
    });
    status = r.statusCode;
    if (call.kind === 'create' && status === 201 && made)
      made.ids.push({ id: ((await r.body.json()) as { id: string }).id, pair: call.pair! });
    else await r.body.dump();
  } catch (err) {
    status = (err as NodeJS.ErrnoException).code ?? 'error';
  }
  if (made) settle(call, status, made);
  return status;
}

/** Keeps the pairs a long run creates and deletes from running out: a deleted pair may be created again, a refused
 *  create (503 busy) is tried again later, a refused delete too. */
function settle(call: Call, status: number | string, made: Creations): void {
  if (call.kind === 'delete') {
    if (status === 204 || status === 404) made.pairs.delete(call.pair!);
    else made.ids.push({ id: call.path.slice(call.path.lastIndexOf('/') + 1), pair: call.pair! });
  } else if (call.kind === 'create' && status !== 201 && status !== 409) {
    made.pairs.delete(call.pair!);
  }
}

/** The `q` quantile (0…1) of `values`. */
export function quantile(values: number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;
}

/** Requests per second of a run. */
export function rate(l: Latencies): number {
  return l.all.length / (l.ms / 1000);
}

/** `p50 / p99 / max` of a run, and a note naming its count, failures and the slowest kind at p99. */
export function describe(l: Latencies): { value: string; note: string } {
  const f = (ms: number) => ms.toFixed(1);
  const kinds = [...l.byKind].map(([k, v]) => `${k} ${f(quantile(v, 0.99))}`).join(', ');
  const max = l.all.reduce((m, x) => Math.max(m, x), 0);
  return {
    value: `${f(quantile(l.all, 0.5))} / ${f(quantile(l.all, 0.99))} / ${f(max)} ms`,
    note: `p50 / p99 / max of ${l.all.length} requests (${failures(l)}), ${CONCURRENCY} at a time; p99 by kind: ${kinds}`,
  };
}

/** `no failures`, or `12 failed: 10 × create 503, 2 × get feed ECONNRESET`. */
export function failures(l: Latencies): string {
  if (l.failed === 0) return 'no failures';
  return `${l.failed} failed: ${[...l.statuses].map(([s, n]) => `${n} × ${s}`).join(', ')}`;
}

// make bench-scale, the sustained load: SCALE_LOAD_SECONDS (default 600) of the mixed API client against serve, bounded
// in count as well: its latencies, request and error counts, and serve's memory (peak resident set, V8 heap).
import { request } from 'undici';
import { apiRun, describe, failures, rate } from './api.ts';
import type { Run } from './cycles.ts';

const LOAD_SECONDS = Number(process.env.SCALE_LOAD_SECONDS ?? 600);
/** The run also ends after this many requests (a fast machine's ten minutes stay bounded in memory). */
const LOAD_MAX_REQUESTS = 3_000_000;
const MiB = (n: number) => `${n.toFixed(0)} MiB`;

/** The sustained mixed load and its rows. */
export async function sustainedLoad(r: Run): Promise<void> {
  if (!(LOAD_SECONDS > 0))
    throw new Error('bench-scale: SCALE_LOAD_SECONDS must be a positive number');
  const before = r.serve.rssMiB();
  const heapBefore = await heapOf(r.url);
  const l = await apiRun(
    r.url,
    r.world,
    { max: LOAD_MAX_REQUESTS, maxMs: LOAD_SECONDS * 1000, mix: 'mixed' },
    r.made,
  );
  const d = describe(l);
  const max = l.all.reduce((m, x) => Math.max(m, x), 0);
  r.row(
    `mixed load for ${(l.ms / 1000).toFixed(0)} s: latency`,
    d.value,
    `${d.note}; target max ≤ 100 ms (${max <= 100 ? 'met' : 'MISSED'})`,
  );
  r.row(
    '  requests and errors',
    `${l.all.length.toLocaleString('en')} / ${l.failed}`,
    `${rate(l).toFixed(0)} req/s; ${failures(l)}`,
  );
  r.row(
    '  serve peak RSS',
    MiB(r.serve.peakMiB()),
    `VmHWM of the whole run so far; RSS ${MiB(before)} before the load (${heapBefore}), ${MiB(r.serve.rssMiB())} after (${await heapOf(r.url)}); target ≤ 1 GB`,
  );
}

/** The V8 heap `serve` reports on /metrics (prom-client's default metrics): used of total, in MiB. */
export async function heapOf(url: string): Promise<string> {
  const r = await request(`${url}/metrics`);
  const text = await r.body.text();
  const metric = (name: string) =>
    Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) / 1024 / 1024;
  return `heap ${metric('nodejs_heap_size_used_bytes').toFixed(0)} of ${metric('nodejs_heap_size_total_bytes').toFixed(0)} MiB, external ${metric('nodejs_external_memory_bytes').toFixed(0)} MiB`;
}

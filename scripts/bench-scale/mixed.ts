// make bench-scale, mixed vs read-only API throughput at the same concurrency: a client that also creates and deletes
// subscriptions (a quarter of its requests) against one that only reads, with serve idle and during a `poll --once`.
import { apiRun, CONCURRENCY, describe, rate, type Latencies } from './api.ts';
import { cycle, type Cycle, type Run } from './cycles.ts';

/** How long each idle run lasts (requests are also bounded in count). */
const IDLE_MS = 20_000;
const IDLE_MAX = 200_000;

/** The idle runs (read-only, then mixed) and their ratio. */
export async function idleMixed(r: Run): Promise<void> {
  const read = await apiRun(r.url, r.world, { max: IDLE_MAX, maxMs: IDLE_MS, mix: 'read' }, r.made);
  const mixed = await apiRun(
    r.url,
    r.world,
    { max: IDLE_MAX, maxMs: IDLE_MS, mix: 'mixed' },
    r.made,
  );
  throughputRows(r, 'idle', read, mixed);
}

/** Two all-304 cycles, one with a read-only client and one with a mixed one, and their throughput ratio. */
export async function cyclesMixed(r: Run): Promise<[Cycle, Cycle]> {
  const read = await cycle(r, 'all-304 cycle, read-only API beside it', 'read');
  const mixed = await cycle(r, 'all-304 cycle, mixed API beside it', 'mixed');
  throughputRows(r, 'during poll --once', read.api, mixed.api);
  return [read, mixed];
}

function throughputRows(r: Run, when: string, read: Latencies, mixed: Latencies): void {
  for (const [label, l] of [
    ['read-only', read],
    ['mixed', mixed],
  ] as const) {
    const d = describe(l);
    r.row(
      `API throughput ${when}, ${label}`,
      `${rate(l).toFixed(0)} req/s`,
      d.value + '; ' + d.note,
    );
  }
  r.row(
    `API throughput ${when}, mixed vs read-only`,
    `${((rate(mixed) / rate(read)) * 100).toFixed(0)} %`,
    `${CONCURRENCY} requests in flight each; mixed = 6 reads, 1 create, 1 delete in 8; target ≥ 80 %`,
  );
}

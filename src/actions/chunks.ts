// Long jobs (a release of held entries, a subscription's backlog, retention) run as short transactions with a turn of
// the event loop between them, so HTTP requests and deliveries are served while they run.

/** Rows one transaction of a long job handles. A chunk of a release is the heaviest: 29 ms of work at the median and
 *  36 ms at p99 in make bench's 200,000-entry release on a 2-core machine, plus its commit (3 ms at the median, but
 *  70-170 ms at worst: stalls in writing the WAL, not in the chunk's work); make bench measures the longest wait. */
export const CHUNK_ROWS = 500;
/** Events one transaction deletes: each has a body of up to 256 KiB, whose pages SQLite reads to free them (1,000
 *  events of 200 KB took 100 ms; 100 take 10 ms). */
export const EVENT_CHUNK = 100;

/** Resolves after the event loop has run once more, pending I/O (requests, responses) included. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

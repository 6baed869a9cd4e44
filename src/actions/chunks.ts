// Long jobs (a release of held entries, a subscription's backlog, retention) run as short transactions with a turn of
// the event loop between them, so HTTP requests and deliveries are served while they run.

/** Rows one transaction of a long job handles: about 12 ms of work for a chunk of a release, the heaviest (make bench
 *  measures the longest wait it causes). */
export const CHUNK_ROWS = 500;
/** Events one transaction deletes: each has a body of up to 256 KiB, whose pages SQLite reads to free them (1,000
 *  events of 200 KB took 100 ms; 100 take 10 ms). */
export const EVENT_CHUNK = 100;

/** Resolves after the event loop has run once more, pending I/O (requests, responses) included. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

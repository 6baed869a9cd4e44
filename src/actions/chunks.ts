// Long jobs (a release of held entries, a subscription's backlog, retention) run as short transactions with a turn of
// the event loop between them, so HTTP requests and deliveries are served while they run.

/** Rows one transaction of a long job handles: about 12 ms of work for a chunk of a release, the heaviest (make bench
 *  measures the longest wait it causes). */
export const CHUNK_ROWS = 500;

/** Resolves after the event loop has run once more, pending I/O (requests, responses) included. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

// Long jobs (a release of held entries, a subscription's backlog, retention) run as short transactions with a turn of
// the event loop between them, so HTTP requests and deliveries are served while they run.

/** Rows one transaction of a long job handles: a few milliseconds of work (make bench measures the longest). */
export const CHUNK_ROWS = 500;

/** Resolves after the event loop has run once more, pending I/O (requests, responses) included. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

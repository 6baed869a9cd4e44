// Long jobs (a release of held entries, a subscription's backlog, retention) run as short transactions with a turn of
// the event loop between them, so HTTP requests and deliveries are served while they run.

/** Rows one transaction of a long job handles. A chunk of a release is the heaviest: about 30 ms of work on two cores,
 *  plus its commit, which a stall in writing the WAL can make far longer than the chunk's work. */
export const CHUNK_ROWS = 500;
/** Events one transaction deletes: each has a body of up to 256 KiB, whose pages SQLite reads to free them (about
 *  10 ms for 100 events of 200 KB). */
export const EVENT_CHUNK = 100;

/** Resolves after the event loop has run once more, pending I/O (requests, responses) included. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

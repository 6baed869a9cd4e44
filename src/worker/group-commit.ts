// Group commit: the writes queued in one turn of the event loop share one transaction (a commit costs more than the
// writes of one attempt), and that transaction may claim the next work for the slots those writes free.
import type { Db } from '../db/open.ts';

/** A write waiting for the next group commit; `release` frees the slot of the work that produced it. */
type Write = {
  fn: () => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  release: () => void;
};

/** The writes waiting for the next group commit: one queue per writer, shared by all its ticks. */
export type CommitQueue = Write[];

/** A claim made by the commit for the slots its writes free: `claim` runs inside the transaction and returns what to
 *  do once it is committed (start what it took); when the batch was rolled back instead, `failed` runs. */
export type CommitRefill = { claim: () => () => void; failed: () => void };

/** Runs `fn` in one write transaction with the other writes queued in the same turn of the event loop, and resolves
 *  with its value only after the commit. `release` runs just before that transaction: the work outside the database
 *  is over, so its slot is free for the claim. `refill`, asked at commit time, says what to claim (undefined: no
 *  claim). When a write throws, the batch is rolled back and each runs again in a transaction of its own, so only the
 *  one that throws rejects. */
export function groupCommit<T>(
  db: Db,
  queue: CommitQueue,
  fn: () => T,
  release: () => void,
  refill: () => CommitRefill | undefined,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    queue.push({ fn, resolve: resolve as (value: unknown) => void, reject, release });
    if (queue.length === 1) setImmediate(() => flush(db, queue, refill));
  });
}

function flush(db: Db, queue: CommitQueue, refillOf: () => CommitRefill | undefined): void {
  const batch = queue.splice(0);
  for (const w of batch) w.release(); // their work outside the database is over
  const refill = refillOf();
  let done: { values: unknown[]; afterCommit: (() => void) | undefined };
  try {
    done = db.transaction(() => ({
      values: batch.map((w) => w.fn()),
      afterCommit: refill?.claim(),
    }))();
  } catch {
    // One write threw (or the claim did) and the batch was rolled back: run each alone, so only the one that throws
    // fails; the slots are refilled on the next turn.
    for (const w of batch) {
      try {
        w.resolve(db.transaction(w.fn)());
      } catch (error) {
        w.reject(error);
      }
    }
    refill?.failed();
    return;
  }
  batch.forEach((w, i) => w.resolve(done.values[i]));
  done.afterCommit?.();
}

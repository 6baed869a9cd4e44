// The deliverer's attempts in flight, shared by all its ticks: their slots, their promises (drainDeliveries waits for
// them), the outcomes waiting for the group commit, and whether a refill is already queued.
import type { CommitQueue } from './group-commit.ts';
import { SlotCounter } from './slots.ts';

export type InFlight = {
  /** The concurrency slots in use, keyed by endpoint id. */
  readonly slots: SlotCounter;
  /** Slots in use in all (`slots.total`). */
  readonly total: number;
  /** Slots in use per endpoint id (`slots.byKey`). */
  readonly byEndpoint: ReadonlyMap<string, number>;
  running: Set<Promise<void>>;
  writes: CommitQueue;
  refillQueued: boolean;
};

/** No attempt in flight. */
export function createInFlight(): InFlight {
  const slots = new SlotCounter();
  return {
    slots,
    get total() {
      return slots.total;
    },
    get byEndpoint() {
      return slots.byKey;
    },
    running: new Set(),
    writes: [],
    refillQueued: false,
  };
}

/** Runs the async `work` in a slot of `key`, in `running` until it settles; never rejects. `work` may free the slot
 *  early with the release it is given (when its outcome is committed); else the slot is freed once it settles, and
 *  then `freed()` runs. A rejection of `work` goes to `failed`. */
export function track(
  inFlight: InFlight,
  key: string,
  work: (release: () => void) => Promise<void>,
  on: { failed: (err: unknown) => void; freed: () => void },
): Promise<void> {
  const release = inFlight.slots.take(key);
  // Assigned before the finally below runs: the body always suspends at its await first.
  let run!: Promise<void>;
  run = (async () => {
    try {
      await work(release);
    } catch (err) {
      on.failed(err);
    } finally {
      inFlight.running.delete(run);
      if (release()) on.freed(); // else the group commit that recorded the outcome freed and refilled the slot
    }
  })();
  inFlight.running.add(run);
  return run;
}

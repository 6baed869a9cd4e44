// The one loop primitive: a tick re-armed with chained setTimeout, nudge() to run it early, stop() that awaits the running tick.
import type { LogFields, Logger } from '../log.ts';

export type Loop = {
  start(): void;
  /** Runs the next tick as soon as the current one (if any) finishes, also during a failure backoff. */
  nudge(): void;
  /** Stops re-arming and resolves when the in-flight tick has finished (or after `timeoutMs`). Idempotent. */
  stop(timeoutMs?: number): Promise<void>;
  /** Runs one tick now (for one-shot commands and tests); waits for a running tick first. */
  runOnce(): Promise<number | void>;
};

/** How a loop retries after a failed tick: after `firstMs`, doubling on each failure in a row up to `maxMs`. */
export type Backoff = { firstMs: number; maxMs: number };

/** A tick that throws (a full disk, "database is locked") is tried again after 1 s, 2 s, 4 s … up to a minute, so a
 *  loop recovers within seconds of the cause going away, without spinning while it lasts. */
export const TICK_FAILURE_BACKOFF: Backoff = { firstMs: 1000, maxMs: 60_000 };

/** The delay before the next try after `failures` failed ticks in a row (1, 2, …). */
export function failureDelayMs(backoff: Backoff, failures: number): number {
  return Math.min(backoff.maxMs, backoff.firstMs * 2 ** Math.max(0, failures - 1));
}

/** `tick` returns the delay in ms until the next run (or void for `idleMs`); ticks never overlap. A throwing tick is
 *  retried on `backoff` (default TICK_FAILURE_BACKOFF): its error is logged when the message changes, not on every
 *  retry, and the first success after failures is logged once. */
export function createLoop(
  name: string,
  tick: () => Promise<number | void>,
  opts: { idleMs: number; logger: Logger; backoff?: Backoff },
): Loop {
  const failures = failureTracker(name, opts.logger, opts.backoff ?? TICK_FAILURE_BACKOFF);
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<Ran> | undefined;
  let nudged = false;
  let stopped = true;

  const arm = (ms: number) => {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(run, Math.max(0, ms));
  };
  const execute = () => runTick(tick, failures, opts.idleMs);
  const run = () => {
    if (running) {
      nudged = true;
      return;
    }
    nudged = false;
    running = execute();
    void running.then(({ delayMs }) => {
      running = undefined;
      arm(nudged ? 0 : delayMs);
    });
  };

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      arm(0);
    },
    nudge() {
      if (stopped) return;
      if (running) nudged = true;
      else arm(0);
    },
    async stop(timeoutMs = 10_000) {
      stopped = true;
      clearTimeout(timer);
      if (running) await settledOrLate(running, timeoutMs);
    },
    async runOnce() {
      while (running) await running;
      running = execute();
      try {
        return (await running).value;
      } finally {
        running = undefined;
      }
    },
  };
}

/** Runs one tick: its value, and the delay before the next (its own, `idleMs`, or the failure backoff). Never throws. */
async function runTick(
  tick: () => Promise<number | void>,
  failures: ReturnType<typeof failureTracker>,
  idleMs: number,
): Promise<Ran> {
  try {
    const value = await tick();
    failures.succeeded();
    return { value, delayMs: typeof value === 'number' ? value : idleMs };
  } catch (err) {
    return { value: undefined, delayMs: failures.failed(err) };
  }
}

/** Resolves once `promise` settles, or after `ms` when it has not by then. */
async function settledOrLate(promise: Promise<unknown>, ms: number): Promise<void> {
  let limit: NodeJS.Timeout | undefined;
  await Promise.race([
    promise,
    new Promise<void>((resolve) => {
      limit = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(limit);
}

/** What one tick gave: its own value, and the delay before the next (its own, idleMs, or the failure backoff). */
type Ran = { value: number | void; delayMs: number };

/** Follows a loop's run of failed ticks: the delay before each retry, the error logged when its message changes, and
 *  the first success after failures logged once. */
function failureTracker(
  name: string,
  logger: Logger,
  backoff: Backoff,
): { failed(err: unknown): number; succeeded(): void } {
  const log = failureLog(logger, {
    failed: 'loop: tick failed',
    recovered: 'loop: tick recovered',
  });
  return {
    failed(err) {
      let delayMs = 0;
      log.failed(err, (failures) => {
        delayMs = failureDelayMs(backoff, failures);
        return { loop: name, delay_ms: delayMs };
      });
      return delayMs;
    },
    succeeded: () => log.succeeded({ loop: name }),
  };
}

/** A run of failures, logged at error level when the error's message changes (not on every repeat) with the count so
 *  far, and its end logged once at info level with how many there were and for how long. */
export function failureLog(
  logger: Logger,
  messages: { failed: string; recovered: string },
): {
  /** Counts one failure; `fields` (given the count) are added to a logged line. */
  failed(err: unknown, fields?: (failures: number) => LogFields): void;
  /** Ends a run of failures, if any. */
  succeeded(fields?: LogFields): void;
} {
  let failing: { count: number; since: number; message: string } | undefined;
  return {
    failed(err, fields) {
      const message = err instanceof Error ? err.message : String(err);
      failing = failing ?? { count: 0, since: Date.now(), message: '' };
      failing.count += 1;
      const extra = fields?.(failing.count) ?? {};
      if (message !== failing.message)
        logger.error(messages.failed, {
          ...extra,
          error: err instanceof Error ? (err.stack ?? message) : message,
          failures: failing.count,
        });
      failing.message = message;
    },
    succeeded(fields = {}) {
      if (!failing) return;
      logger.info(messages.recovered, {
        ...fields,
        failures: failing.count,
        failing_ms: Date.now() - failing.since,
      });
      failing = undefined;
    },
  };
}

// The one loop primitive: a tick re-armed with chained setTimeout, nudge() to run it early, stop() that awaits the running tick.
import type { Logger } from '../log.ts';

export type Loop = {
  start(): void;
  /** Runs the next tick as soon as the current one (if any) finishes. */
  nudge(): void;
  /** Stops re-arming and resolves when the in-flight tick has finished (or after `timeoutMs`). Idempotent. */
  stop(timeoutMs?: number): Promise<void>;
  /** Runs one tick now (for one-shot commands and tests); waits for a running tick first. */
  runOnce(): Promise<number | void>;
};

/** `tick` returns the delay in ms until the next run (or void for `idleMs`); ticks never overlap; a throwing tick is logged, not fatal. */
export function createLoop(
  name: string,
  tick: () => Promise<number | void>,
  opts: { idleMs: number; logger: Logger },
): Loop {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number | void> | undefined;
  let nudged = false;
  let stopped = true;

  const arm = (ms: number) => {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(run, Math.max(0, ms));
  };
  const execute = async (): Promise<number | void> => {
    try {
      return await tick();
    } catch (err) {
      opts.logger.error('loop: tick failed', {
        loop: name,
        error: err instanceof Error ? (err.stack ?? err.message) : String(err),
      });
      return undefined;
    }
  };
  const run = () => {
    if (running) {
      nudged = true;
      return;
    }
    nudged = false;
    running = execute();
    void running.then((next) => {
      running = undefined;
      arm(nudged ? 0 : typeof next === 'number' ? next : opts.idleMs);
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
      if (!running) return;
      let limit: NodeJS.Timeout | undefined;
      await Promise.race([
        running,
        new Promise<void>((resolve) => {
          limit = setTimeout(resolve, timeoutMs);
        }),
      ]);
      clearTimeout(limit);
    },
    async runOnce() {
      while (running) await running;
      running = execute();
      try {
        return await running;
      } finally {
        running = undefined;
      }
    },
  };
}

// Concurrency limiter for fetches: a global cap plus a per-host cap, FIFO within a host, round-robin across hosts.

type Task = { start: () => void };
type HostState = { active: number; queue: Task[]; ready: boolean };

export type Limiter = {
  run<T>(host: string, fn: () => Promise<T>): Promise<T>;
  active(): number;
};

/** At most `global` tasks at once and at most `perHost` per host key; run(host, fn) settles with fn's
 *  outcome; tasks of one host start in submission order; hosts take turns; no polling. */
export function createLimiter(opts: { global: number; perHost: number }): Limiter {
  const globalMax = Math.max(1, Math.floor(opts.global));
  const perHostMax = Math.max(1, Math.floor(opts.perHost));
  const hosts = new Map<string, HostState>();
  // Hosts that have queued work and a free per-host slot, in the order they became eligible.
  const ready: HostState[] = [];
  let running = 0;

  const markReady = (state: HostState): void => {
    if (!state.ready && state.queue.length > 0 && state.active < perHostMax) {
      state.ready = true;
      ready.push(state);
    }
  };

  const pump = (): void => {
    while (running < globalMax && ready.length > 0) {
      const state = ready.shift();
      if (state === undefined) break;
      state.ready = false;
      const task = state.queue.shift();
      if (task === undefined) continue;
      state.active += 1;
      running += 1;
      // Re-queue the host behind the others so one busy host cannot starve the rest.
      markReady(state);
      task.start();
    }
  };

  const finish = (host: string, state: HostState): void => {
    state.active -= 1;
    running -= 1;
    if (state.active === 0 && state.queue.length === 0) hosts.delete(host);
    else markReady(state);
    pump();
  };

  const run = <T>(host: string, fn: () => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      let state = hosts.get(host);
      if (state === undefined) {
        state = { active: 0, queue: [], ready: false };
        hosts.set(host, state);
      }
      const owner = state;
      owner.queue.push({
        start: () => {
          let result: Promise<T>;
          try {
            result = fn();
          } catch (err) {
            result = Promise.reject(err);
          }
          result.then(resolve, reject).finally(() => finish(host, owner));
        },
      });
      markReady(owner);
      pump();
    });

  return { run, active: () => running };
}

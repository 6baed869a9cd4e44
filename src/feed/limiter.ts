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
  return new HostLimiter(
    Math.max(1, Math.floor(opts.global)),
    Math.max(1, Math.floor(opts.perHost)),
  );
}

class HostLimiter implements Limiter {
  readonly #globalMax: number;
  readonly #perHostMax: number;
  readonly #hosts = new Map<string, HostState>();
  // Hosts that have queued work and a free per-host slot, in the order they became eligible.
  readonly #ready: HostState[] = [];
  #running = 0;

  constructor(globalMax: number, perHostMax: number) {
    this.#globalMax = globalMax;
    this.#perHostMax = perHostMax;
  }

  run<T>(host: string, fn: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let state = this.#hosts.get(host);
      if (state === undefined) {
        state = { active: 0, queue: [], ready: false };
        this.#hosts.set(host, state);
      }
      const owner = state;
      owner.queue.push({
        start: () => startTask(fn, resolve, reject, () => this.#finish(host, owner)),
      });
      this.#markReady(owner);
      this.#pump();
    });
  }

  active(): number {
    return this.#running;
  }

  #markReady(state: HostState): void {
    if (!state.ready && state.queue.length > 0 && state.active < this.#perHostMax) {
      state.ready = true;
      this.#ready.push(state);
    }
  }

  #pump(): void {
    while (this.#running < this.#globalMax && this.#ready.length > 0) {
      const state = this.#ready.shift();
      if (state === undefined) break;
      state.ready = false;
      const task = state.queue.shift();
      if (task === undefined) continue;
      state.active += 1;
      this.#running += 1;
      // Re-queue the host behind the others so one busy host cannot starve the rest.
      this.#markReady(state);
      task.start();
    }
  }

  #finish(host: string, state: HostState): void {
    state.active -= 1;
    this.#running -= 1;
    if (state.active === 0 && state.queue.length === 0) this.#hosts.delete(host);
    else this.#markReady(state);
    this.#pump();
  }
}

/** Runs `fn` (a synchronous throw counts as a rejection), settles the caller's promise with its outcome, then `done`. */
function startTask<T>(
  fn: () => Promise<T>,
  resolve: (value: T) => void,
  reject: (err: unknown) => void,
  done: () => void,
): void {
  let result: Promise<T>;
  try {
    result = fn();
  } catch (err) {
    result = Promise.reject(err);
  }
  result.then(resolve, reject).finally(done);
}

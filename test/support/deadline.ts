// Deadlines for tests that wait on loops and timers: shorter than any fallback timer, so a broken wake-up fails the
// test instead of being rescued by the next scheduled run.
import { setTimeout as sleep } from 'node:timers/promises';

/** Resolves with `promise`'s value, or rejects with "<what>: not within <ms> ms" when it takes longer. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  const timer = new AbortController();
  const late = sleep(ms, undefined, { signal: timer.signal }).then(() => {
    throw new Error(`${what}: not within ${ms} ms`);
  });
  late.catch(() => {}); // an aborted sleep rejects too; only a real timeout is reported, by the race below
  try {
    return await Promise.race([promise, late]);
  } finally {
    timer.abort();
  }
}

/** Calls `check` every `everyMs` until it returns true; rejects with "<what>: not within <ms> ms" after `ms`. */
export async function until(
  check: () => boolean | Promise<boolean>,
  ms: number,
  what: string,
  everyMs = 20,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(everyMs);
  }
}

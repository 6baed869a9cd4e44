// Telling "another connection holds the write lock" apart from other database errors, and waiting it out a few times.
import { setTimeout as sleep } from 'node:timers/promises';

/** True for SQLITE_BUSY and its extended codes (SQLITE_BUSY_SNAPSHOT: a transaction that read first found that another
 *  connection wrote meanwhile, which no busy timeout waits for). */
export function isBusyError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/** Runs `fn`; while it throws a busy error, tries again after 100 ms, 200 ms, … (at most 2 s between two tries), until
 *  `tries` tries in all. Any other error, or the last busy one, is thrown. For one-shot commands beside a running serve
 *  (poll --once --force), whose writes each wait the busy timeout first. */
export async function retryWhileBusy<T>(fn: () => T | Promise<T>, tries = 8): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!isBusyError(err) || attempt >= tries) throw err;
      await sleep(Math.min(2000, 100 * 2 ** (attempt - 1)));
    }
  }
}

// Background threads yield the CPU to the event loop: a thread lowers its own scheduling priority (a nice increment of
// the calling thread alone, Linux), so that when it and the event loop want the same core, the event loop (the API, the
// deliveries, the records) runs first and the background work takes what is left. With a core free for each, nothing
// changes.
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** How far below the event loop a parse thread runs: at nice +10 it gets about a tenth of a core the event loop also
 *  wants (the kernel's weights for 0 and 10 are 1024 and 110), and all of one it does not. */
export const PARSE_THREAD_NICE = 10;

/** Lowers the calling thread's priority by `by` (up to nice 19). Does nothing where threads cannot be told apart (no
 *  /proc/thread-self: not Linux) or the kernel refuses. The process and its other threads keep theirs. */
export function lowerThisThread(by: number): void {
  try {
    // "<pid>/task/<tid>": on Linux, setpriority on a thread id changes that thread only.
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, Math.min(19, getPriority(tid) + by));
  } catch {
    // the thread runs at the process's priority
  }
}

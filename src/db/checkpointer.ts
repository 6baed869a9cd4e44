// The WAL checkpointer: a worker thread with its own connection copies the WAL into the database file every
// `intervalMs`, off the event loop. SQLite's own autocheckpoint runs inside whichever commit crosses 1,000 WAL pages,
// on the main thread, with two fsyncs, which under delivery load hold up the commits that record attempts.
// While the thread runs, the main connection's autocheckpoint stays on only as a bound on the WAL's size.
import type { Worker } from 'node:worker_threads';
import type { Logger } from '../log.ts';
import type { Telemetry } from '../telemetry.ts';
import { nativeBindingPath, startWorkerThread } from '../assets.ts';
import type {
  CheckpointCommand,
  CheckpointReport,
  CheckpointWorkerData,
} from './checkpoint-worker.ts';
import type { Db } from './open.ts';

/** The main connection's autocheckpoint while the thread runs: a WAL of this many pages (~40 MiB) is checkpointed
 *  by the next commit, as SQLite does by default at 1,000, in case the thread falls behind a sustained write load. */
export const BACKSTOP_AUTOCHECKPOINT_PAGES = 10_000;
const SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES = 1000;
const STOP_TIMEOUT_MS = 2000;

export type Checkpointer = {
  /** Resolves once the thread's connection is open (false when it could not start: SQLite's autocheckpoint stays). */
  ready(): Promise<boolean>;
  /** The WAL at the last pass that found it changed: its length in frames (pages) and how many are in the database. */
  readonly lastPass: { walFrames: number; checkpointedFrames: number } | undefined;
  /** Stops the thread and gives checkpointing back to the main connection. */
  stop(): Promise<void>;
};

/** Starts checkpointing `db`'s WAL on a worker thread every `intervalMs`; an in-memory database needs none. */
export function startCheckpointer(
  db: Db,
  opts: {
    intervalMs: number;
    logger: Logger;
    telemetry?: Telemetry;
    spawn?: (data: CheckpointWorkerData) => Worker;
  },
): Checkpointer {
  if (db.memory) return { ready: async () => false, lastPass: undefined, stop: async () => {} };
  const data: CheckpointWorkerData = {
    file: db.name,
    nativeBinding: nativeBindingPath(),
    intervalMs: opts.intervalMs,
  };
  const worker = (opts.spawn ?? ((d) => startWorkerThread('checkpoint', d)))(data);
  const state: { lastPass: Checkpointer['lastPass']; exited: boolean } = {
    lastPass: undefined,
    exited: false,
  };
  const ready = follow(worker, db, opts, state);
  return {
    ready: () => ready,
    get lastPass() {
      return state.lastPass;
    },
    async stop() {
      if (!state.exited) await stopThread(worker);
    },
  };
}

/** Follows the thread's reports into `state`, the telemetry and the log, and moves the main connection's
 *  autocheckpoint to the backstop while the thread runs. A failing pass is retried every interval (200 ms): its error
 *  is logged when the message changes, not on every pass, and the first pass that works again is logged once.
 *  Resolves true once the thread is ready, false when it failed or exited first. */
function follow(
  worker: Worker,
  db: Db,
  opts: { logger: Logger; telemetry?: Telemetry },
  state: { lastPass: Checkpointer['lastPass']; exited: boolean },
): Promise<boolean> {
  let failing: { message: string; passes: number } | undefined;
  return new Promise<boolean>((resolve) => {
    worker.on('message', (report: CheckpointReport) => {
      if (report.type === 'ready') {
        db.pragma(`wal_autocheckpoint = ${BACKSTOP_AUTOCHECKPOINT_PAGES}`);
        resolve(true);
      } else if (report.type === 'pass') {
        state.lastPass = {
          walFrames: report.walFrames,
          checkpointedFrames: report.checkpointedFrames,
        };
        opts.telemetry?.checkpointed(report.walFrames, report.checkpointedFrames);
        if (failing)
          opts.logger.info('checkpoint: checkpointing the WAL again', {
            failed_passes: failing.passes,
          });
        failing = undefined;
      } else {
        if (failing?.message !== report.message)
          opts.logger.warn('checkpoint: unable to checkpoint the WAL; trying again', {
            error: report.message,
          });
        failing = { message: report.message, passes: (failing?.passes ?? 0) + 1 };
      }
    });
    worker.on('error', (err) => {
      opts.logger.warn(
        'checkpoint: the checkpoint thread failed; SQLite checkpoints on commit instead',
        { error: err.message },
      );
      resolve(false);
    });
    worker.on('exit', () => {
      state.exited = true;
      if (db.open) db.pragma(`wal_autocheckpoint = ${SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES}`);
      resolve(false);
    });
  });
}

/** Asks the thread to stop and waits for it to exit, terminating it after STOP_TIMEOUT_MS. */
async function stopThread(worker: Worker): Promise<void> {
  const gone = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  worker.postMessage({ type: 'stop' } satisfies CheckpointCommand);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), STOP_TIMEOUT_MS);
  });
  if ((await Promise.race([gone, late])) === 'late') await worker.terminate();
  clearTimeout(timer);
  await gone;
}

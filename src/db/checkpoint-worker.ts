// Worker-thread side of the WAL checkpointer (src/db/checkpointer.ts): its own connection copies committed WAL frames
// into the database file, so the copy and its fsyncs never stall the event loop that serves the API and delivers.
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';

export type CheckpointWorkerData = {
  file: string;
  nativeBinding: string | undefined;
  intervalMs: number;
};
/** Main → worker: stop and close the connection. */
export type CheckpointCommand = { type: 'stop' };
/** Worker → main: 'ready' once the connection is open; a 'pass' whenever the WAL changed since the last one (its length
 *  in frames, and how many of them are in the database file now); 'error' when one failed (the next pass tries again). */
export type CheckpointReport =
  | { type: 'ready' }
  | { type: 'pass'; walFrames: number; checkpointedFrames: number }
  | { type: 'error'; message: string };

/** Runs passive checkpoints every `intervalMs` on this worker's parentPort until told to stop; does nothing on the main
 *  thread. A bundled build calls it from its own worker entry. */
export function runCheckpointWorker(): void {
  const port = parentPort;
  if (!port) return;
  const { file, nativeBinding, intervalMs } = workerData as CheckpointWorkerData;
  const db = new Database(file, {
    fileMustExist: true,
    ...(nativeBinding ? { nativeBinding } : {}),
  });
  db.pragma('wal_autocheckpoint = 0'); // this connection never writes; it only checkpoints, below
  let last = ''; // the last pass reported, so an idle WAL reports nothing
  let timer: NodeJS.Timeout | undefined;
  const pass = () => {
    try {
      // PASSIVE copies what it can without waiting for readers or the writer, and never blocks them.
      const row = (
        db.pragma('wal_checkpoint(PASSIVE)') as {
          busy: number;
          log: number;
          checkpointed: number;
        }[]
      )[0];
      const now = row ? `${row.log}/${row.checkpointed}` : '';
      if (row && now !== last)
        port.postMessage({
          type: 'pass',
          walFrames: row.log,
          checkpointedFrames: row.checkpointed,
        } satisfies CheckpointReport);
      last = now;
    } catch (err) {
      last = ''; // so the next pass that works is reported, and the main thread sees the recovery
      port.postMessage({
        type: 'error',
        message: err instanceof Error ? err.message : String(err),
      } satisfies CheckpointReport);
    }
    timer = setTimeout(pass, intervalMs);
  };
  port.on('message', (cmd: CheckpointCommand) => {
    if (cmd.type !== 'stop') return;
    clearTimeout(timer);
    db.close();
    port.close();
  });
  port.postMessage({ type: 'ready' } satisfies CheckpointReport);
  timer = setTimeout(pass, intervalMs);
}

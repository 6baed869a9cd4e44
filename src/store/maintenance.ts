// SQL for database housekeeping that belongs to no table: WAL checkpoints and the health check's ping.
import { withBusyTimeout } from '../db/busy.ts';
import type { Db } from '../db/open.ts';
import { prepared } from './sql.ts';

export type CheckpointResult = { busy: boolean; walPages: number; checkpointedPages: number };

/** Waited at most for another connection's writer or readers before a truncation gives up. A TRUNCATE checkpoint waits
 *  for every writer and reader through the busy handler, synchronously: with the 5 s busy timeout a `poll --once`
 *  beside serve held serve's event loop for that long. The checkpoint thread has copied nearly everything already, so
 *  the truncation is short when it gets the lock, and is simply tried again at the next maintenance pass when not. */
export const CHECKPOINT_BUSY_TIMEOUT_MS = 100;

/** Copies the WAL into the database and truncates it to zero bytes (PRAGMA wal_checkpoint(TRUNCATE)); `busy` when
 *  another connection's reader or writer kept it from finishing within CHECKPOINT_BUSY_TIMEOUT_MS. */
export function checkpointWal(db: Db): CheckpointResult {
  const row = withBusyTimeout(
    db,
    CHECKPOINT_BUSY_TIMEOUT_MS,
    () =>
      db.pragma('wal_checkpoint(TRUNCATE)') as {
        busy: number;
        log: number;
        checkpointed: number;
      }[],
  );
  const r = row[0] ?? { busy: 0, log: 0, checkpointed: 0 };
  return { busy: r.busy !== 0, walPages: r.log, checkpointedPages: r.checkpointed };
}

/** Throws when the database does not answer a trivial query (health checks). */
export function pingDatabase(db: Db): void {
  prepared(db, 'SELECT 1').get();
}

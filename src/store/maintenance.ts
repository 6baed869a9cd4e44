// SQL for database housekeeping that belongs to no table: WAL checkpoints and the health check's ping.
import type { Db } from '../db/open.ts';
import { prepared } from './sql.ts';

export type CheckpointResult = { busy: boolean; walPages: number; checkpointedPages: number };

/** Copies the WAL into the database and truncates it to zero bytes (PRAGMA wal_checkpoint(TRUNCATE)); `busy` when
 *  another connection's reader or writer kept it from finishing (it is then simply tried again later). */
export function checkpointWal(db: Db): CheckpointResult {
  const row = db.pragma('wal_checkpoint(TRUNCATE)') as {
    busy: number;
    log: number;
    checkpointed: number;
  }[];
  const r = row[0] ?? { busy: 0, log: 0, checkpointed: 0 };
  return { busy: r.busy !== 0, walPages: r.log, checkpointedPages: r.checkpointed };
}

/** Throws when the database does not answer a trivial query (health checks). */
export function pingDatabase(db: Db): void {
  prepared(db, 'SELECT 1').get();
}

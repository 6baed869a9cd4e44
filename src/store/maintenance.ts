// SQL for database housekeeping that belongs to no table: the health check's ping.
import type { Db } from '../db/open.ts';
import { prepared } from './sql.ts';

/** Throws when the database does not answer a trivial query (health checks). */
export function pingDatabase(db: Db): void {
  prepared(db, 'SELECT 1').get();
}

// SQL for database housekeeping that belongs to no table: the health check's ping.
import type { Sql } from '../db/engine.ts';

/** Throws when the database does not answer a trivial query (health checks). */
export async function pingDatabase(db: Sql): Promise<void> {
  await db.get('SELECT 1');
}

// SQL for applications: the owners of API keys and of everything created with them.
import type { Db } from '../db/open.ts';
import { prepared } from './sql.ts';
import { newId } from '../ids.ts';

export type Application = { id: string; name: string; created_at: string };

/** Returns the application named `name`, creating it when missing. */
export function upsertApplication(db: Db, name: string, now: Date): Application {
  const found = prepared(db, 'SELECT * FROM applications WHERE name = ?').get(name) as
    Application | undefined;
  if (found) return found;
  const app: Application = { id: newId(now), name, created_at: now.toISOString() };
  prepared(
    db,
    'INSERT INTO applications (id, name, created_at) VALUES (@id, @name, @created_at)',
  ).run(app);
  return app;
}

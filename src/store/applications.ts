// SQL for applications: the owners of API keys and of everything created with them.
import type { Sql } from '../db/engine.ts';
import { newId } from '../ids.ts';

export type Application = { id: string; name: string; created_at: string };

/** Returns the application named `name`, creating it when missing. */
export async function upsertApplication(db: Sql, name: string, now: Date): Promise<Application> {
  const found = await db.get<Application>('SELECT * FROM applications WHERE name = ?', [name]);
  if (found) return found;
  const app: Application = { id: newId(now), name, created_at: now.toISOString() };
  await db.run(
    'INSERT INTO applications (id, name, created_at) VALUES (@id, @name, @created_at)',
    app,
  );
  return app;
}

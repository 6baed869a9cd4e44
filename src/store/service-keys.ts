// SQL for service_keys: the keys every node on the database signs with, each made once by the first node to ask.
import type { Sql } from '../db/engine.ts';

/** The key named `name`: the one stored, or `made` stored now when there is none (of two nodes asking at once, the
 *  first one's, for both). */
export async function serviceKey(db: Sql, name: string, made: string): Promise<string> {
  await db.run('INSERT INTO service_keys (name, key) VALUES (?, ?) ON CONFLICT (name) DO NOTHING', [
    name,
    made,
  ]);
  return (await db.value<string>('SELECT key FROM service_keys WHERE name = ?', [name]))!;
}

// What the one-shot commands (keys, config check, backup) need of the daemon's set-up, apart from the daemon itself: the
// database file and a context over it. The CLI loads app.ts (the HTTP app, the loops, the parsers) only for serve and
// poll --once, so the other commands start in a fraction of the time.
import { join, resolve } from 'node:path';
import { systemClock, type Clock } from './clock.ts';
import type { Config } from './config.ts';
import { quietCtx, type Ctx } from './context.ts';
import { openDatabase, type Db } from './db/open.ts';
import { SqliteEngine } from './db/sqlite-engine.ts';

/** The database file inside the configured data directory. */
export function databaseFile(config: Config): string {
  return resolve(join(config.storage.data_dir, 'feedsub.db'));
}

/** Opens the database for a one-shot command (keys); the caller closes it. */
export function openForCommand(config: Config, clock: Clock = systemClock): { ctx: Ctx; db: Db } {
  const db = openDatabase(databaseFile(config));
  return { ctx: quietCtx(new SqliteEngine(db), clock, config), db };
}

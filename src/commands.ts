// What the one-shot commands (keys, config check, backup) need of the daemon's set-up, apart from the daemon itself:
// the configured database (db/connect.ts) and a context over it. The CLI loads app.ts (the HTTP app, the loops, the
// parsers) only for serve and poll --once, so the other commands start in a fraction of the time.
import type { Config } from './config.ts';
import { quietCtx, type Ctx } from './context.ts';
import { openConfiguredDatabase } from './db/connect.ts';
import { silentLogger } from './log.ts';

/** Opens the configured database for a one-shot command (keys), without the data directory's lock, so it works beside a
 *  running serve; the caller closes it. */
export async function openForCommand(
  config: Config,
): Promise<{ ctx: Ctx; close: () => Promise<void> }> {
  const opened = await openConfiguredDatabase(config, silentLogger);
  return { ctx: quietCtx(opened.engine, opened.clock, config), close: opened.close };
}

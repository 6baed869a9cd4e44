// The database's clock, read synchronously: on PostgreSQL, times that lease or schedule work follow the server's clock,
// so that nodes whose own clocks disagree agree on when a lease ends. Asking the server for every `now()` would make
// each a round trip; instead the offset between this machine's clock and the server's is measured (the midpoint of the
// quickest of a few round trips, as NTP does), kept, and measured again every minute, so a clock that drifts or is
// stepped is followed within that minute. Its error is at most half the quickest round trip.
import type { Clock } from '../clock.ts';
import type { Engine } from './engine.ts';

/** Round trips per measurement; the quickest one counts. */
const SAMPLES = 3;

export type DatabaseClock = Clock & {
  /** Measures the offset now; resolves with it in ms (server minus this machine), and the round trip it came from. */
  sync(): Promise<{ offsetMs: number; roundTripMs: number }>;
  /** Stops measuring again. */
  stop(): void;
};

/** A clock that reads `base` (this machine's clock) corrected by the offset to the server's, measured by `sync()` and
 *  then every `everyMs`. Until the first `sync()` resolves it reads `base` as it is. A failed measurement keeps the
 *  offset it had. */
export function databaseClock(engine: Engine, base: Clock, everyMs = 60_000): DatabaseClock {
  let offsetMs = 0;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const sync = async () => {
    let best: { offsetMs: number; roundTripMs: number } | undefined;
    for (let i = 0; i < SAMPLES; i++) {
      const before = base.now().getTime();
      const server = await engine.read((sql) =>
        sql.get<{ ms: number }>(
          engine.dialect === 'postgres'
            ? 'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms'
            : "SELECT (julianday('now') - 2440587.5) * 86400000.0 AS ms",
        ),
      );
      const after = base.now().getTime();
      const sample = { offsetMs: server!.ms - (before + after) / 2, roundTripMs: after - before };
      if (!best || sample.roundTripMs < best.roundTripMs) best = sample;
    }
    offsetMs = Math.round(best!.offsetMs);
    return { offsetMs, roundTripMs: best!.roundTripMs };
  };
  const again = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      sync().then(again, again);
    }, everyMs);
    timer.unref();
  };
  again();
  return {
    now: () => new Date(base.now().getTime() + offsetMs),
    sync,
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

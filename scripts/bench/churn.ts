// make bench, the bounds rows: an hour of feeds whose every entry changes on every poll (polled once a minute on a
// manual clock, maintenance every 10 minutes as the daemon runs it) and the database's size at the end, against the
// bound docs/operations.md documents; then the longest the event loop waits while a 200,000-entry hold is released
// and while the subscription, with the 2,000 events that made, is deleted.
import { rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createEndpoint } from '../../src/actions/endpoints.ts';
import { resolveIdentityChange } from '../../src/actions/feeds.ts';
import { createKey } from '../../src/actions/keys.ts';
import { createSubscription, removeSubscription } from '../../src/actions/subscriptions.ts';
import { manualClock, systemClock } from '../../src/clock.ts';
import { defaultConfig, withConfig, type Config } from '../../src/config.ts';
import { quietCtx, type Ctx } from '../../src/context.ts';
import { CHECKPOINT_INTERVAL_MS } from '../../src/app.ts';
import { startCheckpointer } from '../../src/db/checkpointer.ts';
import type { Sql } from '../../src/db/engine.ts';
import { openDatabase, type Db } from '../../src/db/open.ts';
import { SqliteEngine } from '../../src/db/sqlite-engine.ts';
import { silentLogger } from '../../src/log.ts';
import { holdEntries } from '../../src/store/entries.ts';
import { createWorkers } from '../../src/worker/index.ts';
import { maintenanceTick } from '../../src/worker/maintenance/maintenance.ts';
import { pollTick } from '../../src/worker/poll/round.ts';
import { entry } from '../../test/support/identity.ts';
import type { Row } from './table.ts';

/** Churning feeds, their entries, and the database size docs/operations.md promises for that hour. */
// The bound: 10 feeds × 1,000 held entries (retention.held_entries_per_feed) of ~650 bytes of v2 entry JSON and ~580
// of row and indexes (the trace's guid and URL indexes among them), the 1,000 keys of their first documents (~255 bytes
// each with their index) and their history, with room for SQLite's free pages; docs/operations.md › The database file.
export const CHURN = { feeds: 10, items: 1000, minutes: 60, boundMiB: 20 };
const HELD = 200_000;
const MiB = 1024 * 1024;

/** Both measures, in a directory of their own under `dir`. */
export async function measureBounds(dir: string, row: Row): Promise<void> {
  await measureChurnHour(join(dir, 'churn'), row);
  await measureRelease(join(dir, 'release'), row);
}

async function measureChurnHour(dir: string, row: Row): Promise<void> {
  const origin = await churningOrigin();
  const clock = manualClock('2026-01-01T00:00:00.000Z');
  const { ctx, db, close } = await open(dir, clock, { poll: { interval_seconds: 60 } });
  const workers = createWorkers(ctx, silentLogger);
  try {
    const { subscribe } = await subscriber(ctx, origin.url);
    for (let i = 0; i < CHURN.feeds; i++) await subscribe(`/churn/${i}.xml`);
    const started = performance.now();
    for (let minute = 0; minute <= CHURN.minutes; minute++) {
      await pollTick(ctx, workers.pollerDeps, { all: true });
      if (minute % 10 === 0) await maintenanceTick(ctx, { logger: silentLogger });
      clock.advance(60_000);
    }
    // The bound is on what the tables keep: the log is copied into the file first. The WAL file's own size is its
    // high-water mark since it last started over (at most 16 MiB then, journal_size_limit), which says how the
    // checkpoint thread's turns fell against this machine's writes, not what is kept; the note gives it.
    const file = join(dir, 'feedsub.db');
    const wal = sizeOf(`${file}-wal`);
    db.pragma('wal_checkpoint(TRUNCATE)');
    const bytes = statSync(file).size + sizeOf(`${file}-wal`);
    const free =
      (db.pragma('freelist_count', { simple: true }) as number) *
      (db.pragma('page_size', { simple: true }) as number);
    const count = async (table: string) =>
      (await ctx.db.column<number>(`SELECT count(*) FROM ${table}`))[0];
    row(
      '  largest tables and indexes',
      await largest(ctx.db),
      'after the churn hour (SQLite dbstat)',
    );
    const held = await count('held_entries');
    const keys = await count('entries');
    row(
      `database after an hour of ${CHURN.feeds} churning feeds`,
      `${(bytes / MiB).toFixed(1)} MiB`,
      `bound ${CHURN.boundMiB} MiB (${bytes <= CHURN.boundMiB * MiB ? 'within' : 'OVER'}); the WAL checkpointed into it (its file was ${(wal / MiB).toFixed(1)} MiB before); of it free pages ${(free / MiB).toFixed(1)} MiB; ${CHURN.items} entries each, all new on every one-minute poll; ${held} held, ${keys} keys; ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  } finally {
    await workers.close();
    await close();
    await new Promise((resolve) => origin.server.close(resolve));
  }
}

async function measureRelease(dir: string, row: Row): Promise<void> {
  const { ctx, db, close } = await open(dir, systemClock, {});
  try {
    const { app, subscribe } = await subscriber(ctx, 'http://127.0.0.1:9');
    const { id, feed } = await subscribe('/held.xml');
    await holdMany(ctx, feed);
    // The hold was written in one transaction, a WAL of hundreds of MiB: checkpointed and cut back now, so the first
    // chunk of the release does not pay for truncating a WAL the release did not write.
    db.pragma('wal_checkpoint(TRUNCATE)');
    let t = performance.now();
    const released = await worstBlock(() =>
      resolveIdentityChange(ctx, app, feed, { action: 'deliver' }),
    );
    row(
      `release of ${HELD.toLocaleString('en')} held entries`,
      `${released.worstMs.toFixed(1)} ms`,
      `longest event-loop block (99 % of turns within ${released.p99Ms.toFixed(1)} ms); ${released.value.events} events, ${((performance.now() - t) / 1000).toFixed(1)} s in all`,
    );
    t = performance.now();
    const removed = await worstBlock(() => removeSubscription(ctx, app, id));
    row(
      `deleting its subscription and ${released.value.events} events`,
      `${removed.worstMs.toFixed(1)} ms`,
      `longest event-loop block (99 % of turns within ${removed.p99Ms.toFixed(1)} ms); ${((performance.now() - t) / 1000).toFixed(1)} s in all`,
    );
  } finally {
    await close();
  }
}

/** A database in `dir` (removed on close) with the bench's config and, as the daemon has, its checkpoint thread;
 *  `db` is its SQLite connection, for pragmas. */
async function open(
  dir: string,
  clock: Ctx['clock'],
  patch: Parameters<typeof withConfig>[1],
): Promise<{ ctx: Ctx; db: Db; close: () => Promise<void> }> {
  const config: Config = withConfig(
    withConfig(defaultConfig(), { storage: { data_dir: dir }, network: { allow_private: true } }),
    patch,
  );
  const db = openDatabase(join(dir, 'feedsub.db'));
  const checkpointer = startCheckpointer(db, {
    intervalMs: CHECKPOINT_INTERVAL_MS,
    logger: silentLogger,
  });
  await checkpointer.ready();
  const ctx = quietCtx(new SqliteEngine(db), clock, config);
  return {
    ctx,
    db,
    close: async () => {
      await checkpointer.stop();
      await ctx.store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One application and endpoint; subscribe(path) subscribes it to `base` + path. */
async function subscriber(
  ctx: Ctx,
  base: string,
): Promise<{ app: string; subscribe: (path: string) => Promise<{ id: string; feed: string }> }> {
  const app = (await createKey(ctx, 'bench', null)).application.id;
  const endpoint = await createEndpoint(ctx, app, {
    title: 'bench',
    url: 'http://127.0.0.1:9/hook',
  });
  const subscribe = (path: string) =>
    createSubscription(ctx, app, { endpoint: endpoint.id, url: base + path });
  return { app, subscribe };
}

/** HELD entries of about 300 bytes each, held by the feed before the release is measured. */
async function holdMany(ctx: Ctx, feed: string): Promise<void> {
  const text = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(3);
  await ctx.db.run("UPDATE feeds SET status = 'identity_changed' WHERE id = ?", [feed]);
  await ctx.store.write((sql) =>
    holdEntries(
      sql,
      feed,
      Array.from({ length: HELD }, (_, i) => ({
        key: i.toString(16).padStart(32, '0'),
        entry: JSON.stringify(
          entry({
            guid: `held-${i}`,
            url: `http://example.com/${i}`,
            title: `Held entry ${i}`,
            summary: text,
          }),
        ),
        position: i,
      })),
      ctx.clock.now(),
      { entries: HELD, bytes: 1024 * MiB },
    ),
  );
}

/** Runs `job` while a zero-delay timer chain measures the gaps between two of its turns: the longest (which may
 *  include a garbage collection) and the 99th percentile. */
async function worstBlock<T>(
  job: () => Promise<T>,
): Promise<{ value: T; worstMs: number; p99Ms: number }> {
  let last = performance.now();
  const gaps: number[] = [];
  let timer = setTimeout(function tick() {
    const t = performance.now();
    gaps.push(t - last);
    last = t;
    timer = setTimeout(tick, 0);
  }, 0);
  try {
    const value = await job();
    gaps.push(performance.now() - last);
    gaps.sort((a, b) => a - b);
    return {
      value,
      worstMs: gaps.at(-1)!,
      p99Ms: gaps[Math.floor(gaps.length * 0.99)] ?? gaps.at(-1)!,
    };
  } finally {
    clearTimeout(timer);
  }
}

/** A feed origin whose every answer has CHURN.items entries never seen before (guid, link, title and text). */
async function churningOrigin(): Promise<{ url: string; server: Server }> {
  let round = 0;
  const server = createServer((req, res) => {
    const r = ++round;
    const items = Array.from(
      { length: CHURN.items },
      (_, i) =>
        `<item><guid>r${r}-${i}</guid><title>Item ${i} of round ${r}</title><link>http://example.com/${r}/${i}</link><description>Text of item ${i}, round ${r}: lorem ipsum dolor sit amet.</description></item>`,
    ).join('');
    res
      .writeHead(200, { 'content-type': 'application/rss+xml' })
      .end(
        `<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>${req.url}</title><link>http://example.com/</link>${items}</channel></rss>`,
      );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** The four largest tables or indexes of `db`, with their size: where a bound's bytes go. */
async function largest(db: Sql): Promise<string> {
  const rows = await db.all<{ name: string; bytes: number }>(
    'SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC LIMIT 4',
  );
  return rows.map((r) => `${r.name} ${(r.bytes / MiB).toFixed(1)} MiB`).join(', ');
}

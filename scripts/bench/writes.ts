// Bench phase: bytes written to the database per created subscription and per poll answered 304, measured as the WAL's
// growth over 1,000 feeds of a local origin: on SQLite the WAL file's (automatic checkpoints off, the WAL truncated
// before each measure), on PostgreSQL the server's WAL position (a CHECKPOINT before each measure).
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEndpoint } from '../../src/actions/endpoints.ts';
import { createKey } from '../../src/actions/keys.ts';
import { createSubscription } from '../../src/actions/subscriptions.ts';
import { systemClock } from '../../src/clock.ts';
import { defaultConfig, withConfig } from '../../src/config.ts';
import { quietCtx } from '../../src/context.ts';
import type { Engine } from '../../src/db/engine.ts';
import { openDatabase, type Db } from '../../src/db/open.ts';
import { SqliteEngine } from '../../src/db/sqlite-engine.ts';
import { silentLogger } from '../../src/log.ts';
import { createWorkers } from '../../src/worker/index.ts';
import { pollTick } from '../../src/worker/poll/round.ts';
import {
  openBenchEngine,
  walBytes as serverWalBytes,
  walPosition,
  type Postgres,
} from './postgres.ts';
import type { Row } from './table.ts';

const WRITE_FEEDS = 1000;

/** A database to measure and what measures it: `written(work)` is the bytes its WAL grows by while `work` runs. */
type Measured = {
  store: Engine;
  written: (work: () => Promise<unknown>) => Promise<number>;
  /** How the notes name the measure. */
  growth: string;
};

/** Adds the rows "bytes written per subscription created" and "bytes written per 304 poll", on SQLite or, given a
 *  server, on a new database of it. */
export async function measureWrites(row: Row, server?: Postgres): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-bench-writes-'));
  const origin = await startEtagOrigin();
  const config = withConfig(defaultConfig(), {
    storage: { data_dir: dir },
    network: { allow_private: true },
    poll: { concurrency: 32, per_host_concurrency: 32 },
    quotas: { new_feed_urls_per_hour: 0, subscriptions_per_application: 0 },
  });
  const { store, written, growth } = server ? await onPostgres(server) : onSqlite(dir);
  const ctx = quietCtx(store, systemClock, config);
  const workers = createWorkers(ctx, silentLogger);
  try {
    const { application } = await createKey(ctx, 'bench-writes', null);
    const endpoint = await createEndpoint(ctx, application.id, {
      title: 'bench',
      url: 'http://127.0.0.1:9/hook',
    });
    const created = written(() =>
      (async () => {
        for (let i = 0; i < WRITE_FEEDS; i++)
          await createSubscription(ctx, application.id, {
            endpoint: endpoint.id,
            url: `${origin.url}/f/${i}.xml`,
          });
      })(),
    );
    row(
      'bytes written per subscription created',
      `${((await created) / WRITE_FEEDS / 1024).toFixed(1)} KiB`,
      `${growth} over ${WRITE_FEEDS} POST /v1/subscriptions (each its own transaction)`,
    );
    await pollTick(ctx, workers.pollerDeps, { all: true }); // the baselines: 200 with an ETag
    const all304 = async () => {
      const { summary } = await pollTick(ctx, workers.pollerDeps, { all: true });
      if (summary.notModified !== WRITE_FEEDS)
        throw new Error(`bench: unable to measure 304 polls: ${summary.notModified} answered 304`);
    };
    const polled = await written(all304);
    // On PostgreSQL a second cycle right after the first writes the pages the first wrote whole since the CHECKPOINT
    // as changes only: the WAL of a cycle between two checkpoints.
    const again = server ? await serverWalGrowth(store, all304) : undefined;
    row(
      'bytes written per 304 poll',
      `${(polled / WRITE_FEEDS / 1024).toFixed(1)} KiB`,
      `${growth} over ${WRITE_FEEDS} polls answered 304 (claim + record, group-committed)${again === undefined ? '' : `; a second such cycle right after it, no CHECKPOINT between: ${(again / WRITE_FEEDS / 1024).toFixed(1)} KiB`}`,
    );
  } finally {
    await workers.close();
    await ctx.store.close();
    await origin.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A SQLite database in `dir`, measured by its WAL file's size, from empty. */
function onSqlite(dir: string): Measured {
  const db = openDatabase(join(dir, 'feedsub.db'));
  db.pragma('wal_autocheckpoint = 0'); // the WAL keeps every frame written until the measure reads it
  return {
    store: new SqliteEngine(db),
    written: (work) => walBytes(db, dir, work),
    growth: 'WAL growth',
  };
}

/** A new database on `server`, measured by the server's WAL position from a CHECKPOINT. */
async function onPostgres(server: Postgres): Promise<Measured> {
  const store = await openBenchEngine(await server.newDatabase());
  return {
    store,
    written: (work) => serverWalBytes(store, work),
    growth: 'WAL written by the server (pg_current_wal_lsn(), from a CHECKPOINT)',
  };
}

/** The WAL the server writes while `work` runs, from where it is (no CHECKPOINT first). */
async function serverWalGrowth(store: Engine, work: () => Promise<unknown>): Promise<number> {
  const before = await walPosition(store);
  await work();
  return (await walPosition(store)) - before;
}

/** The bytes `work` appends to the WAL, measured from an empty WAL. */
async function walBytes(db: Db, dir: string, work: () => Promise<unknown>): Promise<number> {
  db.pragma('wal_checkpoint(TRUNCATE)');
  await work();
  return statSync(join(dir, 'feedsub.db-wal')).size;
}

/** An origin serving one small RSS document per path, with an ETag, answering 304 to a matching If-None-Match. */
async function startEtagOrigin(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const etag = `"${req.url ?? ''}"`;
    if (req.headers['if-none-match'] === etag) return void res.writeHead(304, { etag }).end();
    res.writeHead(200, { 'content-type': 'application/rss+xml', etag });
    res.end(
      `<?xml version="1.0"?><rss version="2.0"><channel><title>${req.url}</title><link>http://example.com/</link>` +
        `<item><guid>${req.url}-1</guid><title>one</title></item></channel></rss>`,
    );
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

// Run alone: tsx scripts/bench/writes.ts
if (import.meta.url === `file://${process.argv[1]}`) {
  const { createTable } = await import('./table.ts');
  const table = createTable();
  await measureWrites(table.row);
  table.print('\nfeedsub bench: writes\n');
}

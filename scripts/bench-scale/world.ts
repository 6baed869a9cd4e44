// make bench-scale, the world: its config file, and 10 applications, 100 endpoints and SUBS_PER_FEED subscriptions of
// each origin feed, made through the project's own actions inside this one process, many per transaction.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createEndpoint } from '../../src/actions/endpoints.ts';
import { createKey } from '../../src/actions/keys.ts';
import { createSubscription } from '../../src/actions/subscriptions.ts';
import { systemClock } from '../../src/clock.ts';
import { loadConfig } from '../../src/config.ts';
import { quietCtx, transaction, type Ctx } from '../../src/context.ts';
import type { Engine, Sql } from '../../src/db/engine.ts';
import type { Store } from './store.ts';

export const APPS = 10;
export const ENDPOINTS_PER_APP = 10;
export const SUBS_PER_FEED = 10;
/** The share of feeds the changed round changes (one new entry each). */
export const CHANGED_SHARE = 0.01;
/** Subscriptions created per transaction while the world is built. */
const PER_TRANSACTION = 5000;
/** Sample of the first application's subscriptions the API runs read (single gets and deep cursors). */
const SAMPLE = 2000;

/** What the API runs work on: the first application's key, endpoints, and a sample of its subscriptions and feeds. */
export type World = {
  dir: string;
  /** The origin's base URL. */
  origin: string;
  configFile: string;
  /** The database, as the bench reaches it. */
  store: Store;
  key: string;
  /** The first application (the one the API runs use). */
  application: string;
  endpoints: string[];
  /** Subscriptions of the first application (id, feed id, feed number), newest first. */
  sample: { id: string; feed: string; n: number }[];
  buildMs: number;
};

/** Whether the origin's round with `change=share` changes feed `n` (as scripts/bench-origin.ts decides it). */
export function changedBy(n: number, share: number): boolean {
  return (n * 7919) % 1000 < share * 1000;
}

/** The bench's config: every poll concurrency on one host (the origin), quotas off, a day between polls (the floor
 *  too: the RSS feeds' hourly entries would otherwise set theirs to 30 minutes) so that `serve`'s own poller stays
 *  idle and every cycle is a `poll --once`, warnings only in the logs. allow_private is the
 *  operator's switch that lets feeds and endpoints live on loopback (the origin and its receivers). The first retry of
 *  a failed delivery waits an hour, so a cycle with failing receivers ends when each event had its first attempt
 *  instead of waiting on the retry timers. `databaseUrl`, when given, is storage.database_url (PostgreSQL). */
export function writeConfig(dir: string, port: number, databaseUrl = ''): string {
  const file = join(dir, 'feedsub.toml');
  const url = databaseUrl === '' ? '' : `database_url = ${JSON.stringify(databaseUrl)}\n`;
  writeFileSync(
    file,
    `[server]\nhost = "127.0.0.1"\nport = ${port}\n\n[storage]\ndata_dir = ${JSON.stringify(join(dir, 'data'))}\n${url}\n` +
      `[network]\nallow_private = true\n\n` +
      `[poll]\ninterval_seconds = 86400\nmin_interval_seconds = 86400\nconcurrency = 16\nper_host_concurrency = 16\n\n` +
      `[delivery]\nretry_schedule_seconds = [3600, 3600]\n\n` +
      `[log]\nlevel = "warn"\nformat = "json"\n\n` +
      `[quotas]\nendpoints_per_application = 0\nsubscriptions_per_application = 0\nnew_feed_urls_per_hour = 0\n` +
      `test_events_per_minute = 0\napi_requests_per_second = 0\n`,
  );
  return file;
}

/** Builds the world for `feeds` origin feeds at `base`: feed n is subscribed by `subsPerFeed` (at most 10) endpoints,
 *  each of an application chosen by the endpoint, so every application holds about a tenth of the subscriptions. Then
 *  every feed is made due in a day, so `serve`'s poller leaves the cycles to `poll --once`. */
export async function buildWorld(
  dir: string,
  configFile: string,
  store: Store,
  base: string,
  feeds: number,
  subsPerFeed = SUBS_PER_FEED,
): Promise<World> {
  const t = performance.now();
  const config = loadConfig({ file: configFile, env: {} });
  const ctx = quietCtx(await store.open(), systemClock, config);
  try {
    const apps: { id: string; key: string }[] = [];
    for (let a = 0; a < APPS; a++) {
      const made = await createKey(ctx, `app-${a}`, 'bench');
      apps.push({ id: made.application.id, key: made.key });
    }
    const endpoints: { id: string; app: string }[] = [];
    for (let e = 0; e < APPS * ENDPOINTS_PER_APP; e++) {
      const app = apps[Math.floor(e / ENDPOINTS_PER_APP)]!;
      // Receiver n of the origin: POST /_fail makes a share of them answer 503 (the failing-endpoints cycle).
      const made = await createEndpoint(ctx, app.id, {
        title: `endpoint ${e}`,
        url: `${base}/hook/${e}`,
      });
      endpoints.push({ id: made.id, app: app.id });
    }
    const sample: World['sample'] = [];
    for (let from = 0; from < feeds; from += PER_TRANSACTION / subsPerFeed) {
      const to = Math.min(feeds, from + PER_TRANSACTION / subsPerFeed);
      await transaction(ctx, async (tx) => {
        const inTx = nestedIn(tx);
        for (let n = from; n < to; n++)
          for (let k = 0; k < subsPerFeed; k++) {
            // 7k mod 100 differs for k = 0…9: ten distinct endpoints per feed, spread over the applications.
            const endpoint = endpoints[(n + 7 * k) % endpoints.length]!;
            const made = await createSubscription(inTx, endpoint.app, {
              endpoint: endpoint.id,
              url: `${base}/feeds/${n}.xml`,
              metadata: { feed: n, k },
            });
            // The sample (where the API runs create subscriptions) avoids the feeds the changed round changes, so that
            // round's events are exactly the world's.
            const sampled = n % 7 === 0 && !changedBy(n, CHANGED_SHARE);
            if (endpoint.app === apps[0]!.id && sample.length < SAMPLE && sampled)
              sample.push({ id: made.id, feed: made.feed, n });
          }
      });
    }
    const later = new Date(Date.now() + 86_400_000).toISOString();
    await ctx.db.run('UPDATE feeds SET next_poll_at = ?', [later]);
    return {
      dir,
      origin: base,
      configFile,
      store,
      key: apps[0]!.key,
      application: apps[0]!.id,
      endpoints: endpoints.filter((e) => e.app === apps[0]!.id).map((e) => e.id),
      sample: sample.reverse(),
      buildMs: performance.now() - t,
    };
  } finally {
    await ctx.store.close();
  }
}

/** The context of the transaction `tx` as an action that opens a transaction of its own sees it: that one is a
 *  savepoint of `tx` (as better-sqlite3 nests a transaction), so the action runs as it does alone, many to a commit. */
function nestedIn(tx: Ctx): Ctx {
  const sql: Sql = tx.db;
  const store: Engine = {
    ...sql,
    write: (fn) => sql.savepoint(fn),
    read: (fn) => fn(sql),
    close: async () => {}, // the engine under `tx` is closed by its owner
  };
  return { ...tx, store };
}

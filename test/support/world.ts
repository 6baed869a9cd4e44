// Test world: a fresh database (SQLite from schema.sql; PostgreSQL from schema-postgres.sql when FEEDSUB_TEST_ENGINE is
// postgres, on the test process's own server), a context with an injectable clock, the HTTP app, keys.
import { createFilterCache } from '../../src/feed/filter/cache.ts';
import type { Hono } from 'hono';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKey } from '../../src/actions/keys.ts';
import { manualClock } from '../../src/clock.ts';
import { newLastUses, newPollCounts, soloNode, type Ctx } from '../../src/context.ts';
import { defaultConfig, withConfig, type Config } from '../../src/config.ts';
import { openDatabase } from '../../src/db/open.ts';
import { SqliteEngine } from '../../src/db/sqlite-engine.ts';
import type { Engine, Sql } from '../../src/db/engine.ts';
import { preparePostgresSchema } from '../../src/db/postgres-schema.ts';
import { readPostgresSchemaSql } from '../../src/assets.ts';
import { sharedPostgres, testEngine } from './postgres.ts';
import { createHttpApp } from '../../src/http/server.ts';
import { silentLogger } from '../../src/log.ts';
import { openapiChecker } from './openapi-check.ts';

export type World = {
  ctx: Ctx;
  app: Hono;
  clock: ReturnType<typeof manualClock>;
  dir: string;
  nudges: { poller: number; deliverer: number; backfiller: number };
  /** A new application with a key; returns the key and the application id. */
  key(appName?: string): Promise<{ key: string; applicationId: string }>;
  /** app.request with JSON body and the key in Authorization. */
  call(
    method: string,
    path: string,
    opts?: { key?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<{ status: number; body: any; text: string; headers: Headers }>;
  close(): Promise<void>;
};

/** Builds a world; `patch` overrides config sections (network.allow_private is true by default for loopback tests). */
export function makeWorld(
  patch: Parameters<typeof withConfig>[1] = {},
  start = '2026-01-01T00:00:00.000Z',
): World {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-test-'));
  const config: Config = withConfig(
    withConfig(defaultConfig(), { network: { allow_private: true }, storage: { data_dir: dir } }),
    patch,
  );
  const store =
    testEngineKind() === 'postgres'
      ? postgresWorldEngine()
      : new SqliteEngine(openDatabase(join(dir, 'feedsub.db')));
  const clock = manualClock(start);
  const nudges = { poller: 0, deliverer: 0, backfiller: 0 };
  const ctx: Ctx = {
    store,
    db: store,
    clock,
    config,
    node: soloNode(),
    nudgePoller: () => {
      nudges.poller++;
    },
    nudgeDeliverer: () => {
      nudges.deliverer++;
    },
    nudgeBackfiller: () => {
      nudges.backfiller++;
    },
    lastUses: newLastUses(),
    pollCounts: newPollCounts(),
    filters: createFilterCache(),
    filtered: { blocked: 0, not_kept: 0 },
  };
  const app = createHttpApp(ctx, silentLogger);
  let counter = 0;
  return {
    ctx,
    app,
    clock,
    dir,
    nudges,
    async key(appName = `app-${++counter}`) {
      const made = await createKey(ctx, appName, null);
      return { key: made.key, applicationId: made.application.id };
    },
    async call(method, path, opts = {}) {
      const headers: Record<string, string> = {
        ...(opts.key ? { authorization: opts.key } : {}),
        ...opts.headers,
      };
      let body: string | undefined;
      if (opts.body !== undefined) {
        body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await app.request(path, {
        method,
        headers,
        ...(body !== undefined ? { body } : {}),
      });
      const text = await res.text();
      // Every API response a test sees must be one the OpenAPI document describes.
      if (path.startsWith('/v1/'))
        openapiChecker().check(method, path, { status: res.status, headers: res.headers, text });
      let parsed: unknown = undefined;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      return { status: res.status, body: parsed, text, headers: res.headers };
    },
    async close() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Options for a test of what only the SQLite engine does (its pragmas, its planner, its write lock, its files): it is
 *  skipped, saying so, when the suites run on PostgreSQL, whose own behaviour in those places has tests of its own. */
export const sqliteOnly = {
  skip: process.env.FEEDSUB_TEST_ENGINE === 'postgres' ? 'tests the SQLite engine itself' : false,
} as const;

/** The engine the suites run on: FEEDSUB_TEST_ENGINE (sqlite, the default, or postgres). */
export function testEngineKind(): 'sqlite' | 'postgres' {
  const kind = process.env.FEEDSUB_TEST_ENGINE ?? 'sqlite';
  if (kind !== 'sqlite' && kind !== 'postgres')
    throw new Error(`FEEDSUB_TEST_ENGINE: expected sqlite or postgres, got ${kind}`);
  return kind;
}

/** An engine on a new database of the test process's PostgreSQL server, usable at once: makeWorld stays synchronous,
 *  so every statement waits for the database and its schema first. */
function postgresWorldEngine(): Engine {
  const ready = (async () => {
    const engine = testEngine(await (await sharedPostgres()).newDatabase());
    await preparePostgresSchema(engine, readPostgresSchemaSql());
    return engine;
  })();
  // A failure to start surfaces at the first statement, not as an unhandled rejection.
  ready.catch(() => {});
  const on = async <T>(fn: (engine: Engine) => Promise<T>): Promise<T> => fn(await ready);
  return {
    dialect: 'postgres',
    all: (text, params) => on((e) => e.all(text, params)),
    get: (text, params) => on((e) => e.get(text, params)),
    column: (text, params) => on((e) => e.column(text, params)),
    value: (text, params) => on((e) => e.value(text, params)),
    run: (text, params) => on((e) => e.run(text, params)),
    exec: (script) => on((e) => e.exec(script)),
    savepoint: <T>(fn: (sql: Sql) => Promise<T>) => on((e) => e.savepoint(fn)),
    write: <T>(fn: (sql: Sql) => Promise<T>) => on((e) => e.write(fn)),
    read: <T>(fn: (sql: Sql) => Promise<T>) => on((e) => e.read(fn)),
    close: () => on((e) => e.close()),
  };
}

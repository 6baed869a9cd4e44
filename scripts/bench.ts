// make bench: feedsub against a local origin of N feeds and a local receiver (separate process), beside the raw limits,
// then the real `feedsub serve` among hostile or failing WebSub hubs and hostile peers, tracing entries among a full
// churn hold, and its memory. The phases live under bench/; this file starts the origin, runs them in order (printing
// each one's time as it ends) and prints the table and the ratios to the raw limits.
// BENCH_PHASES=polls runs only the poll phases; BENCH_PHASES=core the polls and delivery. BENCH_ENGINES (default "sqlite,postgres") picks the engines: on SQLite every phase runs; on PostgreSQL the phases
// whose figures the engine decides (polls, delivery, bytes written) run again on a durable server the bench starts
// (scripts/bench/postgres.ts) and stops by its PID, their rows labelled "PostgreSQL: " beside the SQLite ones.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { measureBackfill } from './bench/backfill.ts';
import { measureHostileTenant } from './bench/budget.ts';
import { measureBounds } from './bench/churn.ts';
import { measureDelivery, measureLatency, warmUpDeliveries } from './bench/delivery.ts';
import { measureApiWhileParsing, measureFilterStall, measureIsolation } from './bench/isolation.ts';
import { measureServeMemory } from './bench/memory.ts';
import { measureStages } from './bench/stages.ts';
import { measureTrace } from './bench/trace.ts';
import { measurePolls, queueRounds } from './bench/polls.ts';
import { measurePushLatency } from './bench/push.ts';
import { reportRawPosts } from './bench/raw.ts';
import { measureWebSub } from './bench/websub.ts';
import { measureWrites } from './bench/writes.ts';
import { requirePostgres, serverRow, startBenchPostgres } from './bench/postgres.ts';
import { CONCURRENCY, FEEDS } from './bench/settings.ts';
import { setUp, tearDown, type Bench, type BenchEngine } from './bench/setup.ts';
import { createTable, onPostgres } from './bench/table.ts';
import type { Row } from './bench/table.ts';

/** BENCH_PHASES=polls runs the poll phases alone (on BENCH_ENGINES), for a quick look at the poll paths. */
const POLLS_ONLY = process.env.BENCH_PHASES === 'polls';
/** BENCH_PHASES=core runs the polls and delivery (latency included) alone, on BENCH_ENGINES. */
const CORE_ONLY = process.env.BENCH_PHASES === 'core';
const ENGINES = (process.env.BENCH_ENGINES ?? 'sqlite,postgres')
  .split(',')
  .map((e) => e.trim())
  .filter((e) => e !== '');

async function main(): Promise<void> {
  const unknown = ENGINES.filter((e) => e !== 'sqlite' && e !== 'postgres');
  if (ENGINES.length === 0 || unknown.length > 0)
    throw new Error(
      `bench: BENCH_ENGINES names sqlite, postgres or both, comma-separated (not ${JSON.stringify(process.env.BENCH_ENGINES)})`,
    );
  if (ENGINES.includes('postgres')) requirePostgres('bench');
  const origin = spawn(
    process.execPath,
    ['--import', 'tsx', new URL('./bench-origin.ts', import.meta.url).pathname, String(FEEDS)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<string>((resolve) =>
    createInterface({ input: origin.stdout! }).once('line', resolve),
  );
  const base = `http://127.0.0.1:${port.trim()}`;
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-bench-'));
  const table = createTable();
  const phases: string[] = [];
  try {
    await run(base, dir, table.row, phases);
  } finally {
    origin.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
  table.print(
    `\nfeedsub bench: ${FEEDS} feeds (~50 KB each, half RSS, half Atom), poll concurrency ${CONCURRENCY}, engines ${ENGINES.join(', ')}, node ${process.version}, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  );
  console.log(`\nphases: ${phases.join(', ')}`);
}

/** Runs `phase`, then notes (and prints at once, as progress) how long it took. */
async function timed<T>(phases: string[], name: string, phase: () => Promise<T>): Promise<T> {
  const t = performance.now();
  const value = await phase();
  const line = `${name} ${((performance.now() - t) / 1000).toFixed(1)} s`;
  phases.push(line);
  console.error(`bench: ${line} (load ${loadavg()[0]!.toFixed(2)})`);
  return value;
}

/** Every phase in order, each adding its rows: the polls and delivery on each engine, then the phases on SQLite only,
 *  the daemon phases (each its own `feedsub serve`) last. */
async function run(base: string, dir: string, row: Row, phases: string[]): Promise<void> {
  if (ENGINES.includes('sqlite')) {
    const b = await setUp(base, dir, row);
    await core(b, phases, '');
    await tearDown(b);
  }
  if (ENGINES.includes('postgres')) await onPostgresServer(base, dir, row, phases);
  if (ENGINES.includes('sqlite') && !POLLS_ONLY && !CORE_ONLY)
    await sqliteOnly(base, dir, row, phases);
  row(
    'peak RSS',
    `${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`,
    'whole bench process',
  );
}

/** The polls and delivery on the bench's feedsub `b`; `engine` names the engine in the phases' names. */
async function core(b: Bench, phases: string[], engine: string): Promise<void> {
  const { changed, filtered, all } = await timed(phases, `${engine}polls`, () => measurePolls(b));
  // Where a changed document's time goes: one more round, profiled, last, so that its events wait behind nothing.
  const stages = (): Promise<void> => timed(phases, `${engine}stages`, () => measureStages(b));
  if (POLLS_ONLY) return stages();
  // Warm-up, untimed: the deliverer loop delivers the events of the rounds so far, so that the timed trials below
  // start with the delivery path compiled; the raw POST loop gets as many requests before its trials.
  const warmUp = changed.events + filtered.events + all.events;
  await timed(phases, `${engine}delivery`, async () => {
    await warmUpDeliveries(b, warmUp);
    const queued = await queueRounds(b);
    const trials = await measureDelivery(b, queued, warmUp);
    reportRawPosts(b.row, trials);
    await measureLatency(b);
  });
  await stages();
}

/** The server's row, the polls and delivery on a new database of a durable server, and the bytes written on another;
 *  the server is stopped (by its PID) however they end. */
async function onPostgresServer(
  base: string,
  dir: string,
  row: Row,
  phases: string[],
): Promise<void> {
  const server = await timed(phases, 'PostgreSQL: server start', startBenchPostgres);
  try {
    const pgRow = onPostgres(row);
    const engine: BenchEngine = { kind: 'postgres', server };
    const b = await setUp(base, dir, pgRow, engine);
    try {
      await serverRow(b.ctx.db, row);
      await core(b, phases, 'PostgreSQL: ');
    } finally {
      await tearDown(b);
    }
    if (!POLLS_ONLY && !CORE_ONLY)
      await timed(phases, 'PostgreSQL: writes', () => measureWrites(pgRow, server));
  } finally {
    await server.stop();
  }
}

/** The phases that run on SQLite only: each starts an app or a `feedsub serve` of its own. */
async function sqliteOnly(base: string, dir: string, row: Row, phases: string[]): Promise<void> {
  // WebSub: a hub's publication → the webhook, on its own app
  await timed(phases, 'push', () => measurePushLatency(row));
  // WebSub on the real `feedsub serve`: push latency, failing hubs' fallback polls, hostile hubs' 14 MiB pushes
  await timed(phases, 'websub', () => measureWebSub(dir, row));
  // bounds: an hour of churning feeds, a 200,000-entry release
  await timed(phases, 'bounds', () => measureBounds(dir, row));
  // bytes written per created subscription and per 304 poll
  await timed(phases, 'writes', () => measureWrites(row));
  await timed(phases, 'isolation', () => measureIsolation(dir, row));
  // one hostile tenant's growth, without and with a storage budget
  await timed(phases, 'storage budget', () => measureHostileTenant(dir, row));
  await timed(phases, 'API while parsing', () => measureApiWhileParsing(dir, row));
  await timed(phases, 'filter stall', () => measureFilterStall(dir, row));
  // the trace among a full churn hold, and /healthz while traces run
  await timed(phases, 'trace', () => measureTrace(dir, row));
  // the event loop while 10 clients create and delete subscriptions with a backfill of 100 entries of ~60 KiB
  await timed(phases, 'backfill', () => measureBackfill(dir, row));
  await timed(phases, 'serve memory', () => measureServeMemory(base, dir, row));
  // What a service runs (make build), when it was built: without tsx's loader in every thread.
  const built = new URL('../dist/feedsub', import.meta.url).pathname;
  if (existsSync(built))
    await timed(phases, 'serve memory (built)', () => measureServeMemory(base, dir, row, built));
}

await main();
